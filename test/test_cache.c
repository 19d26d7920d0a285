/* The calibration cache: round trips, strict rejection of every malformed or untrusted
 * file, atomic writes that leave nothing behind, and the key that decides a match. */
#define _GNU_SOURCE
#include "cache.h"
#include "estimate.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
		.cpu_signature = 0xb00f21,
		.cpu_model = "Oxide Virtual Turin-like Processor",
		.cpu_count = 2,
		.cpu_set_hash = 0x0123456789abcdefull,
		.estimate_verdict = ESTIMATE_CONSISTENT,
		.max_shift_ticks = 399,
		.rate_millihz = 2096008000036ull,
		.precision_ppm = 0.0009,
		.created_ns = 1700000000123456789ull,
	};
	return r;
}

static void check_same(const struct cache_record *a, const struct cache_record *b)
{
	CHECK(strcmp(a->boot_id, b->boot_id) == 0);
	CHECK_EQ_U64(a->cpu_signature, b->cpu_signature);
	CHECK(strcmp(a->cpu_model, b->cpu_model) == 0);
	CHECK_EQ_U64(a->cpu_count, b->cpu_count);
	CHECK_EQ_U64(a->cpu_set_hash, b->cpu_set_hash);
	CHECK_EQ_U64(a->estimate_verdict, b->estimate_verdict);
	CHECK_EQ_U64(a->max_shift_ticks, b->max_shift_ticks);
	CHECK_EQ_U64(a->rate_millihz, b->rate_millihz);
	CHECK(fabs(a->precision_ppm - b->precision_ppm) <= 0.5e-6);
	CHECK_EQ_U64(a->created_ns, b->created_ns);
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
	char buf[CACHE_MAX_SIZE + 64];
	int n = snprintf(buf, sizeof buf, "%schecksum=%016llx\n", body,
			 (unsigned long long)cache_checksum(body, strlen(body)));
	write_bytes(p, buf, (size_t)n);
}

static int read_status(struct cache_record *out)
{
	err[0] = '\0';
	return cache_read(path, out, err, sizeof err);
}

