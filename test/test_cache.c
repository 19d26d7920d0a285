/* Calibration records: round trips of one to four records, strict rejection of every
 * malformed or untrusted file, atomic writes that leave nothing behind, the lookup
 * (exact set, consistent superset), insertion and the retry schedule. */
#define _GNU_SOURCE
#include "cache.h"
#include "estimate.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[256];
static char err[512];

/* A fresh directory per test, with path naming "cache" inside it. */
static void make_dir(void)
{
	strcpy(dir, "/tmp/test_cache.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
	snprintf(path, sizeof path, "%s/cache", dir);
}

static void remove_tree(int parent, const char *name, int depth)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && depth < 4) {
		fchmod(fd, 0700); /* a test may have taken its write bit */
		DIR *d = fdopendir(fd);
		struct dirent *e;
		while (d && (e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (unlinkat(fd, e->d_name, 0) != 0 && errno == EISDIR)
				remove_tree(fd, e->d_name, depth + 1);
		}
		if (d)
			closedir(d);
		else
			close(fd);
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(parent, name, AT_REMOVEDIR);
}

static void remove_dir(void)
{
	remove_tree(AT_FDCWD, dir, 0);
	struct stat st;
	CHECK(stat(dir, &st) != 0);
}

static int entries_in(const char *d)
{
	int n = 0;
	DIR *h = opendir(d);
	struct dirent *e;
	while (h && (e = readdir(h)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	if (h)
		closedir(h);
	return n;
}

static bool one_line(const char *s)
{
	return s[0] != '\0' && strchr(s, '\n') == NULL && strchr(s, '\r') == NULL;
}

static struct cache_record sample(void)
{
	struct cache_record r = {
		.boot_id = "0f8e4c2a-6b1d-4e5f-9a3c-7d2b1e0f4a6c",
		.boot_wall_ns = 1795757000123456789ull,
		.cpu_signature = 0xb00f21,
		.counter_invariant = 1,
		.estimate_verdict = ESTIMATE_CONSISTENT,
		.max_shift_ticks = 399,
		.rate_millihz = 2096008000036ull,
		.costs = {{.kernel_ps = 23400, .syscall_ps = 412000, .fenced_ps = 27600, .unfenced_ps = 11800,
			   .build = 18000000000000000001ull, .fenced_plan = 5, .clocksource = "tsc"}},
	};
	cpu_mask_add(&r.cpus, 0);
	cpu_mask_add(&r.cpus, 1);
	return r;
}

static struct cache_file one(struct cache_record r)
{
	struct cache_file f = {.count = 1};
	f.record[0] = r;
	return f;
}

static char filebuf[CACHE_MAX_SIZE + 1];
static const struct safefile_trust mine = {.max_size = CACHE_MAX_SIZE};

static struct safefile_trust my_trust(void)
{
	struct safefile_trust t = mine;
	t.owner = geteuid();
	return t;
}

static int write_file(const char *p, const struct cache_file *f)
{
	err[0] = '\0';
	return cache_write(p, f, false, filebuf, sizeof filebuf, err, sizeof err);
}

static int read_file(const char *p, struct cache_file *out)
{
	struct safefile_trust t = my_trust();
	err[0] = '\0';
	return cache_read(p, &t, filebuf, sizeof filebuf, out, err, sizeof err);
}

static void check_same(const struct cache_record *a, const struct cache_record *b)
{
	CHECK(strcmp(a->boot_id, b->boot_id) == 0);
	CHECK_EQ_U64(a->cpu_signature, b->cpu_signature);
	CHECK(cpu_mask_equal(&a->cpus, &b->cpus));
	CHECK_EQ_U64(a->estimate_verdict, b->estimate_verdict);
	CHECK_EQ_U64(a->max_shift_ticks, b->max_shift_ticks);
	CHECK_EQ_U64(a->rate_millihz, b->rate_millihz);
	CHECK_EQ_U64(a->retry_at_ns, b->retry_at_ns);
	CHECK_EQ_U64(a->retry_interval_ms, b->retry_interval_ms);
	for (int i = 0; i < CACHE_COSTS_MAX; i++) {
		CHECK_EQ_U64(a->costs[i].kernel_ps, b->costs[i].kernel_ps);
		CHECK_EQ_U64(a->costs[i].syscall_ps, b->costs[i].syscall_ps);
		CHECK_EQ_U64(a->costs[i].fenced_ps, b->costs[i].fenced_ps);
		CHECK_EQ_U64(a->costs[i].unfenced_ps, b->costs[i].unfenced_ps);
		CHECK_EQ_U64(a->costs[i].build, b->costs[i].build);
		CHECK_EQ_U64(a->costs[i].fenced_plan, b->costs[i].fenced_plan);
	}
}

/* Writes exactly these bytes, mode 0600. */
static void write_bytes(const char *p, const char *data, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, len) == (ssize_t)len);
	CHECK(fchmod(fd, 0600) == 0);
	close(fd);
}

/* body followed by a checksum line that matches it: the file is well-formed but for
 * whatever the body gets wrong. */
static void write_with_checksum(const char *p, const char *body)
{
	char buf[2 * CACHE_MAX_SIZE];
	int n = snprintf(buf, sizeof buf, "%schecksum=%016llx\n", body,
			 (unsigned long long)fnv1a64(body, strlen(body)));
	write_bytes(p, buf, (size_t)n);
}

static void round_trip(void)
{
	make_dir();
	struct cache_file in = one(sample()), out;
	CHECK(write_file(path, &in) == 0);
	memset(&out, 0x55, sizeof out);
	CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	CHECK_EQ_U64(out.count, 1);
	check_same(&in.record[0], &out.record[0]);
	CHECK(err[0] == '\0');

	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK_EQ_U64(st.st_mode & 07777, 0600);
	CHECK_EQ_U64(st.st_uid, geteuid());
	CHECK_EQ_U64(entries_in(dir), 1); /* no temporary file left */

	/* Four records, each different, in order; world-readable for the machine record. */
	in.count = CACHE_RECORDS_MAX;
	for (int i = 1; i < CACHE_RECORDS_MAX; i++) {
		in.record[i] = sample();
		cpu_mask_add(&in.record[i].cpus, (unsigned)(100 * i));
		in.record[i].estimate_verdict = ESTIMATE_INCONCLUSIVE;
		in.record[i].retry_at_ns = 1000u * (unsigned)i;
		in.record[i].retry_interval_ms = CACHE_RETRY_FIRST_MS;
	}
	CHECK(cache_write(path, &in, true, filebuf, sizeof filebuf, err, sizeof err) == 0);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ_U64(st.st_mode & 07777, 0644);
	CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	CHECK_EQ_U64(out.count, CACHE_RECORDS_MAX);
	for (int i = 0; i < CACHE_RECORDS_MAX; i++)
		check_same(&in.record[i], &out.record[i]);
	CHECK_EQ_U64(entries_in(dir), 1);
	remove_dir();
}

static void round_trip_extremes(void)
{
	make_dir();
	struct cache_record r = {0};
	memset(r.boot_id, 'b', sizeof r.boot_id - 1);
	r.cpu_signature = UINT32_MAX;
	memset(&r.cpus, 0xff, sizeof r.cpus); /* every CPU: 256 hex digits */
	r.estimate_verdict = ESTIMATE_INCONCLUSIVE;
	r.max_shift_ticks = UINT64_MAX;
	r.rate_millihz = UINT64_MAX;
	r.retry_at_ns = UINT64_MAX;
	r.retry_interval_ms = CACHE_RETRY_MAX_MS;
	struct cache_file in = {.count = CACHE_RECORDS_MAX}, out;
	for (int i = 0; i < CACHE_RECORDS_MAX; i++)
		in.record[i] = r;
	CHECK(write_file(path, &in) == 0); /* the largest file fits the reader's limit */
	CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	check_same(&r, &out.record[3]);

	/* The highest CPU alone; zeros. */
	r = sample();
	memset(&r.cpus, 0, sizeof r.cpus);
	cpu_mask_add(&r.cpus, CPU_MASK_BITS - 1);
	r.max_shift_ticks = 0;
	r.rate_millihz = 0;
	in = one(r);
	CHECK(write_file(path, &in) == 0);
	CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	check_same(&r, &out.record[0]);
	remove_dir();
}

/* Costs are of the clocksource they were measured under: not used under another; the
 * same build's under two clocksources are kept side by side; a set measured where the
 * clocksource was unknown ("") is used only where it is unknown too; a name with a
 * space is not a record. */
static void costs_of_a_clocksource(void)
{
	struct cache_record r = sample();
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "tsc") != NULL);
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "kvm-clock") == NULL);
	/* A caller that cannot tell its clocksource takes the newest set of its build. */
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "") == &r.costs[0]);
	struct cache_costs kvm = r.costs[0];
	kvm.kernel_ps = 26000;
	snprintf(kvm.clocksource, sizeof kvm.clocksource, "kvm-clock");
	cache_costs_keep(&r, &kvm);
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "kvm-clock")->kernel_ps == 26000);
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "tsc")->kernel_ps == 23400);
	struct cache_costs unknown = kvm;
	unknown.clocksource[0] = '\0';
	cache_costs_keep(&r, &unknown); /* a third key: the oldest (tsc) goes */
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "") && !cache_costs_of(&r, 18000000000000000001ull, "tsc"));
	/* Through the file, with the clocksource kept. */
	struct cache_file f = one(r), back;
	char buf[CACHE_MAX_SIZE + 1], why[160];
	CHECK(cache_format(&f, buf, sizeof buf, why, sizeof why) > 0);
	CHECK(strstr(buf, "\ncost_clocksource=\n") && strstr(buf, "\ncost_clocksource_2=kvm-clock\n"));
	CHECK(cache_parse(buf, strlen(buf), &back, why, sizeof why) == CACHE_OK);
	CHECK(cache_costs_of(&back.record[0], 18000000000000000001ull, "kvm-clock") != NULL);
	/* The longest hyperv name fits; a space does not. */
	snprintf(r.costs[0].clocksource, sizeof r.costs[0].clocksource, "hyperv_clocksource_tsc_page");
	CHECK(cache_record_check(&r, why, sizeof why) == 0);
	snprintf(r.costs[0].clocksource, sizeof r.costs[0].clocksource, "kvm clock");
	CHECK(cache_record_check(&r, why, sizeof why) == -1 && strstr(why, "cost_clocksource"));
}

