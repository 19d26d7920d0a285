/* Calibration records: one field table drives formatting, parsing and checking (format
 * in cache.h). This runs in the shim's constructor, before the program's main and possibly
 * before its allocator is usable: no stdio, no malloc, every loop bounded by the input. */
#define _GNU_SOURCE
#include "cache.h"
#include "bytes.h"
#include "absdiff.h"

#include "load_page.h"
#include "raw_syscall.h"

#include "decimal.h"
#include "estimate.h"
#include "text.h"

#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FNV_OFFSET_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

#define MAGIC "tscshim-cache "
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define CHECKSUM_KEY "checksum="
#define CHECKSUM_LINE_LEN (sizeof CHECKSUM_KEY - 1 + 16) /* without its newline */

/* The record's fields in file order. A new figure (a measured cost, say) is one row here
 * and one member in struct cache_record. */
enum field_kind { FIELD_TEXT, FIELD_U32, FIELD_U64, FIELD_CPUS };
struct field {
	const char *name;
	enum field_kind kind;
	size_t offset, size;
	uint64_t min, max; /* TEXT: length bounds; U32/U64: value bounds */
};
#define FIELD_AT(name, member, kind, min, max)                                          \
	{name, kind, offsetof(struct cache_record, member),                             \
	 sizeof ((struct cache_record *)0)->member, min, max}
#define FIELD(member, kind, min, max) FIELD_AT(#member, member, kind, min, max)
/* One build's costs: the first set under the names it always had, the second with "_2";
 * each with the fenced read plan its fenced cost is of, and the kernel clocksource its
 * kernel cost is of ("" where /sys could not tell). */
#define COSTS(i, suffix)                                                                    \
	FIELD_AT("kernel_ps" suffix, costs[i].kernel_ps, FIELD_U64, 0, CACHE_COST_MAX_PS),       \
	FIELD_AT("syscall_ps" suffix, costs[i].syscall_ps, FIELD_U64, 0, CACHE_COST_MAX_PS),     \
	FIELD_AT("fenced_ps" suffix, costs[i].fenced_ps, FIELD_U64, 0, CACHE_COST_MAX_PS),       \
	FIELD_AT("unfenced_ps" suffix, costs[i].unfenced_ps, FIELD_U64, 0, CACHE_COST_MAX_PS),   \
	FIELD_AT("cost_build" suffix, costs[i].build, FIELD_U64, 0, UINT64_MAX),               \
	FIELD_AT("fenced_plan" suffix, costs[i].fenced_plan, FIELD_U32, 0, 7),                   \
	FIELD_AT("cost_clocksource" suffix, costs[i].clocksource, FIELD_TEXT, 0, CACHE_CLOCKSOURCE_MAX)
static const struct field fields[] = {
	FIELD(boot_id, FIELD_TEXT, 1, 39),
	FIELD(boot_wall_ns, FIELD_U64, 0, UINT64_MAX),
	FIELD(cpu_signature, FIELD_U32, 0, UINT32_MAX),
	FIELD(counter_invariant, FIELD_U32, 0, 1),
	FIELD(cpus, FIELD_CPUS, 0, 0),
	FIELD(all_cpus, FIELD_U32, 0, 1),
	FIELD(vmclock, FIELD_U32, 0, 1),
	FIELD(estimate_verdict, FIELD_U32, 0, ESTIMATE_INCONCLUSIVE),
	FIELD(max_shift_ticks, FIELD_U64, 0, UINT64_MAX),
	FIELD(rate_millihz, FIELD_U64, 0, UINT64_MAX),
	FIELD(retry_at_ns, FIELD_U64, 0, UINT64_MAX),
	FIELD(retry_interval_ms, FIELD_U64, 0, CACHE_RETRY_MAX_MS),
	COSTS(0, ""),
	COSTS(1, "_2"),
};
_Static_assert(CACHE_COSTS_MAX == 2, "one COSTS row per set");
enum { FIELD_COUNT = sizeof fields / sizeof fields[0] };

