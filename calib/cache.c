/* The calibration cache file: strict reading, atomic writing (format in cache.h).
 *
 * This runs in the shim's constructor, before the program's main and possibly before its
 * allocator is usable: buffers are on the stack, I/O is open/read/write, and every loop
 * is bounded by the file's length. */
#define _GNU_SOURCE
#include "cache.h"
#include "text.h"

#include "counter.h"
#include "estimate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FNV_OFFSET_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

#define MAGIC "tscshim-cache "
#define CHECKSUM_KEY "checksum="
#define CHECKSUM_LINE_LEN (sizeof CHECKSUM_KEY - 1 + 16) /* without its newline */

/* precision_ppm is stored in parts per trillion; 1e12 ppm is beyond any real figure and
 * keeps ppt well inside uint64_t, so whatever the reader accepts the writer can write. */
#define MAX_PRECISION_PPM 1e12
#define MAX_PRECISION_PPT 1000000000000000000ull

enum field {
	F_BOOT_ID,
	F_CPU_SIGNATURE,
	F_CPU_MODEL,
	F_CPU_COUNT,
	F_CPU_SET_HASH,
	F_ESTIMATE_VERDICT,
	F_MAX_SHIFT_TICKS,
	F_RATE_MILLIHZ,
	F_PRECISION_PPT,
	F_CREATED_NS,
	FIELD_COUNT
};

static const char *const field_names[FIELD_COUNT] = {
	[F_BOOT_ID] = "boot_id",
	[F_CPU_SIGNATURE] = "cpu_signature",
	[F_CPU_MODEL] = "cpu_model",
	[F_CPU_COUNT] = "cpu_count",
	[F_CPU_SET_HASH] = "cpu_set_hash",
	[F_ESTIMATE_VERDICT] = "estimate_verdict",
	[F_MAX_SHIFT_TICKS] = "max_shift_ticks",
	[F_RATE_MILLIHZ] = "rate_millihz",
	[F_PRECISION_PPT] = "precision_ppt",
	[F_CREATED_NS] = "created_ns",
};

/* Messages echo paths and file content: control characters become '?' so the message
 * stays one printable line whatever the file or the path holds. */
__attribute__((format(printf, 3, 4)))
static void set_message(char *buf, size_t size, const char *fmt, ...)
{
	if (!buf || size == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0)
		buf[0] = '\0';
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static uint64_t fnv1a(uint64_t hash, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= FNV_PRIME;
	}
	return hash;
}

uint64_t cache_checksum(const char *data, size_t len)
{
	return fnv1a(FNV_OFFSET_BASIS, (const unsigned char *)data, len);
}

uint64_t cache_cpu_set_hash(const int *cpu_ids, uint32_t count)
{
	uint64_t hash = FNV_OFFSET_BASIS;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t id = (uint32_t)cpu_ids[i];
		unsigned char bytes[4] = {(unsigned char)id, (unsigned char)(id >> 8),
					  (unsigned char)(id >> 16), (unsigned char)(id >> 24)};
		hash = fnv1a(hash, bytes, sizeof bytes);
	}
	return hash;
}