/* Two builds' costs side by side: each keeps its own, a third evicts the older, and a
 * record for the same CPU set replaced in the cache keeps the other build's costs. */
static void costs_of_two_builds(void)
{
	struct cache_record r = sample();
	struct cache_costs musl = {.kernel_ps = 30000, .syscall_ps = 400000, .fenced_ps = 29000, .unfenced_ps = 12000,
				   .build = 7, .clocksource = "tsc"};
	cache_costs_keep(&r, &musl);
	CHECK(cache_costs_of(&r, 7, "tsc") && cache_costs_of(&r, 7, "tsc")->kernel_ps == 30000);
	CHECK(cache_costs_of(&r, 18000000000000000001ull, "tsc") != NULL);
	CHECK(cache_costs_of(&r, 8, "tsc") == NULL);
	struct cache_costs again = musl;
	again.kernel_ps = 31000;
	cache_costs_keep(&r, &again); /* the same build: replaced, the other kept */
	CHECK(cache_costs_of(&r, 7, "tsc")->kernel_ps == 31000 && cache_costs_of(&r, 18000000000000000001ull, "tsc"));
	struct cache_costs third = musl;
	third.build = 9;
	cache_costs_keep(&r, &third); /* a third: the oldest (the glibc one) goes */
	CHECK(cache_costs_of(&r, 9, "tsc") && cache_costs_of(&r, 7, "tsc") && !cache_costs_of(&r, 18000000000000000001ull, "tsc"));
	/* Round trip through the file. */
	struct cache_file f = one(r), back;
	char buf[CACHE_MAX_SIZE + 1], why[160];
	int n = cache_format(&f, buf, sizeof buf, why, sizeof why);
	CHECK(n > 0 && cache_parse(buf, (size_t)n, &back, why, sizeof why) == CACHE_OK);
	CHECK(cache_costs_of(&back.record[0], 9, "tsc") && cache_costs_of(&back.record[0], 7, "tsc"));
	/* The same CPU set written again by the other build: both builds' costs stay. */
	struct cache_file cache = one(sample());
	struct cache_record other = sample();
	memset(other.costs, 0, sizeof other.costs);
	cache_costs_keep(&other, &musl);
	cache_insert(&cache, &other);
	CHECK_EQ_U64(cache.count, 1);
	CHECK(cache_costs_of(&cache.record[0], 7, "tsc") && cache_costs_of(&cache.record[0], 18000000000000000001ull, "tsc"));
	CHECK_EQ_U64(cache.record[0].costs[0].build, 7); /* the newest first */
}

/* A build's complete sets, newest first; an incomplete set, another build's, a full out, or
 * no record give fewer. */
static void costs_of_a_build_newest_first(void)
{
	struct cache_record r = sample();
	const struct cache_costs *out[CACHE_COSTS_MAX];
	uint64_t build = 18000000000000000001ull;
	CHECK_EQ_U64(cache_costs_of_build(&r, build, out, CACHE_COSTS_MAX), 1);
	CHECK(out[0] == &r.costs[0]);
	struct cache_costs kvm = r.costs[0];
	kvm.kernel_ps = 26000;
	strcpy(kvm.clocksource, "kvm-clock");
	cache_costs_keep(&r, &kvm);
	CHECK_EQ_U64(cache_costs_of_build(&r, build, out, CACHE_COSTS_MAX), 2);
	CHECK(out[0]->kernel_ps == 26000 && out[1]->kernel_ps == 23400);
	CHECK_EQ_U64(cache_costs_of_build(&r, build, out, 1), 1);
	CHECK_EQ_U64(cache_costs_of_build(&r, 7, out, CACHE_COSTS_MAX), 0);
	r.costs[1].fenced_ps = 0; /* not all four measured */
	CHECK_EQ_U64(cache_costs_of_build(&r, build, out, CACHE_COSTS_MAX), 1);
	CHECK_EQ_U64(cache_costs_of_build(NULL, build, out, CACHE_COSTS_MAX), 0);
}