static void set_why(char *why, size_t size, const char *a, const char *b, const char *c)
{
	text_line(why, size, a, b ? b : "", c ? c : "", NULL);
}

/* How a record answers for a key: for exactly its CPU set, for a subset of a consistent
 * one, or not at all (another boot or CPU, a set it does not cover). */
enum record_fit { FIT_NONE, FIT_SUPERSET, FIT_EXACT };
static enum record_fit record_fit(const struct cache_record *rec, const struct cache_key *key);

uint64_t fnv1a64(const char *data, size_t len)
{
	uint64_t hash = FNV_OFFSET_BASIS;
	for (size_t i = 0; i < len; i++) {
		hash ^= (unsigned char)data[i];
		hash *= FNV_PRIME;
	}
	return hash;
}

/* The path's parts, on the load page with the code that reads them (load_page.h): a
 * process finds its cache at load when no machine-wide record exists. */
static char path_in_runtime_dir[] ON_LOAD_PAGE = "tscshim.cache";
static char path_in_tmp[] ON_LOAD_PAGE = "/tmp/tscshim-";
static char path_suffix[] ON_LOAD_PAGE = ".cache";
static char path_slash[] ON_LOAD_PAGE = "/";

LOAD_PATH int cache_default_path_for(const char *xdg_runtime_dir, uid_t euid, char *buf, size_t size)
{
	if (!buf || size == 0)
		return -1;
	struct stat st;
	struct text t = text_start(buf, size);
	/* Another user's directory could hold a file we would trust as our own. */
	if (xdg_runtime_dir && xdg_runtime_dir[0] == '/' && raw_stat(xdg_runtime_dir, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == euid) {
		size_t len = 0;
		while (xdg_runtime_dir[len])
			len++;
		text_add(&t, xdg_runtime_dir);
		text_add(&t, xdg_runtime_dir[len - 1] == '/' ? path_slash + 1 : path_slash);
		text_add(&t, path_in_runtime_dir);
	} else {
		text_add(&t, path_in_tmp);
		text_add_u64(&t, euid);
		text_add(&t, path_suffix);
	}
	if (t.truncated) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

int cache_default_path(const char *xdg_runtime_dir, char *buf, size_t size)
{
	/* The system call itself: the shim asks at its first clock read (raw_syscall.h). */
	return cache_default_path_for(xdg_runtime_dir, (uid_t)raw_syscall4(SYS_geteuid, 0, 0, 0, 0), buf, size);
}

/* Printable ASCII without spaces, within the field's length bounds. */
static bool text_ok(const char *s, size_t len, const struct field *f)
{
	if (len < f->min || len > f->max)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] > 0x7e || (unsigned char)s[i] < 0x21)
			return false;
	return true;
}