int cache_default_path(const char *xdg_runtime_dir, char *buf, size_t size)
{
	if (!buf || size == 0)
		return -1;
	struct stat st;
	/* Built without snprintf: this runs on the shim's warm start (see text.h). */
	struct text t = text_start(buf, size);
	/* Another user's directory could hold a file we would trust as our own. */
	if (xdg_runtime_dir && xdg_runtime_dir[0] == '/' && stat(xdg_runtime_dir, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		size_t len = strlen(xdg_runtime_dir);
		text_add(&t, xdg_runtime_dir);
		text_add(&t, xdg_runtime_dir[len - 1] == '/' ? "" : "/");
		text_add(&t, "tscshim.cache");
	} else {
		text_add(&t, "/tmp/tscshim-");
		text_add_u64(&t, geteuid());
		text_add(&t, ".cache");
	}
	if (t.truncated) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

/* Printable ASCII only; the boot id may not hold a space, the model may. */
static bool text_ok(const char *s, size_t len, size_t min_len, size_t max_len, bool spaces)
{
	if (len < min_len || len > max_len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c > 0x7e || c < (spaces ? 0x20 : 0x21))
			return false;
	}
	return true;
}

#define BOOT_ID_MAX (sizeof ((struct cache_record *)0)->boot_id - 1)
#define CPU_MODEL_MAX (sizeof ((struct cache_record *)0)->cpu_model - 1)

/* A terminated string within its array, or SIZE_MAX. */
static size_t bounded_len(const char *s, size_t array_size)
{
	const char *end = memchr(s, '\0', array_size);
	return end ? (size_t)(end - s) : SIZE_MAX;
}

int cache_record_check(const struct cache_record *rec, char *why, size_t why_size)
{
	size_t len = bounded_len(rec->boot_id, sizeof rec->boot_id);
	if (len == SIZE_MAX || !text_ok(rec->boot_id, len, 1, BOOT_ID_MAX, false)) {
		set_message(why, why_size, "boot_id must be 1..%zu printable characters without spaces",
			    BOOT_ID_MAX);
		return -1;
	}
	len = bounded_len(rec->cpu_model, sizeof rec->cpu_model);
	if (len == SIZE_MAX || !text_ok(rec->cpu_model, len, 0, CPU_MODEL_MAX, true)) {
		set_message(why, why_size, "cpu_model must be at most %zu printable characters",
			    CPU_MODEL_MAX);
		return -1;
	}
	if (rec->cpu_count == 0) {
		set_message(why, why_size, "cpu_count must be at least 1");
		return -1;
	}
	if (rec->estimate_verdict > ESTIMATE_INCONCLUSIVE) {
		set_message(why, why_size, "estimate_verdict %u is not a known verdict",
			    rec->estimate_verdict);
		return -1;
	}
	/* Also false for NaN. */
	if (!(rec->precision_ppm >= 0 && rec->precision_ppm <= MAX_PRECISION_PPM)) {
		set_message(why, why_size, "precision_ppm must be within 0..1e12");
		return -1;
	}
	return 0;
}

int cache_format(const struct cache_record *rec, char *buf, size_t size, char *why,
		 size_t why_size)
{
	if (cache_record_check(rec, why, why_size) != 0)
		return -1;
	uint64_t ppt = (uint64_t)(rec->precision_ppm * 1e6 + 0.5);
	int n = snprintf(buf, size,
			 MAGIC "%d\n"
			 "boot_id=%s\n"
			 "cpu_signature=%u\n"
			 "cpu_model=%s\n"
			 "cpu_count=%u\n"
			 "cpu_set_hash=%llu\n"
			 "estimate_verdict=%u\n"
			 "max_shift_ticks=%llu\n"
			 "rate_millihz=%llu\n"
			 "precision_ppt=%llu\n"
			 "created_ns=%llu\n",
			 CACHE_FORMAT_VERSION, rec->boot_id, rec->cpu_signature, rec->cpu_model,
			 rec->cpu_count, (unsigned long long)rec->cpu_set_hash, rec->estimate_verdict,
			 (unsigned long long)rec->max_shift_ticks,
			 (unsigned long long)rec->rate_millihz, (unsigned long long)ppt,
			 (unsigned long long)rec->created_ns);
	if (n < 0 || (size_t)n + CHECKSUM_LINE_LEN + 1 >= size) {
		set_message(why, why_size, "buffer too small");
		return -1;
	}
	int m = snprintf(buf + n, size - (size_t)n, CHECKSUM_KEY "%016llx\n",
			 (unsigned long long)cache_checksum(buf, (size_t)n));
	return n + m;
}

/* Digits only, no sign, no leading zero (but "0"): the writer's form and nothing else.
 * Returns 0, -1 for anything else, -2 for a number above UINT64_MAX. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	if (len == 0 || (len > 1 && s[0] == '0'))
		return -1;
	uint64_t value = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned digit = (unsigned)(s[i] - '0');
		if (value > (UINT64_MAX - digit) / 10)
			return -2;
		value = value * 10 + digit;
	}
	*out = value;
	return 0;
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

static int find_field(const char *key, size_t len)
{
	for (int f = 0; f < FIELD_COUNT; f++)
		if (strlen(field_names[f]) == len && memcmp(field_names[f], key, len) == 0)
			return f;
	return -1;
}

/* One field's value into rec. Returns 0, or -1 with why. */
static int parse_value(int field, const char *v, size_t len, struct cache_record *rec,
		       char *why, size_t why_size)
{
	const char *name = field_names[field];
	if (field == F_BOOT_ID || field == F_CPU_MODEL) {
		bool model = field == F_CPU_MODEL;
		if (!text_ok(v, len, model ? 0 : 1, model ? CPU_MODEL_MAX : BOOT_ID_MAX, model)) {
			set_message(why, why_size, "%s: expected %s printable characters%s", name,
				    model ? "at most 48" : "1..39", model ? "" : " without spaces");
			return -1;
		}
		char *dest = model ? rec->cpu_model : rec->boot_id;
		memcpy(dest, v, len);
		dest[len] = '\0';
		return 0;
	}

	uint64_t x = 0, max = UINT64_MAX, min = 0;
	switch (field) {
	case F_CPU_SIGNATURE: max = UINT32_MAX; break;
	case F_CPU_COUNT: min = 1; max = UINT32_MAX; break;
	case F_ESTIMATE_VERDICT: max = ESTIMATE_INCONCLUSIVE; break;
	case F_PRECISION_PPT: max = MAX_PRECISION_PPT; break;
	default: break;
	}
	int rc = parse_u64(v, len, &x);
	if (rc == -1) {
		set_message(why, why_size, "%s: expected a decimal number without sign or leading zeros",
			    name);
		return -1;
	}
	if (rc == -2 || x < min || x > max) {
		set_message(why, why_size, "%s: out of range %llu..%llu", name,
			    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	switch (field) {
	case F_CPU_SIGNATURE: rec->cpu_signature = (uint32_t)x; break;
	case F_CPU_COUNT: rec->cpu_count = (uint32_t)x; break;
	case F_CPU_SET_HASH: rec->cpu_set_hash = x; break;
	case F_ESTIMATE_VERDICT: rec->estimate_verdict = (uint32_t)x; break;
	case F_MAX_SHIFT_TICKS: rec->max_shift_ticks = x; break;
	case F_RATE_MILLIHZ: rec->rate_millihz = x; break;
	case F_PRECISION_PPT: rec->precision_ppm = (double)x / 1e6; break;
	case F_CREATED_NS: rec->created_ns = x; break;
	default: break;
	}
	return 0;
}

int cache_parse(const char *data, size_t len, struct cache_record *out, char *why,
		size_t why_size)
{
	struct cache_record rec;
	memset(&rec, 0, sizeof rec);

	if (len == 0) {
		set_message(why, why_size, "empty file");
		return CACHE_CORRUPT;
	}
	if (len > CACHE_MAX_SIZE) {
		set_message(why, why_size, "larger than %d bytes", CACHE_MAX_SIZE);
		return CACHE_CORRUPT;
	}
	if (memchr(data, '\0', len)) {
		set_message(why, why_size, "holds a NUL byte");
		return CACHE_CORRUPT;
	}
	if (data[len - 1] != '\n') {
		set_message(why, why_size, "truncated: no final newline");
		return CACHE_CORRUPT;
	}

	/* First line: the magic and the version, checked before the checksum because another
	 * version may sum differently. */
	const char *header_end = memchr(data, '\n', len);
	size_t header_len = (size_t)(header_end - data);
	uint64_t version = 0;
	if (header_len <= sizeof MAGIC - 1 || memcmp(data, MAGIC, sizeof MAGIC - 1) != 0 ||
	    parse_u64(data + sizeof MAGIC - 1, header_len - (sizeof MAGIC - 1), &version) != 0) {
		set_message(why, why_size, "not a tscshim cache (first line is not '" MAGIC "%d')",
			    CACHE_FORMAT_VERSION);
		return CACHE_CORRUPT;
	}
	if (version != CACHE_FORMAT_VERSION) {
		set_message(why, why_size, "format version %llu, expected %d",
			    (unsigned long long)version, CACHE_FORMAT_VERSION);
		return CACHE_CORRUPT;
	}

	/* Last line: the checksum over everything before it. */
	const char *last_nl = len >= 2 ? memrchr(data, '\n', len - 1) : NULL;
	if (!last_nl || last_nl < header_end) {
		set_message(why, why_size, "truncated: no checksum line");
		return CACHE_CORRUPT;
	}
	const char *sum_line = last_nl + 1;
	size_t sum_len = (size_t)(data + len - 1 - sum_line);
	size_t body_len = (size_t)(sum_line - data);
	uint64_t stored = 0;
	if (sum_len != CHECKSUM_LINE_LEN || memcmp(sum_line, CHECKSUM_KEY, sizeof CHECKSUM_KEY - 1) != 0 ||
	    parse_hex64(sum_line + sizeof CHECKSUM_KEY - 1, 16, &stored) != 0) {
		set_message(why, why_size, "truncated or malformed: the last line is not 'checksum=<16 hex digits>'");
		return CACHE_CORRUPT;
	}
	uint64_t computed = cache_checksum(data, body_len);
	if (stored != computed) {
		set_message(why, why_size, "checksum mismatch (stored %016llx, computed %016llx)",
			    (unsigned long long)stored, (unsigned long long)computed);
		return CACHE_CORRUPT;
	}

	/* The fields, between the two. Each pass consumes one line of at least its newline. */
	uint32_t seen = 0;
	const char *p = header_end + 1, *end = sum_line;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)); /* end[-1] is '\n' */
		size_t line_len = (size_t)(eol - p);
		const char *eq = memchr(p, '=', line_len);
		if (!eq) {
			set_message(why, why_size, "a line without '=': '%.*s'",
				    (int)(line_len > 32 ? 32 : line_len), p);
			return CACHE_CORRUPT;
		}
		size_t key_len = (size_t)(eq - p);
		int field = find_field(p, key_len);
		if (field < 0) {
			set_message(why, why_size, "unknown field '%.*s'",
				    (int)(key_len > 32 ? 32 : key_len), p);
			return CACHE_CORRUPT;
		}
		if (seen & (1u << field)) {
			set_message(why, why_size, "duplicate field %s", field_names[field]);
			return CACHE_CORRUPT;
		}
		seen |= 1u << field;
		if (parse_value(field, eq + 1, (size_t)(eol - eq - 1), &rec, why, why_size) != 0)
			return CACHE_CORRUPT;
		p = eol + 1;
	}
	for (int f = 0; f < FIELD_COUNT; f++) {
		if (!(seen & (1u << f))) {
			set_message(why, why_size, "missing field %s", field_names[f]);
			return CACHE_CORRUPT;
		}
	}
	*out = rec;
	return CACHE_OK;
}