static void format_is_the_documented_text(void)
{
	struct cache_file f = one(sample());
	char buf[CACHE_MAX_SIZE + 1], why[160];
	int n = cache_format(&f, buf, sizeof buf, why, sizeof why);
	const char *expect_body = "tscshim-cache 9\n"
				  "boot_id=0f8e4c2a-6b1d-4e5f-9a3c-7d2b1e0f4a6c\n"
				  "boot_wall_ns=1795757000123456789\n"
				  "cpu_signature=11538209\n"
				  "counter_invariant=1\n"
				  "cpus=3\n"
				  "all_cpus=0\n"
				  "vmclock=0\n"
				  "estimate_verdict=0\n"
				  "max_shift_ticks=399\n"
				  "rate_millihz=2096008000036\n"
				  "retry_at_ns=0\n"
				  "retry_interval_ms=0\n"
				  "kernel_ps=23400\n"
				  "syscall_ps=412000\n"
				  "fenced_ps=27600\n"
				  "unfenced_ps=11800\n"
				  "cost_build=18000000000000000001\n"
				  "fenced_plan=5\n"
				  "cost_clocksource=tsc\n"
				  "kernel_ps_2=0\n"
				  "syscall_ps_2=0\n"
				  "fenced_ps_2=0\n"
				  "unfenced_ps_2=0\n"
				  "cost_build_2=0\n"
				  "fenced_plan_2=0\n"
				  "cost_clocksource_2=\n";
	size_t body = strlen(expect_body);
	CHECK(n > 0 && (size_t)n == strlen(buf));
	CHECK(strncmp(buf, expect_body, body) == 0);
	char expect_sum[32];
	snprintf(expect_sum, sizeof expect_sum, "checksum=%016llx\n",
		 (unsigned long long)fnv1a64(expect_body, body));
	CHECK(strcmp(buf + body, expect_sum) == 0);
	CHECK(cache_format(&f, buf, 64, why, sizeof why) == -1);
	f.count = 0;
	CHECK(cache_format(&f, buf, sizeof buf, why, sizeof why) == -1);
	f.count = CACHE_RECORDS_MAX + 1;
	CHECK(cache_format(&f, buf, sizeof buf, why, sizeof why) == -1);
}

static void missing_file(void)
{
	make_dir();
	struct cache_file out;
	CHECK_EQ_U64(read_file(path, &out), CACHE_MISSING);
	CHECK(one_line(err) && strstr(err, path) != NULL);
	/* A component that is not a directory: missing as well. */
	write_bytes(path, "x", 1);
	char below[300];
	snprintf(below, sizeof below, "%s/below", path);
	CHECK_EQ_U64(read_file(below, &out), CACHE_MISSING);
	CHECK(one_line(err));
	/* A path with a newline still gives one line. */
	char odd[300];
	snprintf(odd, sizeof odd, "%s/a\nb", dir);
	CHECK_EQ_U64(read_file(odd, &out), CACHE_MISSING);
	CHECK(one_line(err) && strstr(err, "a?b") != NULL);
	remove_dir();
}

/* Every case must be CORRUPT with a one-line message holding the path and expect. */
static void expect_corrupt_file(const char *expect)
{
	struct cache_file out = one(sample()), before = one(sample());
	CHECK_EQ_U64(read_file(path, &out), CACHE_CORRUPT);
	CHECK(one_line(err) && strstr(err, path) != NULL);
	if (!strstr(err, expect))
		printf("# message '%s' lacks '%s'\n", err, expect);
	CHECK(strstr(err, expect) != NULL);
	CHECK(memcmp(&out, &before, sizeof out) == 0); /* untouched */
}

static void good_body(char *buf, size_t size)
{
	struct cache_file f = one(sample());
	char why[160];
	int n = cache_format(&f, buf, size, why, sizeof why);
	CHECK(n > 0);
	*strstr(buf, "checksum=") = '\0';
}

/* The good body with one line replaced (key given with its '='), or removed (repl NULL),
 * or with extra appended after it. */
static void body_with(char *out, size_t size, const char *key, const char *repl, const char *extra)
{
	char body[CACHE_MAX_SIZE];
	good_body(body, sizeof body);
	char *line = strstr(body, key);
	CHECK(line != NULL);
	if (!line)
		return;
	char *eol = strchr(line, '\n');
	*line = '\0';
	snprintf(out, size, "%s%s%s%s", body, repl ? repl : "", extra ? extra : "", eol + 1);
}

static void corrupt_empty_and_garbage(void)
{
	make_dir();
	write_bytes(path, "", 0);
	expect_corrupt_file("empty");
	write_bytes(path, "hello, world\n", 13);
	expect_corrupt_file("not a tscshim cache");
	write_bytes(path, "\x7f" "ELF\x02\x01\x01\0\0\0", 10);
	expect_corrupt_file("NUL");
	write_bytes(path, "\n\n\n", 3);
	expect_corrupt_file("not a tscshim cache");
	write_bytes(path, "tscshim-cache 9\n", 16);
	expect_corrupt_file("no checksum line");
	write_bytes(path, "tscshim-cache 9", 15);
	expect_corrupt_file("no final newline");
	write_with_checksum(path, "tscshim-cache 03\n");
	expect_corrupt_file("not a tscshim cache");
	write_with_checksum(path, "tscshim-cache 9\n");
	expect_corrupt_file("no record");
	remove_dir();
}

static void corrupt_every_truncation(void)
{
	make_dir();
	struct cache_file f = one(sample());
	f.record[1] = sample();
	f.count = 2;
	char buf[CACHE_MAX_SIZE + 1], why[160];
	int n = cache_format(&f, buf, sizeof buf, why, sizeof why);
	int bad = 0;
	for (int len = 0; len < n; len++) {
		write_bytes(path, buf, (size_t)len);
		struct cache_file out;
		bad += read_file(path, &out) != CACHE_CORRUPT || !one_line(err);
	}
	CHECK_EQ_U64(bad, 0);
	remove_dir();
}