static uint64_t get_number(const struct cache_record *rec, const struct field *f)
{
	const char *p = (const char *)rec + f->offset;
	if (f->kind == FIELD_U32) {
		uint32_t v;
		memcpy(&v, p, sizeof v);
		return v;
	}
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static void set_number(struct cache_record *rec, const struct field *f, uint64_t v)
{
	char *p = (char *)rec + f->offset;
	if (f->kind == FIELD_U32) {
		uint32_t v32 = (uint32_t)v;
		memcpy(p, &v32, sizeof v32);
	} else {
		memcpy(p, &v, sizeof v);
	}
}

int cache_record_check(const struct cache_record *rec, char *why, size_t why_size)
{
	for (int i = 0; i < FIELD_COUNT; i++) {
		const struct field *f = &fields[i];
		const char *p = (const char *)rec + f->offset;
		switch (f->kind) {
		case FIELD_TEXT: {
			const char *end = bytes_find(p, '\0', f->size);
			if (!end || !text_ok(p, (size_t)(end - p), f)) {
				set_why(why, why_size, f->name, f->min ? ": must be 1..39 printable characters without spaces"
									       : ": must be 0..31 printable characters without spaces", NULL);
				return -1;
			}
			break;
		}
		case FIELD_CPUS:
			if (cpu_mask_count(&rec->cpus) == 0) {
				set_why(why, why_size, f->name, ": must hold at least one CPU", NULL);
				return -1;
			}
			break;
		case FIELD_U32:
		case FIELD_U64: {
			uint64_t v = get_number(rec, f);
			if (v < f->min || v > f->max) {
				set_why(why, why_size, f->name, ": out of range", NULL);
				return -1;
			}
			break;
		}
		}
	}
	return 0;
}

int cache_format(const struct cache_file *file, char *buf, size_t size, char *why,
		 size_t why_size)
{
	if (file->count == 0 || file->count > CACHE_RECORDS_MAX) {
		set_why(why, why_size, "a file holds 1 to 4 records", NULL, NULL);
		return -1;
	}
	struct text t = text_start(buf, size);
	text_add(&t, MAGIC);
	text_add_u64(&t, CACHE_FORMAT_VERSION);
	text_add(&t, "\n");
	for (uint32_t r = 0; r < file->count; r++) {
		const struct cache_record *rec = &file->record[r];
		if (cache_record_check(rec, why, why_size) != 0)
			return -1;
		for (int i = 0; i < FIELD_COUNT; i++) {
			const struct field *f = &fields[i];
			text_add(&t, f->name);
			text_add(&t, "=");
			if (f->kind == FIELD_TEXT) {
				text_add(&t, (const char *)rec + f->offset);
			} else if (f->kind == FIELD_CPUS) {
				char hex[CPU_MASK_HEX_MAX + 1];
				cpu_mask_to_hex(&rec->cpus, hex, sizeof hex);
				text_add(&t, hex);
			} else {
				text_add_u64(&t, get_number(rec, f));
			}
			text_add(&t, "\n");
		}
	}
	size_t body = t.len;
	uint64_t sum = fnv1a64(buf, body);
	char hex[17];
	for (int i = 15; i >= 0; i--, sum >>= 4)
		hex[i] = "0123456789abcdef"[sum & 15];
	hex[16] = '\0';
	text_add(&t, CHECKSUM_KEY);
	text_add(&t, hex);
	text_add(&t, "\n");
	/* The file must also be readable back: no longer than the reader accepts. */
	if (t.truncated || t.len > CACHE_MAX_SIZE) {
		set_why(why, why_size, "buffer too small", NULL, NULL);
		return -1;
	}
	return (int)t.len;
}

/* Digits only, no sign, no leading zero (but "0"): the writer's form and nothing else.
 * Returns 0, -1 for anything else, -2 for a number above UINT64_MAX. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	if (len > 1 && s[0] == '0')
		return -1;
	return decimal_parse_u64(s, len, out);
}

static int parse_hex64(const char *s, size_t len, uint64_t *out)
{
	if (len != 16)
		return -1;
	uint64_t value = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned digit;
		if (s[i] >= '0' && s[i] <= '9')
			digit = (unsigned)(s[i] - '0');
		else if (s[i] >= 'a' && s[i] <= 'f')
			digit = (unsigned)(s[i] - 'a' + 10);
		else
			return -1;
		value = (value << 4) | digit;
	}
	*out = value;
	return 0;
}

/* One line "name=value" for field f into rec. Returns 0, or -1 with why. */
static int parse_line(const struct field *f, const char *line, size_t len,
		      struct cache_record *rec, char *why, size_t why_size)
{
	size_t name_len = strlen(f->name);
	if (len <= name_len || !bytes_equal(line, f->name, name_len) || line[name_len] != '=') {
		set_why(why, why_size, "expected the field ", f->name, " here");
		return -1;
	}
	const char *v = line + name_len + 1;
	size_t vlen = len - name_len - 1;
	char *dest = (char *)rec + f->offset;
	switch (f->kind) {
	case FIELD_TEXT:
		if (!text_ok(v, vlen, f)) {
			set_why(why, why_size, f->name, f->min ? ": expected 1..39 printable characters without spaces"
								       : ": expected 0..31 printable characters without spaces", NULL);
			return -1;
		}
		bytes_copy(dest, v, vlen);
		dest[vlen] = '\0';
		return 0;
	case FIELD_CPUS:
		if (cpu_mask_from_hex(v, vlen, &rec->cpus) != 0 || cpu_mask_count(&rec->cpus) == 0) {
			set_why(why, why_size, f->name, ": expected a non-empty hex CPU mask", NULL);
			return -1;
		}
		return 0;
	case FIELD_U32:
	case FIELD_U64: {
		uint64_t x = 0;
		int rc = parse_u64(v, vlen, &x);
		if (rc == -1) {
			set_why(why, why_size, f->name, ": expected a decimal number without sign or leading zeros", NULL);
			return -1;
		}
		if (rc == -2 || x < f->min || x > f->max) {
			set_why(why, why_size, f->name, ": out of range", NULL);
			return -1;
		}
		set_number(rec, f, x);
		return 0;
	}
	}
	return -1;
}

/* The records' lines of a file of this format version: its first line and its checksum
 * line are checked, and [*body, *end) is between them. CACHE_OK, or CACHE_CORRUPT or
 * CACHE_OTHER_FORMAT with why. */
static int open_envelope(const char *data, size_t len, const char **body, const char **end, char *why,
			 size_t why_size)
{
	if (len == 0) {
		set_why(why, why_size, "empty file", NULL, NULL);
		return CACHE_CORRUPT;
	}
	if (len > CACHE_MAX_SIZE) {
		set_why(why, why_size, "larger than 4096 bytes", NULL, NULL);
		return CACHE_CORRUPT;
	}
	if (bytes_find(data, '\0', len)) {
		set_why(why, why_size, "holds a NUL byte", NULL, NULL);
		return CACHE_CORRUPT;
	}
	if (data[len - 1] != '\n') {
		set_why(why, why_size, "truncated: no final newline", NULL, NULL);
		return CACHE_CORRUPT;
	}

	/* First line: the magic and the version, checked before the checksum because another
	 * version may sum differently. */
	const char *header_end = bytes_find(data, '\n', len);
	size_t header_len = (size_t)(header_end - data);
	uint64_t version = 0;
	if (header_len <= sizeof MAGIC - 1 || !bytes_equal(data, MAGIC, sizeof MAGIC - 1) ||
	    parse_u64(data + sizeof MAGIC - 1, header_len - (sizeof MAGIC - 1), &version) != 0) {
		set_why(why, why_size, "not a tscshim cache (first line is not 'tscshim-cache " STRINGIFY(CACHE_FORMAT_VERSION) "')", NULL, NULL);
		return CACHE_CORRUPT;
	}
	if (version != CACHE_FORMAT_VERSION) {
		set_why(why, why_size, "another format version (expected " STRINGIFY(CACHE_FORMAT_VERSION) ")", NULL, NULL);
		return CACHE_OTHER_FORMAT;
	}

	/* Last line: the checksum over everything before it. */
	const char *last_nl = len >= 2 ? bytes_find_last(data, '\n', len - 1) : NULL;
	if (!last_nl || last_nl < header_end) {
		set_why(why, why_size, "truncated: no checksum line", NULL, NULL);
		return CACHE_CORRUPT;
	}
	const char *sum_line = last_nl + 1;
	size_t sum_len = (size_t)(data + len - 1 - sum_line);
	uint64_t stored = 0;
	if (sum_len != CHECKSUM_LINE_LEN || !bytes_equal(sum_line, CHECKSUM_KEY, sizeof CHECKSUM_KEY - 1) ||
	    parse_hex64(sum_line + sizeof CHECKSUM_KEY - 1, 16, &stored) != 0) {
		set_why(why, why_size, "truncated or malformed: the last line is not 'checksum=<16 hex digits>'", NULL, NULL);
		return CACHE_CORRUPT;
	}
	if (stored != fnv1a64(data, (size_t)(sum_line - data))) {
		set_why(why, why_size, "checksum mismatch", NULL, NULL);
		return CACHE_CORRUPT;
	}
	*body = header_end + 1;
	*end = sum_line;
	return CACHE_OK;
}

/* The next record's lines, from *p (before end: every line there ends in '\n') into rec,
 * each the next field of the table in turn; *p moves past them. 0, or -1 with why. */
static int parse_record(const char **p, const char *end, struct cache_record *rec, char *why, size_t why_size)
{
	memset(rec, 0, sizeof *rec);
	for (int field = 0; field < FIELD_COUNT; field++) {
		if (*p >= end) {
			set_why(why, why_size, "a record is cut short", NULL, NULL);
			return -1;
		}
		const char *eol = bytes_find(*p, '\n', (size_t)(end - *p));
		if (parse_line(&fields[field], *p, (size_t)(eol - *p), rec, why, why_size) != 0)
			return -1;
		*p = eol + 1;
	}
	return 0;
}

bool cache_text_of_other_format(const char *data, size_t len)
{
	const char *body, *end;
	char why[128];
	return open_envelope(data, len, &body, &end, why, sizeof why) == CACHE_OTHER_FORMAT;
}

int cache_parse(const char *data, size_t len, struct cache_file *out, char *why,
		size_t why_size)
{
	const char *p, *end;
	int rc = open_envelope(data, len, &p, &end, why, why_size);
	if (rc != CACHE_OK)
		return rc;
	struct cache_file file;
	file.count = 0;
	while (p < end) {
		if (file.count == CACHE_RECORDS_MAX) {
			set_why(why, why_size, "more than 4 records", NULL, NULL);
			return CACHE_CORRUPT;
		}
		if (parse_record(&p, end, &file.record[file.count], why, why_size) != 0)
			return CACHE_CORRUPT;
		file.count++;
	}
	if (file.count == 0) {
		set_why(why, why_size, "no record", NULL, NULL);
		return CACHE_CORRUPT;
	}
	*out = file;
	return CACHE_OK;
}

int cache_answer(const char *data, size_t len, const struct cache_key *key, struct cache_record *out,
		 struct cache_answer *a, char *why, size_t why_size)
{
	*a = (struct cache_answer){0};
	const char *p, *end;
	int rc = open_envelope(data, len, &p, &end, why, why_size);
	if (rc != CACHE_OK)
		return rc;
	struct cache_record rec;
	int records = 0;
	while (p < end && !a->exact) {
		if (records++ == CACHE_RECORDS_MAX) {
			set_why(why, why_size, "more than 4 records", NULL, NULL);
			return CACHE_CORRUPT;
		}
		if (parse_record(&p, end, &rec, why, why_size) != 0)
			return CACHE_CORRUPT;
		a->this_boot = a->this_boot || cache_same_boot(&rec, key);
		/* As cache_find picks: the exact set at once, else the first superset. */
		enum record_fit fit = record_fit(&rec, key);
		if (fit == FIT_EXACT || (fit == FIT_SUPERSET && !a->found)) {
			*out = rec;
			a->found = true;
			a->exact = fit == FIT_EXACT;
		}
	}
	if (records == 0) {
		set_why(why, why_size, "no record", NULL, NULL);
		return CACHE_CORRUPT;
	}
	return CACHE_OK;
}

int cache_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
	       struct cache_file *out, char *err, size_t err_size)
{
	size_t len = 0;
	int rc = safefile_read(path, trust, buf, size, &len, err, err_size);
	if (rc != SAFEFILE_OK)
		return rc;
	char why[128];
	int parsed = cache_parse(buf, len, out, why, sizeof why);
	if (parsed == CACHE_OTHER_FORMAT) {
		text_line(err, err_size, path, ": another build's: ", why, NULL);
		return CACHE_OTHER_FORMAT;
	}
	if (parsed != CACHE_OK) {
		text_line(err, err_size, path, ": corrupt: ", why, NULL);
		return CACHE_CORRUPT;
	}
	return CACHE_OK;
}