/* Retries after a signal are bounded too: a file that keeps failing is not worth it. */
enum { EINTR_RETRIES = 64 };

int cache_read(const char *path, struct cache_record *out, char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	/* O_NOFOLLOW: a symlink fails with ELOOP instead of being opened; O_NONBLOCK: a FIFO
	 * planted at the path cannot hang the open. Everything after looks at the opened file
	 * itself, so nothing can be swapped in between the check and the read. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT || e == ENOTDIR) {
			set_message(err, err_size, "%s: no cache yet (%s)", path, strerror(e));
			return CACHE_MISSING;
		}
		if (e == ELOOP) {
			set_message(err, err_size, "%s: not trusted: a symbolic link", path);
			return CACHE_UNTRUSTED;
		}
		set_message(err, err_size, "%s: cannot open: %s", path, strerror(e));
		return CACHE_IO_ERROR;
	}

	struct stat st;
	int status = CACHE_OK;
	if (fstat(fd, &st) != 0) {
		set_message(err, err_size, "%s: cannot stat: %s", path, strerror(errno));
		status = CACHE_IO_ERROR;
	} else if (!S_ISREG(st.st_mode)) {
		set_message(err, err_size, "%s: not trusted: %s", path,
			    S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		status = CACHE_UNTRUSTED;
	} else if (st.st_uid != geteuid()) {
		set_message(err, err_size, "%s: not trusted: owned by uid %u, not %u", path,
			    (unsigned)st.st_uid, (unsigned)geteuid());
		status = CACHE_UNTRUSTED;
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		set_message(err, err_size, "%s: not trusted: writable by group or others (mode %04o)",
			    path, (unsigned)(st.st_mode & 07777));
		status = CACHE_UNTRUSTED;
	} else if (st.st_size > CACHE_MAX_SIZE) {
		set_message(err, err_size, "%s: not trusted: larger than %d bytes", path,
			    CACHE_MAX_SIZE);
		status = CACHE_UNTRUSTED;
	}
	if (status != CACHE_OK) {
		close(fd);
		return status;
	}

	/* One byte more than allowed, to notice a file that grew after fstat. */
	char buf[CACHE_MAX_SIZE + 1];
	size_t total = 0;
	int retries = 0;
	while (total < sizeof buf) {
		ssize_t n = read(fd, buf + total, sizeof buf - total);
		if (n < 0 && errno == EINTR && retries++ < EINTR_RETRIES)
			continue;
		if (n < 0) {
			set_message(err, err_size, "%s: cannot read: %s", path, strerror(errno));
			close(fd);
			return CACHE_IO_ERROR;
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	if (total > CACHE_MAX_SIZE) {
		set_message(err, err_size, "%s: not trusted: larger than %d bytes", path,
			    CACHE_MAX_SIZE);
		return CACHE_UNTRUSTED;
	}

	char why[160];
	if (cache_parse(buf, total, out, why, sizeof why) != CACHE_OK) {
		set_message(err, err_size, "%s: corrupt: %s", path, why);
		return CACHE_CORRUPT;
	}
	return CACHE_OK;
}

static int write_all(int fd, const char *p, size_t len)
{
	int retries = 0;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR && retries++ < EINTR_RETRIES)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Names are unpredictable enough that nobody can pre-create them all; O_EXCL makes a
 * collision a retry, never a clobber. */
enum { TEMP_ATTEMPTS = 16 };

int cache_write(const char *path, const struct cache_record *rec, char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	char data[CACHE_MAX_SIZE], why[160];
	int len = cache_format(rec, data, sizeof data, why, sizeof why);
	if (len < 0) {
		set_message(err, err_size, "%s: not written: %s", path, why);
		return -1;
	}

	/* For a clear message and to leave such things alone. rename() itself never follows
	 * a symlink and never replaces a directory with a file, so one appearing after this
	 * check is not written through either. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			set_message(err, err_size, "%s: not written: %s in the way", path,
				    S_ISLNK(st.st_mode)  ? "a symbolic link is"
				    : S_ISDIR(st.st_mode) ? "a directory is"
							  : "something other than a regular file is");
			return -1;
		}
	} else if (errno != ENOENT) {
		set_message(err, err_size, "%s: not written: %s", path, strerror(errno));
		return -1;
	}

	char tmp[PATH_MAX];
	int fd = -1, e = 0;
	for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
		uint64_t salt = (counter_read_unfenced() * FNV_PRIME) ^ ((uint64_t)getpid() << 40) ^
				(uint64_t)attempt;
		int n = snprintf(tmp, sizeof tmp, "%s.tmp-%016llx", path, (unsigned long long)salt);
		if (n < 0 || (size_t)n >= sizeof tmp) {
			set_message(err, err_size, "%s: not written: path too long", path);
			return -1;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		set_message(err, err_size, "%s: not written: cannot create a temporary file: %s",
			    path, strerror(errno));
		return -1;
	}

	const char *step = NULL;
	/* The umask could have taken the owner's read bit; the reader needs it. */
	if (fchmod(fd, 0600) != 0)
		step = "chmod";
	else if (write_all(fd, data, (size_t)len) != 0)
		step = "write";
	if (step)
		e = errno;
	if (close(fd) != 0 && !step) {
		step = "close";
		e = errno;
	}
	if (!step && rename(tmp, path) != 0) {
		step = "rename";
		e = errno;
	}
	if (step) {
		unlink(tmp);
		set_message(err, err_size, "%s: not written: %s: %s", path, step, strerror(e));
		return -1;
	}
	return 0;
}

bool cache_matches(const struct cache_record *rec, const char *boot_id, uint32_t cpu_signature,
		   const char *cpu_model, uint32_t cpu_count, uint64_t cpu_set_hash)
{
	if (!rec || !boot_id || !cpu_model || boot_id[0] == '\0')
		return false;
	if (bounded_len(rec->boot_id, sizeof rec->boot_id) == SIZE_MAX ||
	    bounded_len(rec->cpu_model, sizeof rec->cpu_model) == SIZE_MAX)
		return false;
	return strcmp(rec->boot_id, boot_id) == 0 && rec->cpu_signature == cpu_signature &&
	       strcmp(rec->cpu_model, cpu_model) == 0 && rec->cpu_count == cpu_count &&
	       rec->cpu_set_hash == cpu_set_hash;
}