static void corrupt_every_flipped_byte(void)
{
	make_dir();
	struct cache_file f = one(sample());
	char buf[CACHE_MAX_SIZE + 1], why[160];
	int n = cache_format(&f, buf, sizeof buf, why, sizeof why);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			buf[i] ^= (char)(1 << bit);
			write_bytes(path, buf, (size_t)n);
			struct cache_file out;
			/* The version's digit flipped: another build's file, said as such. */
			int rc = read_file(path, &out);
			bad += (rc != CACHE_CORRUPT && rc != CACHE_OTHER_FORMAT) || !one_line(err);
			buf[i] ^= (char)(1 << bit);
		}
	}
	CHECK_EQ_U64(bad, 0);
	/* One digit of a value: caught by the checksum alone. */
	char *digit = strstr(buf, "max_shift_ticks=399") + 16;
	*digit = '4';
	write_bytes(path, buf, (size_t)n);
	expect_corrupt_file("checksum mismatch");
	remove_dir();
}

/* Another version's file is another build's: not corrupt (the shim keeps its own beside
 * it, never rewriting it), and left untouched in *out, its message naming the version. */
static void other_version_is_another_builds(void)
{
	make_dir();
	char body[CACHE_MAX_SIZE];
	good_body(body, sizeof body);
	for (const char *v = "128"; *v; v++) {
		body[14] = *v; /* "tscshim-cache 1", 2, 8 (the previous format) */
		write_with_checksum(path, body);
		struct cache_file out = one(sample()), before = one(sample());
		CHECK_EQ_U64(read_file(path, &out), CACHE_OTHER_FORMAT);
		CHECK(one_line(err) && strstr(err, path) && strstr(err, "another format version (expected 9)"));
		CHECK(memcmp(&out, &before, sizeof out) == 0);
	}
	char sibling[64];
	CHECK(cache_format_sibling("/tmp/tscshim-0.cache", sibling, sizeof sibling) == 0);
	CHECK(strcmp(sibling, "/tmp/tscshim-0.cache.v9") == 0);
	CHECK(cache_format_sibling("/tmp/tscshim-0.cache", sibling, 20) == -1 && sibling[0] == '\0');
	remove_dir();
}

/* The boot by its wall-clock time: the same within 1 ms, another beyond; a time before
 * 2020 (a machine with no clock at boot) never proves it; a key with the boot id read
 * decides by the id alone. */
static void boot_by_wall_clock_time(void)
{
	struct cache_record r = sample();
	struct cache_key key = {.boot_wall_ns = r.boot_wall_ns + 999999, .any_cpu_signature = true};
	CHECK(cache_same_boot(&r, &key));
	key.boot_wall_ns = r.boot_wall_ns - 1000000;
	CHECK(cache_same_boot(&r, &key));
	key.boot_wall_ns = r.boot_wall_ns + 1000001; /* a step of the wall clock since, or another boot */
	CHECK(!cache_same_boot(&r, &key));
	key.boot_wall_ns = r.boot_wall_ns - 3600000000000ull;
	CHECK(!cache_same_boot(&r, &key));
	/* Clockless boots all begin near 1970: equal times prove nothing. */
	struct cache_record clockless = r;
	clockless.boot_wall_ns = 5000;
	key.boot_wall_ns = 5000;
	CHECK(!cache_same_boot(&clockless, &key));
	clockless.boot_wall_ns = 0; /* unknown */
	key.boot_wall_ns = 0;
	CHECK(!cache_same_boot(&clockless, &key));
	/* With the id read, the id decides, whatever the time. */
	key = (struct cache_key){.boot_id = r.boot_id, .boot_wall_ns = 1, .any_cpu_signature = true};
	CHECK(cache_same_boot(&r, &key));
	key.boot_id = "0f8e4c2a-6b1d-4e5f-9a3c-7d2b1e0f4a6d";
	key.boot_wall_ns = r.boot_wall_ns;
	CHECK(!cache_same_boot(&r, &key));
	/* Another CPU, where asked, never. */
	key = (struct cache_key){.boot_wall_ns = r.boot_wall_ns, .cpu_signature = r.cpu_signature + 1};
	CHECK(!cache_same_boot(&r, &key));
	key.cpu_signature = r.cpu_signature;
	CHECK(cache_same_boot(&r, &key));
}

/* A key whose CPU set was not read finds only a consistent record that holds every
 * possible CPU; an inconsistent one, or one of fewer CPUs, needs the set. */
static void find_without_the_cpu_set(void)
{
	struct cache_file f = one(sample());
	struct cache_key key = {.boot_wall_ns = f.record[0].boot_wall_ns, .any_cpu_signature = true};
	CHECK(cache_find(&f, &key) == -1); /* all_cpus 0 */
	f.record[0].all_cpus = 1;
	CHECK(cache_find(&f, &key) == 0);
	f.record[0].estimate_verdict = ESTIMATE_DISJOINT;
	CHECK(cache_find(&f, &key) == -1);
	f.record[0].estimate_verdict = ESTIMATE_CONSISTENT;
	key.boot_wall_ns += 2000000; /* another boot's time */
	CHECK(cache_find(&f, &key) == -1);
}