int cache_format_sibling(const char *path, char *buf, size_t size)
{
	struct text t = text_start(buf, size);
	text_add(&t, path);
	text_add(&t, ".v");
	text_add_u64(&t, CACHE_FORMAT_VERSION);
	if (t.truncated) {
		if (size)
			buf[0] = '\0';
		return -1;
	}
	return 0;
}

/* file's bytes in buf for a write to path: the length, or -1 with err. */
static int format_for(const char *path, const struct cache_file *file, char *buf, size_t size, char *err,
		      size_t err_size)
{
	char why[128];
	int len = cache_format(file, buf, size, why, sizeof why);
	if (len < 0)
		text_line(err, err_size, path, ": not written: ", why, NULL);
	return len;
}

int cache_write(const char *path, const struct cache_file *file, bool world_readable,
		char *buf, size_t size, char *err, size_t err_size)
{
	int len = format_for(path, file, buf, size, err, err_size);
	return len < 0 ? -1 : safefile_write(path, buf, (size_t)len, world_readable, err, err_size);
}

int cache_write_link(const char *path, const struct cache_file *file, char *buf, size_t size, char *err,
		     size_t err_size)
{
	int len = format_for(path, file, buf, size, err, err_size);
	return len < 0 ? -1 : safefile_write_link(path, buf, (size_t)len, err, err_size);
}