static void round_trip(void)
{
	make_dir();
	struct cache_record in = sample(), out;
	CHECK(cache_write(path, &in, err, sizeof err) == 0);
	memset(&out, 0x55, sizeof out);
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	check_same(&in, &out);
	CHECK(err[0] == '\0');

	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK_EQ_U64(st.st_mode & 07777, 0600);
	CHECK_EQ_U64(st.st_uid, geteuid());
	CHECK_EQ_U64(entries_in(dir), 1); /* no temporary file left */

	/* A second write replaces the first. */
	in.rate_millihz = 3000000000000ull;
	in.estimate_verdict = ESTIMATE_RATE_MISMATCH;
	CHECK(cache_write(path, &in, err, sizeof err) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	check_same(&in, &out);
	CHECK_EQ_U64(entries_in(dir), 1);
	remove_dir();
}

static void round_trip_extremes(void)
{
	make_dir();
	struct cache_record in = {0}, out;
	memset(in.boot_id, 'b', sizeof in.boot_id - 1);
	/* Spaces and '=' in the model: only the first '=' of a line splits. */
	snprintf(in.cpu_model, sizeof in.cpu_model, " a=b =c==  %37s", "=");
	CHECK_EQ_U64(strlen(in.cpu_model), sizeof in.cpu_model - 1);
	in.cpu_signature = UINT32_MAX;
	in.cpu_count = UINT32_MAX;
	in.cpu_set_hash = UINT64_MAX;
	in.estimate_verdict = ESTIMATE_INCONCLUSIVE;
	in.max_shift_ticks = UINT64_MAX;
	in.rate_millihz = UINT64_MAX;
	in.precision_ppm = 1e12;
	in.created_ns = UINT64_MAX;
	CHECK(cache_write(path, &in, err, sizeof err) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	check_same(&in, &out);

	/* Empty model, zeros, a precision that needs rounding. */
	in = sample();
	in.cpu_model[0] = '\0';
	in.max_shift_ticks = 0;
	in.rate_millihz = 0;
	in.created_ns = 0;
	in.precision_ppm = 0.4123456789;
	CHECK(cache_write(path, &in, err, sizeof err) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	check_same(&in, &out);
	CHECK(out.precision_ppm == 0.412346);
	remove_dir();
}

static void format_is_the_documented_text(void)
{
	struct cache_record r = sample();
	char buf[CACHE_MAX_SIZE], why[160];
	int n = cache_format(&r, buf, sizeof buf, why, sizeof why);
	CHECK(n > 0 && (size_t)n == strlen(buf));
	CHECK(strncmp(buf, "tscshim-cache 1\nboot_id=0f8e4c2a-", 33) == 0);
	CHECK(strstr(buf, "\ncpu_signature=11538209\n") != NULL);
	CHECK(strstr(buf, "\ncpu_model=Oxide Virtual Turin-like Processor\n") != NULL);
	CHECK(strstr(buf, "\nprecision_ppt=900\n") != NULL);
	char *sum = strstr(buf, "checksum=");
	CHECK(sum && strlen(sum) == 26 && sum[25] == '\n');
	if (sum) {
		char expect[32];
		snprintf(expect, sizeof expect, "checksum=%016llx\n",
			 (unsigned long long)cache_checksum(buf, (size_t)(sum - buf)));
		CHECK(strcmp(sum, expect) == 0);
	}
	CHECK(cache_format(&r, buf, 64, why, sizeof why) == -1);
}

static void missing_file(void)
{
	make_dir();
	struct cache_record out;
	CHECK_EQ_U64(read_status(&out), CACHE_MISSING);
	CHECK(one_line(err) && strstr(err, path) != NULL);
	/* A component that is not a directory: missing as well. */
	write_bytes(path, "x", 1);
	char below[300];
	snprintf(below, sizeof below, "%s/below", path);
	CHECK_EQ_U64(cache_read(below, &out, err, sizeof err), CACHE_MISSING);
	CHECK(one_line(err));
	/* A path with a newline still gives one line. */
	char odd[300];
	snprintf(odd, sizeof odd, "%s/a\nb", dir);
	CHECK_EQ_U64(cache_read(odd, &out, err, sizeof err), CACHE_MISSING);
	CHECK(one_line(err) && strstr(err, "a?b") != NULL);
	remove_dir();
}

/* Every case must be CORRUPT with a one-line message holding the path and expect. */
static void expect_corrupt_file(const char *expect)
{
	struct cache_record out = sample(), before = sample();
	CHECK_EQ_U64(read_status(&out), CACHE_CORRUPT);
	CHECK(one_line(err) && strstr(err, path) != NULL);
	if (!strstr(err, expect))
		printf("# message '%s' lacks '%s'\n", err, expect);
	CHECK(strstr(err, expect) != NULL);
	CHECK(memcmp(&out, &before, sizeof out) == 0); /* untouched */
}

static void good_body(char *buf, size_t size)
{
	struct cache_record r = sample();
	char why[160];
	int n = cache_format(&r, buf, size, why, sizeof why);
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
	write_bytes(path, "tscshim-cache 1\n", 16);
	expect_corrupt_file("no checksum line");
	write_bytes(path, "tscshim-cache 1", 15);
	expect_corrupt_file("no final newline");
	write_with_checksum(path, "tscshim-cache 01\n");
	expect_corrupt_file("not a tscshim cache");
	remove_dir();
}

static void corrupt_every_truncation(void)
{
	make_dir();
	struct cache_record r = sample();
	char buf[CACHE_MAX_SIZE], why[160];
	int n = cache_format(&r, buf, sizeof buf, why, sizeof why);
	int bad = 0;
	for (int len = 0; len < n; len++) {
		write_bytes(path, buf, (size_t)len);
		struct cache_record out;
		bad += read_status(&out) != CACHE_CORRUPT || !one_line(err);
	}
	CHECK_EQ_U64(bad, 0);
	remove_dir();
}

static void corrupt_every_flipped_byte(void)
{
	make_dir();
	struct cache_record r = sample();
	char buf[CACHE_MAX_SIZE], why[160];
	int n = cache_format(&r, buf, sizeof buf, why, sizeof why);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			buf[i] ^= (char)(1 << bit);
			write_bytes(path, buf, (size_t)n);
			struct cache_record out;
			bad += read_status(&out) != CACHE_CORRUPT || !one_line(err);
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

static void corrupt_other_version(void)
{
	make_dir();
	char body[CACHE_MAX_SIZE];
	good_body(body, sizeof body);
	body[14] = '2';
	write_with_checksum(path, body);
	expect_corrupt_file("format version 2, expected 1");
	body[14] = '0';
	write_with_checksum(path, body);
	expect_corrupt_file("format version 0");
	remove_dir();
}

static void corrupt_fields(void)
{
	static const struct {
		const char *key, *repl, *extra, *expect;
	} cases[] = {
		{"cpu_count=", "cpu_count=2\n", "cpu_count=2\n", "duplicate field cpu_count"},
		{"boot_id=", NULL, NULL, "missing field boot_id"},
		{"created_ns=", NULL, NULL, "missing field created_ns"},
		{"cpu_count=", "cpu_count=2\n", "cpus=2\n", "unknown field 'cpus'"},
		{"cpu_count=", "cpu_count=2\n", "=2\n", "unknown field ''"},
		{"cpu_count=", "cpu_count=2\n", "cpu_count 2\n", "without '='"},
		{"cpu_count=", "cpu_count=2\n", "\n", "without '='"},
		{"cpu_count=", "CPU_COUNT=2\n", NULL, "unknown field"},
		{"cpu_count=", "cpu_count =2\n", NULL, "unknown field"},
		{"cpu_count=", "cpu_count=0\n", NULL, "cpu_count: out of range"},
		{"cpu_count=", "cpu_count=02\n", NULL, "leading zeros"},
		{"cpu_count=", "cpu_count=+2\n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count=-2\n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count= 2\n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count=2 \n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count=\n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count=0x2\n", NULL, "cpu_count: expected a decimal"},
		{"cpu_count=", "cpu_count=4294967296\n", NULL, "cpu_count: out of range"},
		{"cpu_signature=", "cpu_signature=4294967296\n", NULL, "cpu_signature: out of range"},
		{"cpu_set_hash=", "cpu_set_hash=18446744073709551616\n", NULL, "out of range"},
		{"cpu_set_hash=", "cpu_set_hash=99999999999999999999999\n", NULL, "out of range"},
		{"estimate_verdict=", "estimate_verdict=6\n", NULL, "estimate_verdict: out of range"},
		{"precision_ppt=", "precision_ppt=1000000000000000001\n", NULL, "precision_ppt: out of range"},
		{"precision_ppt=", "precision_ppt=0.5\n", NULL, "precision_ppt: expected a decimal"},
		{"boot_id=", "boot_id=\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=a b\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=0123456789012345678901234567890123456789\n", NULL, "boot_id: expected"},
		{"boot_id=", "boot_id=ab\tc\n", NULL, "boot_id: expected"},
		{"cpu_model=", "cpu_model=a\rb\n", NULL, "cpu_model: expected"},
		{"cpu_model=", "cpu_model=a\033[2Jb\n", NULL, "cpu_model: expected"},
		{"cpu_model=", "cpu_model=caf\xc3\xa9\n", NULL, "cpu_model: expected"},
		{"cpu_model=", "cpu_model=a\x7f\n", NULL, "cpu_model: expected"},
		{"cpu_model=", "cpu_model=1234567890123456789012345678901234567890123456789\n", NULL,
		 "cpu_model: expected"},
	};
	make_dir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char body[CACHE_MAX_SIZE];
		body_with(body, sizeof body, cases[i].key, cases[i].repl, cases[i].extra);
		write_with_checksum(path, body);
		expect_corrupt_file(cases[i].expect);
	}
	/* Field order is free; an extra line after the checksum is not. */
	char body[CACHE_MAX_SIZE], good[CACHE_MAX_SIZE], moved[2 * CACHE_MAX_SIZE];
	body_with(body, sizeof body, "boot_id=", NULL, NULL);
	good_body(good, sizeof good);
	const char *boot_line = strstr(good, "boot_id=");
	snprintf(moved, sizeof moved, "%s%.*s", body, (int)(strchr(boot_line, '\n') + 1 - boot_line),
		 boot_line);
	write_with_checksum(path, moved);
	struct cache_record out, in = sample();
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	check_same(&in, &out);
	char buf[CACHE_MAX_SIZE + 64];
	char why[160];
	int n = cache_format(&in, buf, sizeof buf, why, sizeof why);
	strcpy(buf + n, "x=1\n");
	write_bytes(path, buf, strlen(buf));
	expect_corrupt_file("checksum");
	remove_dir();
}

static void parse_survives_random_input(void)
{
	/* Not a fuzzer, a smoke test: mutated good files and random bytes, every length. */
	struct cache_record r = sample(), out;
	char good[CACHE_MAX_SIZE], buf[CACHE_MAX_SIZE + 1], why[64];
	int n = cache_format(&r, good, sizeof good, why, sizeof why);
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
		bad_codes += rc != CACHE_OK && (rc != CACHE_CORRUPT || !one_line(why));
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
	struct cache_record in = sample(), out;
	CHECK(cache_write(target, &in, err, sizeof err) == 0);
	CHECK(cache_read(target, &out, err, sizeof err) == CACHE_OK);
	CHECK(symlink(target, path) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "symbolic link") && strstr(err, path));

	/* Writing neither follows nor replaces it. */
	in.rate_millihz = 1;
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	CHECK(one_line(err) && strstr(err, "symbolic link") && strstr(err, path));
	struct stat st;
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(cache_read(target, &out, err, sizeof err) == CACHE_OK);
	CHECK_EQ_U64(out.rate_millihz, sample().rate_millihz);
	CHECK_EQ_U64(entries_in(dir), 2);

	/* A dangling one too: not created through. */
	char dangling[300];
	snprintf(dangling, sizeof dangling, "%s/nowhere", dir);
	CHECK(unlink(path) == 0 && symlink(dangling, path) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	CHECK(lstat(dangling, &st) != 0);
	remove_dir();
}

static void directory_is_untrusted_and_not_replaced(void)
{
	make_dir();
	CHECK(mkdir(path, 0700) == 0);
	struct cache_record in = sample(), out;
	CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "directory") && strstr(err, path));
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
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
	struct cache_record in = sample(), out;
	static const mode_t modes[] = {0666, 0620, 0602, 0622};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		CHECK(cache_write(path, &in, err, sizeof err) == 0);
		CHECK(chmod(path, modes[i]) == 0);
		CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
		CHECK(one_line(err) && strstr(err, "writable by group or others"));
	}
	/* Readable by others is fine: nothing secret, only trust matters. */
	CHECK(chmod(path, 0644) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_OK);
	remove_dir();
}