static void corrupt_fields(void)
{
	static const struct {
		const char *key, *repl, *extra, *expect;
	} cases[] = {
		/* Only the writer's form: every field, once, in the table's order. */
		{"cpus=", "cpus=3\n", "cpus=3\n", "expected the field all_cpus"},
		{"all_cpus=", "all_cpus=2\n", NULL, "all_cpus: out of range"},
		{"vmclock=", "vmclock=2\n", NULL, "vmclock: out of range"},
		{"vmclock=", NULL, NULL, "expected the field vmclock"},
		{"boot_wall_ns=", "boot_wall_ns=-1\n", NULL, "boot_wall_ns: expected a decimal"},
		{"boot_id=", NULL, NULL, "expected the field boot_id"},
		{"cost_clocksource_2=", NULL, NULL, "a record is cut short"},
		{"fenced_plan=", "fenced_plan=8\n", NULL, "fenced_plan"},
		{"cpus=", "cpu_signature=1\n", NULL, "expected the field cpus"},
		{"cpus=", "=3\n", NULL, "expected the field cpus"},
		{"cpus=", "cpus 3\n", NULL, "expected the field cpus"},
		{"cpus=", "\n", NULL, "expected the field cpus"},
		{"cpus=", "CPUS=3\n", NULL, "expected the field cpus"},
		{"cpus=", "cpus =3\n", NULL, "expected the field cpus"},
		{"cpus=", "cpus=0\n", NULL, "cpus: expected a non-empty hex CPU mask"},
		{"cpus=", "cpus=03\n", NULL, "cpus: expected"},
		{"cpus=", "cpus=3F\n", NULL, "cpus: expected"},
		{"cpus=", "cpus=0x3\n", NULL, "cpus: expected"},
		{"cpus=", "cpus=\n", NULL, "cpus: expected"},
		{"cpus=", "cpus=3 \n", NULL, "cpus: expected"},
		{"cpus=", "cpus=1"
			  "0000000000000000000000000000000000000000000000000000000000000000"
			  "0000000000000000000000000000000000000000000000000000000000000000"
			  "0000000000000000000000000000000000000000000000000000000000000000"
			  "0000000000000000000000000000000000000000000000000000000000000000\n",
		 NULL, "cpus: expected"},
		{"max_shift_ticks=", "max_shift_ticks=02\n", NULL, "leading zeros"},
		{"max_shift_ticks=", "max_shift_ticks=+2\n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks=-2\n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks= 2\n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks=2 \n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks=\n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks=0x2\n", NULL, "max_shift_ticks: expected a decimal"},
		{"max_shift_ticks=", "max_shift_ticks=18446744073709551616\n", NULL, "out of range"},
		{"max_shift_ticks=", "max_shift_ticks=99999999999999999999999\n", NULL, "out of range"},
		{"cpu_signature=", "cpu_signature=4294967296\n", NULL, "cpu_signature: out of range"},
		{"estimate_verdict=", "estimate_verdict=6\n", NULL, "estimate_verdict: out of range"},
		{"retry_interval_ms=", "retry_interval_ms=320001\n", NULL, "retry_interval_ms: out of range"},
		{"fenced_ps=", "fenced_ps=1000000001\n", NULL, "fenced_ps: out of range"},
		{"kernel_ps=", "syscall_ps=1\n", NULL, "expected the field kernel_ps"},
		{"boot_id=", "boot_id=\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=a b\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=0123456789012345678901234567890123456789\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=ab\tc\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=a\rb\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=a\033[2Jb\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=caf\xc3\xa9\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=a\x7f\n", NULL, "boot_id: expected"},
	};
	make_dir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char body[CACHE_MAX_SIZE];
		body_with(body, sizeof body, cases[i].key, cases[i].repl, cases[i].extra);
		write_with_checksum(path, body);
		expect_corrupt_file(cases[i].expect);
	}
	/* Five records are one too many; an extra line after the checksum is not allowed. */
	char good[CACHE_MAX_SIZE], five[6 * CACHE_MAX_SIZE];
	good_body(good, sizeof good);
	const char *rec = good + strlen("tscshim-cache 9\n");
	snprintf(five, sizeof five, "tscshim-cache 9\n%s%s%s%s%s", rec, rec, rec, rec, rec);
	write_with_checksum(path, five);
	expect_corrupt_file("more than 4 records");
	struct cache_file in = one(sample());
	char buf[CACHE_MAX_SIZE + 64], why[160];
	int n = cache_format(&in, buf, sizeof buf, why, sizeof why);
	strcpy(buf + n, "x=1\n");
	write_bytes(path, buf, strlen(buf));
	expect_corrupt_file("checksum");
	remove_dir();
}

static void parse_survives_random_input(void)
{
	/* Not a fuzzer, a smoke test: mutated good files and random bytes, every length. */
	struct cache_file f = one(sample()), out;
	char good[CACHE_MAX_SIZE + 1], buf[CACHE_MAX_SIZE + 1], why[64];
	int n = cache_format(&f, good, sizeof good, why, sizeof why);
	uint64_t state = 0x9e3779b97f4a7c15ull;
	int oks = 0, bad_codes = 0;
	for (int round = 0; round < 20000; round++) {
		state = state * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = (size_t)(state >> 33) % (size_t)(n + 8);
		memcpy(buf, good, (size_t)n);
		for (int k = 0; k < 1 + round % 4; k++) {
			state = state * 6364136223846793005ull + 1442695040888963407ull;
			buf[(state >> 20) % (uint64_t)n] = (char)(state >> 56);
		}
		if (round % 7 == 0)
			for (size_t k = 0; k < len; k++)
				buf[k] = (char)(state >> (k % 57));
		int rc = cache_parse(buf, len, &out, why, sizeof why);
		oks += rc == CACHE_OK;
		bad_codes += rc != CACHE_OK && ((rc != CACHE_CORRUPT && rc != CACHE_OTHER_FORMAT) || !one_line(why));
	}
	CHECK_EQ_U64(bad_codes, 0);
	CHECK(oks < 20); /* only where a mutation left the file intact */
	memset(buf, '\n', sizeof buf);
	CHECK_EQ_U64(cache_parse(buf, sizeof buf, &out, why, sizeof why), CACHE_CORRUPT);
	CHECK_EQ_U64(cache_parse(buf, CACHE_MAX_SIZE, &out, why, sizeof why), CACHE_CORRUPT);
}

static void symlink_is_untrusted(void)
{
	make_dir();
	char target[300];
	snprintf(target, sizeof target, "%s/real", dir);
	struct cache_file in = one(sample()), out;
	CHECK(write_file(target, &in) == 0);
	CHECK(read_file(target, &out) == CACHE_OK);
	CHECK(symlink(target, path) == 0);
	CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "symbolic link") && strstr(err, path));

	/* Writing neither follows nor replaces it. */
	in.record[0].rate_millihz = 1;
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err) && strstr(err, "symbolic link") && strstr(err, path));
	struct stat st;
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(read_file(target, &out) == CACHE_OK);
	CHECK_EQ_U64(out.record[0].rate_millihz, sample().rate_millihz);
	CHECK_EQ_U64(entries_in(dir), 2);

	/* A dangling one too: not created through. */
	char dangling[300];
	snprintf(dangling, sizeof dangling, "%s/nowhere", dir);
	CHECK(unlink(path) == 0 && symlink(dangling, path) == 0);
	CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
	CHECK(write_file(path, &in) == -1);
	CHECK(lstat(dangling, &st) != 0);
	remove_dir();
}

static void directory_is_untrusted_and_not_replaced(void)
{
	make_dir();
	CHECK(mkdir(path, 0700) == 0);
	struct cache_file in = one(sample()), out;
	CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "directory") && strstr(err, path));
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err) && strstr(err, "directory") && strstr(err, path));
	struct stat st;
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ_U64(entries_in(dir), 1);
	CHECK_EQ_U64(entries_in(path), 0);
	remove_dir();
}

static void writable_by_others_is_untrusted(void)
{
	make_dir();
	struct cache_file in = one(sample()), out;
	static const mode_t modes[] = {0666, 0620, 0602, 0622};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		CHECK(write_file(path, &in) == 0);
		CHECK(chmod(path, modes[i]) == 0);
		CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
		CHECK(one_line(err) && strstr(err, "writable by group or others"));
	}
	/* Readable by others is fine: nothing secret, only trust matters. */
	CHECK(chmod(path, 0644) == 0);
	CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	remove_dir();
}