static bool same_machine_and_boot(const struct cache_record *rec, const char *boot_id,
				  uint32_t cpu_signature, bool any_cpu_signature)
{
	const char *end = bytes_find(rec->boot_id, '\0', sizeof rec->boot_id);
	return end && boot_id && boot_id[0] && strcmp(rec->boot_id, boot_id) == 0 &&
	       (any_cpu_signature || rec->cpu_signature == cpu_signature);
}

/* Two readings of a boot's wall-clock time are of one boot: both plausible, and within
 * the slack of each other. */
static bool same_boot_wall(uint64_t a, uint64_t b)
{
	uint64_t apart = abs_diff_u64(a, b);
	return a >= CACHE_BOOT_WALL_PLAUSIBLE_NS && b >= CACHE_BOOT_WALL_PLAUSIBLE_NS &&
	       apart <= CACHE_BOOT_WALL_SLACK_NS;
}

bool cache_same_boot(const struct cache_record *rec, const struct cache_key *key)
{
	if (key->boot_id)
		return same_machine_and_boot(rec, key->boot_id, key->cpu_signature, key->any_cpu_signature);
	return same_boot_wall(rec->boot_wall_ns, key->boot_wall_ns) &&
	       (key->any_cpu_signature || rec->cpu_signature == key->cpu_signature);
}