static void other_owner_is_untrusted(void)
{
	make_dir();
	struct cache_record in = sample(), out;
	CHECK(cache_write(path, &in, err, sizeof err) == 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (geteuid() == 0) {
		CHECK(fchown(fd, 65534, (gid_t)-1) == 0);
		CHECK(fchmod(fd, 0600) == 0); /* chown may clear bits; keep it otherwise fine */
		struct stat st;
		CHECK(fstat(fd, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 07777) == 0600);
		CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
		CHECK(one_line(err) && strstr(err, "owned by uid 65534"));
	} else {
		uid_t other = geteuid() == 65534 ? 65533 : 65534;
		printf("# skipped: not root, cannot give a file to uid %u; checking that it is impossible\n",
		       (unsigned)other);
		CHECK(fchown(fd, other, (gid_t)-1) == -1);
		CHECK_EQ_U64(read_status(&out), CACHE_OK);
	}
	close(fd);
	remove_dir();
}

static void odd_files_are_untrusted(void)
{
	make_dir();
	struct cache_record out;
	/* Too big, even if it were well-formed. */
	char big[CACHE_MAX_SIZE + 1];
	memset(big, '\n', sizeof big);
	write_bytes(path, big, sizeof big);
	CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "larger than 4096"));
	write_bytes(path, big, CACHE_MAX_SIZE);
	CHECK_EQ_U64(read_status(&out), CACHE_CORRUPT);
	/* A FIFO: neither the open nor the read may hang. */
	CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	CHECK_EQ_U64(read_status(&out), CACHE_UNTRUSTED);
	CHECK(one_line(err) && strstr(err, "not a regular file"));
	struct cache_record in = sample();
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	CHECK(one_line(err));
	remove_dir();
}