static void other_owner_is_untrusted(void)
{
	make_dir();
	struct cache_file in = one(sample()), out;
	CHECK(write_file(path, &in) == 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (geteuid() == 0) {
		CHECK(fchown(fd, 65534, (gid_t)-1) == 0);
		CHECK(fchmod(fd, 0600) == 0); /* chown may clear bits; keep it otherwise fine */
		CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
		CHECK(one_line(err) && strstr(err, "owned by uid 65534"));
		/* ... and replaced by ours where the directory allows. */
		CHECK(write_file(path, &in) == 0);
		CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	} else {
		uid_t other = geteuid() == 65534 ? 65533 : 65534;
		printf("# skipped: not root, cannot give a file to uid %u; checking that it is impossible\n",
		       (unsigned)other);
		CHECK(fchown(fd, other, (gid_t)-1) == -1);
		CHECK_EQ_U64(read_file(path, &out), CACHE_OK);
	}
	close(fd);
	remove_dir();
}

/* The machine-wide record: a symbolic link whose target is the text, trusted by its
 * directory (the owner's, writable by nobody else, not a symlink); a regular file there
 * is an older build's, not read. */
static void link_record_trusts_its_directory(void)
{
	make_dir();
	struct cache_file in = one(sample()), out;
	char buf[CACHE_MAX_SIZE + 1];
	CHECK(cache_write_link(path, &in, buf, sizeof buf, err, sizeof err) == 0);
	struct stat st;
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK_EQ_U64(entries_in(dir), 1); /* no temporary link left */
	struct safefile_trust root = {.owner = geteuid(), .max_size = CACHE_MAX_SIZE, .link = 1};
	CHECK(chmod(dir, 0755) == 0);
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_OK);
	check_same(&in.record[0], &out.record[0]);
	/* Written again over itself, and over a regular file (an older build's record). */
	CHECK(cache_write_link(path, &in, buf, sizeof buf, err, sizeof err) == 0);
	CHECK(chmod(dir, 0775) == 0);
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "its directory writable by group or others"));
	CHECK(chmod(dir, 01777) == 0); /* like /tmp */
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_UNTRUSTED);
	CHECK(chmod(dir, 0700) == 0);
	/* Another owner for the directory. */
	root.owner = geteuid() + 1;
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "its directory owned by uid"));
	root.owner = geteuid();
	CHECK_EQ_U64(safefile_directory_trusted(path, geteuid(), err, sizeof err), SAFEFILE_OK);
	/* A directory reached through a symlink as its last component. */
	char link[300], through[320];
	snprintf(link, sizeof link, "%s.link", dir);
	CHECK(symlink(dir, link) == 0);
	snprintf(through, sizeof through, "%s/cache", link);
	CHECK_EQ_U64(cache_read(through, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "symbolic link"));
	unlink(link);
	/* A regular file at the path: not read. */
	CHECK(unlink(path) == 0 && write_file(path, &in) == 0);
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "not a symbolic link"));
	CHECK(cache_write_link(path, &in, buf, sizeof buf, err, sizeof err) == 0);
	CHECK_EQ_U64(cache_read(path, &root, filebuf, sizeof filebuf, &out, err, sizeof err), CACHE_OK);
	/* A directory in the way is never replaced. */
	CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
	CHECK(cache_write_link(path, &in, buf, sizeof buf, err, sizeof err) == -1);
	CHECK(one_line(err) && strstr(err, "a directory is in the way"));
	remove_dir();
}

/* The lean read of the decision: one read into a buffer that may be smaller than the
 * file (it fills it: read again into a larger one); the owner proved by the open where
 * the caller is not root, else checked by fstat. */
static void lean_read_fills_a_small_buffer(void)
{
	make_dir();
	struct cache_file in = one(sample());
	CHECK(write_file(path, &in) == 0);
	struct safefile_trust lean = {.owner = geteuid(), .max_size = CACHE_MAX_SIZE, .lean = 1};
	char small[64], whole[CACHE_MAX_SIZE + 1];
	size_t len = 0, full = 0;
	CHECK_EQ_U64(safefile_read(path, &lean, whole, sizeof whole, &full, err, sizeof err), SAFEFILE_OK);
	CHECK(full > sizeof small);
	CHECK_EQ_U64(safefile_read(path, &lean, small, sizeof small, &len, err, sizeof err), SAFEFILE_OK);
	CHECK_EQ_U64(len, sizeof small);
	CHECK(memcmp(small, whole, sizeof small) == 0);
	struct cache_file out;
	CHECK_EQ_U64(cache_parse(whole, full, &out, err, sizeof err), CACHE_OK);
	/* Another owner: refused by the open (O_NOATIME), or as root by the fstat. */
	lean.owner = geteuid() + 1;
	CHECK_EQ_U64(safefile_read(path, &lean, whole, sizeof whole, &full, err, sizeof err), SAFEFILE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "owned by uid"));
	remove_dir();
}

static struct cpu_mask mask_of(const char *hex);

/* The decision's look-up, record by record, picks as cache_find does, and says whether a
 * record of this boot was there; a text of another format version is another build's. */
static void answer_picks_as_find_does(void)
{
	struct cache_record r = sample();
	struct cache_file f = one(r);
	f.record[1] = r;
	f.record[1].cpus = mask_of("1");
	f.record[1].max_shift_ticks = 1;
	f.record[2] = r;
	strcpy(f.record[2].boot_id, "another-boot");
	f.count = 3;
	char text[CACHE_MAX_SIZE + 1];
	int len = cache_format(&f, text, sizeof text, err, sizeof err);
	CHECK(len > 0);
	struct cpu_mask sets[] = {mask_of("3"), mask_of("1"), mask_of("2"), mask_of("4"), mask_of("7")};
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
		struct cache_key key = {.boot_id = r.boot_id, .cpu_signature = r.cpu_signature, .cpus = &sets[i]};
		struct cache_record out;
		struct cache_answer a;
		CHECK_EQ_U64(cache_answer(text, (size_t)len, &key, &out, &a, err, sizeof err), CACHE_OK);
		int at = cache_find(&f, &key);
		CHECK(a.found == (at >= 0));
		CHECK(a.this_boot);
		if (at >= 0)
			CHECK_EQ_U64(out.max_shift_ticks, f.record[at].max_shift_ticks);
	}
	struct cache_key other = {.boot_id = "not-this-boot", .cpu_signature = r.cpu_signature};
	struct cache_record out;
	struct cache_answer a;
	CHECK_EQ_U64(cache_answer(text, (size_t)len, &other, &out, &a, err, sizeof err), CACHE_OK);
	CHECK(!a.found && !a.this_boot);
	text[len - 3] ^= 1;
	CHECK_EQ_U64(cache_answer(text, (size_t)len, &other, &out, &a, err, sizeof err), CACHE_CORRUPT);
	text[len - 3] ^= 1;
	CHECK(!cache_text_of_other_format(text, (size_t)len));
	text[14] = '8'; /* "tscshim-cache 8", the previous format */
	CHECK(cache_text_of_other_format(text, (size_t)len));
	CHECK(!cache_text_of_other_format("garbage", 7));
}