static enum record_fit record_fit(const struct cache_record *rec, const struct cache_key *key)
{
	if (!cache_same_boot(rec, key))
		return FIT_NONE;
	bool consistent = rec->estimate_verdict == ESTIMATE_CONSISTENT;
	/* The set not read: a record that holds every possible CPU covers it. */
	if (!key->cpus)
		return rec->all_cpus && consistent ? FIT_SUPERSET : FIT_NONE;
	if (cpu_mask_equal(&rec->cpus, key->cpus))
		return FIT_EXACT;
	return consistent && cpu_mask_is_subset(key->cpus, &rec->cpus) ? FIT_SUPERSET : FIT_NONE;
}

int cache_find(const struct cache_file *file, const struct cache_key *key)
{
	int superset = -1;
	for (uint32_t r = 0; r < file->count && r < CACHE_RECORDS_MAX; r++) {
		enum record_fit fit = record_fit(&file->record[r], key);
		if (fit == FIT_EXACT)
			return (int)r;
		if (fit == FIT_SUPERSET && superset < 0)
			superset = (int)r;
	}
	return superset;
}

int cache_costs_of_build(const struct cache_record *rec, uint64_t build, const struct cache_costs **out, int room)
{
	int n = 0;
	for (int i = 0; rec && build && i < CACHE_COSTS_MAX && n < room; i++) {
		const struct cache_costs *c = &rec->costs[i];
		if (c->build == build && c->kernel_ps && c->syscall_ps && c->fenced_ps && c->unfenced_ps)
			out[n++] = c;
	}
	return n;
}