static void unwritable_directory_leaves_nothing(void)
{
	make_dir();
	struct cache_record in = sample();
	/* As root the mode bits do not stop us: a parent that does not exist does. */
	char p[300];
	snprintf(p, sizeof p, "%s/absent/cache", dir);
	err[0] = '\0';
	CHECK(cache_write(p, &in, err, sizeof err) == -1);
	CHECK(one_line(err) && strstr(err, p) && strstr(err, "temporary file"));
	CHECK_EQ_U64(entries_in(dir), 0);
	if (geteuid() != 0) {
		CHECK(chmod(dir, 0500) == 0);
		CHECK(cache_write(path, &in, err, sizeof err) == -1);
		CHECK(one_line(err) && strstr(err, path));
		CHECK(chmod(dir, 0700) == 0);
		CHECK_EQ_U64(entries_in(dir), 0);
	}
	/* An invalid record is refused before anything is created. */
	in.boot_id[0] = '\0';
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	CHECK(one_line(err) && strstr(err, "boot_id"));
	in = sample();
	in.precision_ppm = NAN;
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	in.precision_ppm = -1;
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	in = sample();
	in.estimate_verdict = 99;
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	in = sample();
	in.cpu_count = 0;
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	in = sample();
	memset(in.cpu_model, 'x', sizeof in.cpu_model); /* unterminated */
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	in = sample();
	strcpy(in.cpu_model, "two\nlines");
	CHECK(cache_write(path, &in, err, sizeof err) == -1);
	CHECK(one_line(err));
	CHECK_EQ_U64(entries_in(dir), 0);
	remove_dir();
}