static void odd_files_are_untrusted(void)
{
	make_dir();
	struct cache_file out;
	/* Too big, even if it were well-formed. */
	char big[CACHE_MAX_SIZE + 1];
	memset(big, '\n', sizeof big);
	write_bytes(path, big, sizeof big);
	CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "larger than 4096"));
	write_bytes(path, big, CACHE_MAX_SIZE);
	CHECK_EQ_U64(read_file(path, &out), CACHE_CORRUPT);
	/* A FIFO: neither the open nor the read may hang. */
	CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	CHECK_EQ_U64(read_file(path, &out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "not a regular file"));
	struct cache_file in = one(sample());
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err));
	remove_dir();
}

static void unwritable_directory_leaves_nothing(void)
{
	make_dir();
	struct cache_file in = one(sample());
	/* As root the mode bits do not stop us: a parent that does not exist does. */
	char p[300];
	snprintf(p, sizeof p, "%s/absent/cache", dir);
	CHECK(write_file(p, &in) == -1);
	CHECK(one_line(err) && strstr(err, p) && strstr(err, "temporary file"));
	CHECK_EQ_U64(entries_in(dir), 0);
	if (geteuid() != 0) {
		CHECK(chmod(dir, 0500) == 0);
		CHECK(write_file(path, &in) == -1);
		CHECK(one_line(err) && strstr(err, path));
		CHECK(chmod(dir, 0700) == 0);
		CHECK_EQ_U64(entries_in(dir), 0);
	}
	/* An invalid record is refused before anything is created. */
	in.record[0].boot_id[0] = '\0';
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err) && strstr(err, "boot_id"));
	in = one(sample());
	in.record[0].estimate_verdict = 99;
	CHECK(write_file(path, &in) == -1);
	in = one(sample());
	memset(&in.record[0].cpus, 0, sizeof in.record[0].cpus);
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err) && strstr(err, "cpus"));
	in = one(sample());
	memset(in.record[0].boot_id, 'x', sizeof in.record[0].boot_id); /* unterminated */
	CHECK(write_file(path, &in) == -1);
	in = one(sample());
	strcpy(in.record[0].boot_id, "two\nlines");
	CHECK(write_file(path, &in) == -1);
	CHECK(one_line(err));
	in = one(sample());
	in.record[0].retry_interval_ms = CACHE_RETRY_MAX_MS + 1;
	CHECK(write_file(path, &in) == -1);
	CHECK_EQ_U64(entries_in(dir), 0);
	remove_dir();
}

static struct cpu_mask mask_of(const char *hex)
{
	struct cpu_mask m;
	CHECK(cpu_mask_from_hex(hex, strlen(hex), &m) == 0);
	return m;
}

static void find_exact_set_or_consistent_superset(void)
{
	struct cache_record r = sample(); /* CPUs 0 and 1, consistent */
	struct cache_file f = one(r);
	struct cpu_mask both = mask_of("3"), first = mask_of("1"), second = mask_of("2"),
			other = mask_of("4"), wider = mask_of("7");
	struct cache_key key = {.boot_id = r.boot_id, .cpu_signature = r.cpu_signature, .cpus = &both};
	CHECK(cache_find(&f, &key) == 0);
	key.cpus = &first;
	CHECK(cache_find(&f, &key) == 0); /* a subset: served by the superset */
	key.cpus = &second;
	CHECK(cache_find(&f, &key) == 0);
	key.cpus = &other;
	CHECK(cache_find(&f, &key) == -1);
	key.cpus = &wider;
	CHECK(cache_find(&f, &key) == -1); /* CPU 2 was never estimated */

	/* A failing or inconclusive verdict answers only for its own set. */
	f.record[0].estimate_verdict = ESTIMATE_NOT_MONOTONIC;
	key.cpus = &first;
	CHECK(cache_find(&f, &key) == -1);
	key.cpus = &both;
	CHECK(cache_find(&f, &key) == 0);
	f.record[0].estimate_verdict = ESTIMATE_INCONCLUSIVE;
	CHECK(cache_find(&f, &key) == 0);
	key.cpus = &first;
	CHECK(cache_find(&f, &key) == -1);

	/* The exact set wins over an earlier superset. */
	f = one(r);
	f.record[1] = r;
	f.record[1].cpus = first;
	f.record[1].max_shift_ticks = 1;
	f.count = 2;
	key.cpus = &first;
	CHECK(cache_find(&f, &key) == 1);

	/* Boot and CPU must match; an unknown boot matches nothing. */
	f = one(r);
	key.cpus = &both;
	key.boot_id = "0f8e4c2a-6b1d-4e5f-9a3c-7d2b1e0f4a6d";
	CHECK(cache_find(&f, &key) == -1);
	key.boot_id = r.boot_id;
	key.cpu_signature++;
	CHECK(cache_find(&f, &key) == -1);
	/* A process that asked no CPUID takes any signature of this boot's record. */
	key.any_cpu_signature = true;
	CHECK(cache_find(&f, &key) == 0);
	key.any_cpu_signature = false;
	key.cpu_signature--;
	key.boot_id = "";
	f.record[0].boot_id[0] = '\0';
	CHECK(cache_find(&f, &key) == -1);
	key.boot_id = NULL;
	CHECK(cache_find(&f, &key) == -1);
}

static void insert_keeps_the_newest_four(void)
{
	struct cache_file f = {0};
	struct cache_record r = sample();
	for (unsigned i = 0; i < 6; i++) {
		memset(&r.cpus, 0, sizeof r.cpus);
		cpu_mask_add(&r.cpus, i);
		r.max_shift_ticks = i;
		cache_insert(&f, &r);
	}
	CHECK_EQ_U64(f.count, CACHE_RECORDS_MAX);
	CHECK_EQ_U64(f.record[0].max_shift_ticks, 5);
	CHECK_EQ_U64(f.record[3].max_shift_ticks, 2);
	/* The same set replaces its record and moves it first. */
	memset(&r.cpus, 0, sizeof r.cpus);
	cpu_mask_add(&r.cpus, 3);
	r.max_shift_ticks = 33;
	cache_insert(&f, &r);
	CHECK_EQ_U64(f.count, CACHE_RECORDS_MAX);
	CHECK_EQ_U64(f.record[0].max_shift_ticks, 33);
	CHECK_EQ_U64(f.record[1].max_shift_ticks, 5);
	CHECK_EQ_U64(f.record[2].max_shift_ticks, 4);
	CHECK_EQ_U64(f.record[3].max_shift_ticks, 2);
	/* Another boot's records go. */
	strcpy(r.boot_id, "another-boot");
	cache_insert(&f, &r);
	CHECK_EQ_U64(f.count, 1);
	CHECK(strcmp(f.record[0].boot_id, "another-boot") == 0);
}