const struct cache_costs *cache_costs_of(const struct cache_record *rec, uint64_t build, const char *clocksource)
{
	const struct cache_costs *sets[CACHE_COSTS_MAX];
	int n = cache_costs_of_build(rec, build, sets, CACHE_COSTS_MAX);
	for (int i = 0; i < n; i++)
		/* A process that cannot tell its clocksource (no /sys in a minimal container)
		 * takes the newest set of its build: the record is of this boot. */
		if (!clocksource[0] || strcmp(sets[i]->clocksource, clocksource) == 0)
			return sets[i];
	return NULL;
}

/* Two sets of costs answer for the same thing: one build under one clocksource. */
static bool same_costs_key(const struct cache_costs *a, const struct cache_costs *b)
{
	return a->build == b->build && strcmp(a->clocksource, b->clocksource) == 0;
}

/* Whether rec holds a set for the same build and clocksource as c. */
static bool holds_costs_of(const struct cache_record *rec, const struct cache_costs *c)
{
	for (int i = 0; i < CACHE_COSTS_MAX; i++)
		if (rec->costs[i].build && same_costs_key(&rec->costs[i], c))
			return true;
	return false;
}

void cache_costs_keep(struct cache_record *rec, const struct cache_costs *c)
{
	struct cache_costs kept[CACHE_COSTS_MAX] = {*c};
	int n = 1;
	for (int i = 0; i < CACHE_COSTS_MAX && n < CACHE_COSTS_MAX; i++)
		if (rec->costs[i].build && !same_costs_key(&rec->costs[i], c))
			kept[n++] = rec->costs[i];
	memcpy(rec->costs, kept, sizeof kept);
}

void cache_insert(struct cache_file *file, const struct cache_record *rec)
{
	struct cache_file next;
	memset(&next, 0, sizeof next);
	next.record[next.count++] = *rec;
	for (uint32_t r = 0; r < file->count && r < CACHE_RECORDS_MAX && next.count < CACHE_RECORDS_MAX; r++) {
		const struct cache_record *old = &file->record[r];
		if (!same_machine_and_boot(old, rec->boot_id, rec->cpu_signature, false))
			continue;
		if (!cpu_mask_equal(&old->cpus, &rec->cpus)) {
			next.record[next.count++] = *old;
			continue;
		}
		/* The same CPU set, replaced: another build's costs measured for it stay (a glibc
		 * and a musl process on one cache no longer evict each other's), and so do the
		 * same build's under another clocksource. */
		for (int i = CACHE_COSTS_MAX - 1; i >= 0; i--)
			if (old->costs[i].build && !holds_costs_of(&next.record[0], &old->costs[i])) {
				struct cache_costs newest = next.record[0].costs[0];
				cache_costs_keep(&next.record[0], &old->costs[i]);
				if (newest.build)
					cache_costs_keep(&next.record[0], &newest);
			}
	}
	*file = next;
}

uint64_t cache_retry_interval_ms(const struct cache_record *previous)
{
	if (!previous || previous->estimate_verdict != ESTIMATE_INCONCLUSIVE ||
	    previous->retry_interval_ms < CACHE_RETRY_FIRST_MS)
		return CACHE_RETRY_FIRST_MS;
	uint64_t next = previous->retry_interval_ms * 2;
	return next > CACHE_RETRY_MAX_MS ? CACHE_RETRY_MAX_MS : next;
}