static void matches_on_every_key_field(void)
{
	struct cache_record r = sample();
	const char *boot = r.boot_id, *model = r.cpu_model;
	uint32_t sig = r.cpu_signature, count = r.cpu_count;
	uint64_t hash = r.cpu_set_hash;
	CHECK(cache_matches(&r, boot, sig, model, count, hash));
	CHECK(!cache_matches(&r, "0f8e4c2a-6b1d-4e5f-9a3c-7d2b1e0f4a6d", sig, model, count, hash));
	CHECK(!cache_matches(&r, boot, sig + 1, model, count, hash));
	CHECK(!cache_matches(&r, boot, sig, "Oxide Virtual Turin-like Processor ", count, hash));
	CHECK(!cache_matches(&r, boot, sig, model, count + 1, hash));
	CHECK(!cache_matches(&r, boot, sig, model, count, hash ^ 1));
	CHECK(!cache_matches(NULL, boot, sig, model, count, hash));
	CHECK(!cache_matches(&r, NULL, sig, model, count, hash));
	CHECK(!cache_matches(&r, boot, sig, NULL, count, hash));
	/* Fields outside the key do not matter. */
	r.rate_millihz = 1;
	r.created_ns = 2;
	r.estimate_verdict = ESTIMATE_STUCK;
	CHECK(cache_matches(&r, boot, sig, model, count, hash));
	/* An unknown boot id matches nothing, not even itself. */
	r.boot_id[0] = '\0';
	CHECK(!cache_matches(&r, "", sig, model, count, hash));
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
		/* /  is root's: not ours. */
		CHECK(cache_default_path("/", buf, sizeof buf) == 0);
		CHECK(strcmp(buf, expect) == 0);
	}

	/* Too small a buffer: -1 and an empty string, either way. */
	CHECK(cache_default_path(dir, buf, strlen(dir) + 5) == -1 && buf[0] == '\0');
	CHECK(cache_default_path(NULL, buf, 8) == -1 && buf[0] == '\0');
	CHECK(cache_default_path(NULL, buf, 0) == -1);
	CHECK(cache_default_path(NULL, buf, strlen(expect) + 1) == 0);
	remove_dir();
}

static void cpu_set_hash_is_order_and_content_sensitive(void)
{
	int a[] = {0, 1}, b[] = {1, 0}, c[] = {0, 1, 2}, d[] = {0}, e[] = {1}, f[] = {256};
	uint64_t ha = cache_cpu_set_hash(a, 2);
	CHECK_EQ_U64(ha, cache_cpu_set_hash(a, 2));
	CHECK(ha != cache_cpu_set_hash(b, 2));
	CHECK(ha != cache_cpu_set_hash(c, 3));
	CHECK(ha != cache_cpu_set_hash(d, 1));
	CHECK(cache_cpu_set_hash(d, 1) != cache_cpu_set_hash(e, 1));
	CHECK(cache_cpu_set_hash(e, 1) != cache_cpu_set_hash(f, 1));
	CHECK(cache_cpu_set_hash(d, 1) != cache_cpu_set_hash(NULL, 0));
	/* FNV-1a 64 reference values: the empty input, and "a". */
	CHECK_EQ_U64(cache_cpu_set_hash(NULL, 0), 0xcbf29ce484222325ull);
	CHECK_EQ_U64(cache_checksum("a", 1), 0xaf63dc4c8601ec8cull);
	/* Each id is 4 little-endian bytes. */
	const unsigned char one[4] = {1, 0, 0, 0};
	CHECK_EQ_U64(cache_cpu_set_hash(e, 1), cache_checksum((const char *)one, 4));
}

int main(void)
{
	RUN(round_trip);
	RUN(round_trip_extremes);
	RUN(format_is_the_documented_text);
	RUN(missing_file);
	RUN(corrupt_empty_and_garbage);
	RUN(corrupt_every_truncation);
	RUN(corrupt_every_flipped_byte);
	RUN(corrupt_other_version);
	RUN(corrupt_fields);
	RUN(parse_survives_random_input);
	RUN(symlink_is_untrusted);
	RUN(directory_is_untrusted_and_not_replaced);
	RUN(writable_by_others_is_untrusted);
	RUN(other_owner_is_untrusted);
	RUN(odd_files_are_untrusted);
	RUN(unwritable_directory_leaves_nothing);
	RUN(matches_on_every_key_field);
	RUN(default_path_choices);
	RUN(cpu_set_hash_is_order_and_content_sensitive);
	return unit_finish();
}