static void retry_waits_double_up_to_a_cap(void)
{
	CHECK_EQ_U64(cache_retry_interval_ms(NULL), 10000);
	struct cache_record r = sample();
	CHECK_EQ_U64(cache_retry_interval_ms(&r), 10000); /* consistent before */
	r.estimate_verdict = ESTIMATE_INCONCLUSIVE;
	r.retry_interval_ms = 10000;
	CHECK_EQ_U64(cache_retry_interval_ms(&r), 20000);
	r.retry_interval_ms = 160000;
	CHECK_EQ_U64(cache_retry_interval_ms(&r), 320000);
	r.retry_interval_ms = 320000;
	CHECK_EQ_U64(cache_retry_interval_ms(&r), 320000);
	r.retry_interval_ms = 0;
	CHECK_EQ_U64(cache_retry_interval_ms(&r), 10000);
}

static void cpu_masks_round_trip_as_hex(void)
{
	struct cpu_mask m = {0}, back;
	char hex[CPU_MASK_HEX_MAX + 1];
	CHECK_EQ_U64(cpu_mask_to_hex(&m, hex, sizeof hex), 1);
	CHECK(strcmp(hex, "0") == 0);
	cpu_mask_add(&m, 0);
	cpu_mask_add(&m, 5);
	cpu_mask_add(&m, 64);
	cpu_mask_to_hex(&m, hex, sizeof hex);
	CHECK(strcmp(hex, "10000000000000021") == 0);
	CHECK(cpu_mask_from_hex(hex, strlen(hex), &back) == 0 && cpu_mask_equal(&m, &back));
	CHECK_EQ_U64(cpu_mask_count(&m), 3);
	CHECK_EQ_U64(cpu_mask_next(&m, -1), 0);
	CHECK_EQ_U64(cpu_mask_next(&m, 0), 5);
	CHECK_EQ_U64(cpu_mask_next(&m, 5), 64);
	CHECK(cpu_mask_next(&m, 64) == -1);
	memset(&m, 0xff, sizeof m);
	CHECK_EQ_U64(cpu_mask_to_hex(&m, hex, sizeof hex), CPU_MASK_HEX_MAX);
	CHECK(cpu_mask_from_hex(hex, strlen(hex), &back) == 0 && cpu_mask_equal(&m, &back));
	CHECK(cpu_mask_next(&m, CPU_MASK_BITS - 1) == -1);
	CHECK(cpu_mask_from_hex("", 0, &back) == -1);
	CHECK(cpu_mask_from_hex("0", 1, &back) == 0 && cpu_mask_count(&back) == 0);
	CHECK(cpu_mask_from_hex("00", 2, &back) == -1);
	CHECK(cpu_mask_from_hex("g", 1, &back) == -1);
	struct cpu_mask a = mask_of("5"), b = mask_of("7");
	CHECK(cpu_mask_is_subset(&a, &b) && !cpu_mask_is_subset(&b, &a));
	/* The process's own set: at least one CPU. */
	CHECK(cpu_mask_allowed(&m) >= 1);
	CHECK(cpu_mask_online(&b) >= 1 && cpu_mask_is_subset(&m, &b));
}

static void default_path_choices(void)
{
	make_dir();
	char buf[512], expect[512];
	snprintf(expect, sizeof expect, "/tmp/tscshim-%u.cache", (unsigned)geteuid());

	CHECK(cache_default_path(dir, buf, sizeof buf) == 0);
	CHECK(strcmp(buf, path) == 0 || (strstr(buf, dir) == buf && strcmp(buf + strlen(dir), "/tscshim.cache") == 0));
	char slash[80];
	snprintf(slash, sizeof slash, "%s/", dir);
	CHECK(cache_default_path(slash, buf, sizeof buf) == 0);
	CHECK(strstr(buf, "//") == NULL && strstr(buf, "/tscshim.cache") != NULL);

	CHECK(cache_default_path(NULL, buf, sizeof buf) == 0);
	CHECK(strcmp(buf, expect) == 0);
	CHECK(cache_default_path("", buf, sizeof buf) == 0);
	CHECK(strcmp(buf, expect) == 0);
	CHECK(cache_default_path("tmp", buf, sizeof buf) == 0); /* relative */
	CHECK(strcmp(buf, expect) == 0);
	char absent[80];
	snprintf(absent, sizeof absent, "%s/absent", dir);
	CHECK(cache_default_path(absent, buf, sizeof buf) == 0);
	CHECK(strcmp(buf, expect) == 0);
	char file[80];
	snprintf(file, sizeof file, "%s/file", dir);
	write_bytes(file, "", 0);
	CHECK(cache_default_path(file, buf, sizeof buf) == 0);
	CHECK(strcmp(buf, expect) == 0);
	if (geteuid() == 0) {
		char theirs[80];
		snprintf(theirs, sizeof theirs, "%s/theirs", dir);
		CHECK(mkdir(theirs, 0700) == 0 && chown(theirs, 65534, (gid_t)-1) == 0);
		CHECK(cache_default_path(theirs, buf, sizeof buf) == 0);
		CHECK(strcmp(buf, expect) == 0);
	} else {
		CHECK(cache_default_path("/", buf, sizeof buf) == 0);
		CHECK(strcmp(buf, expect) == 0);
	}

	/* Too small a buffer: -1 and an empty string, either way. */
	CHECK(cache_default_path(dir, buf, strlen(dir) + 5) == -1 && buf[0] == '\0');
	CHECK(cache_default_path(NULL, buf, 8) == -1 && buf[0] == '\0');
	CHECK(cache_default_path(NULL, buf, 0) == -1);
	CHECK(cache_default_path(NULL, buf, strlen(expect) + 1) == 0);
	/* FNV-1a 64 reference value for "a". */
	CHECK_EQ_U64(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
	remove_dir();
}

int main(void)
{
	RUN(round_trip);
	RUN(round_trip_extremes);
	RUN(format_is_the_documented_text);
	RUN(costs_of_a_build_newest_first);
	RUN(costs_of_two_builds);
	RUN(costs_of_a_clocksource);
	RUN(missing_file);
	RUN(corrupt_empty_and_garbage);
	RUN(corrupt_every_truncation);
	RUN(corrupt_every_flipped_byte);
	RUN(other_version_is_another_builds);
	RUN(boot_by_wall_clock_time);
	RUN(find_without_the_cpu_set);
	RUN(corrupt_fields);
	RUN(parse_survives_random_input);
	RUN(symlink_is_untrusted);
	RUN(directory_is_untrusted_and_not_replaced);
	RUN(writable_by_others_is_untrusted);
	RUN(other_owner_is_untrusted);
	RUN(link_record_trusts_its_directory);
	RUN(lean_read_fills_a_small_buffer);
	RUN(odd_files_are_untrusted);
	RUN(unwritable_directory_leaves_nothing);
	RUN(find_exact_set_or_consistent_superset);
	RUN(answer_picks_as_find_does);
	RUN(insert_keeps_the_newest_four);
	RUN(retry_waits_double_up_to_a_cap);
	RUN(cpu_masks_round_trip_as_hex);
	RUN(default_path_choices);
	return unit_finish();
}
