/* The once-per-boot calibration cache: the shim pays for the reliability estimator and a
 * precise rate once per boot, not once per process.
 *
 * The file is small text, every line ending in '\n':
 *
 *   tscshim-cache 1
 *   boot_id=<1..39 printable ASCII, no space>
 *   cpu_signature=<decimal u32>
 *   cpu_model=<0..48 printable ASCII, spaces and '=' allowed>
 *   cpu_count=<decimal u32, >= 1>
 *   cpu_set_hash=<decimal u64>
 *   estimate_verdict=<decimal, an enum estimate_verdict>
 *   max_shift_ticks=<decimal u64>
 *   rate_millihz=<decimal u64, 0 = unknown>
 *   precision_ppt=<decimal u64: precision_ppm in parts per trillion, rounded>
 *   created_ns=<decimal u64>
 *   checksum=<16 lowercase hex digits: FNV-1a 64 over every byte before this line>
 *
 * The fields may come in any order, each exactly once. Decimals are digits only, without
 * sign or leading zeros. A line is split at its first '=', so a value may hold '='.
 * precision_ppm is kept as an integer so the reader never parses floating point; its
 * round trip is exact to 1e-6 ppm.
 *
 * Reading runs inside the preloaded library's constructor: no stdio, no malloc, at most
 * CACHE_MAX_SIZE bytes, and the parser (cache_parse, pure) accepts only what the writer
 * produces. Whatever is wrong, the caller measures afresh. */
#ifndef CALIB_CACHE_H
#define CALIB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CACHE_FORMAT_VERSION 1
#define CACHE_MAX_SIZE 4096 /* bytes; a larger file is not ours */

struct cache_record {
	char boot_id[40];          /* /proc/sys/kernel/random/boot_id */
	uint32_t cpu_signature;    /* CPUID leaf 1 EAX */
	char cpu_model[49];        /* brand string */
	uint32_t cpu_count;        /* CPUs in the allowed set the estimate covered */
	uint64_t cpu_set_hash;     /* hash of the ascending CPU id list (see cache_cpu_set_hash) */
	uint32_t estimate_verdict; /* enum estimate_verdict from calib/estimate.h */
	uint64_t max_shift_ticks;  /* UINT64_MAX = unknown */
	uint64_t rate_millihz;     /* counter rate in mHz, 0 = unknown */
	double precision_ppm;      /* finite, >= 0; stored to 1e-6 ppm */
	uint64_t created_ns;       /* CLOCK_REALTIME when written (set by the caller), information only */
};

enum cache_status {
	CACHE_OK = 0,
	CACHE_MISSING,   /* the file does not exist */
	CACHE_UNTRUSTED, /* exists, but another user could have written it, or it is not a small regular file */
	CACHE_CORRUPT,   /* not a well-formed record of this format version */
	CACHE_IO_ERROR,  /* could not be opened or read for another reason (EACCES, EIO...) */
};

/* FNV-1a 64 over the ids, each as 4 little-endian bytes, in the order given (callers
 * pass the ascending list). Zero ids give the FNV offset basis. */
uint64_t cache_cpu_set_hash(const int *cpu_ids, uint32_t count);

/* FNV-1a 64 over len bytes: the file's checksum. */
uint64_t cache_checksum(const char *data, size_t len);

/* "$XDG_RUNTIME_DIR/tscshim.cache" when xdg_runtime_dir is set, absolute, and an existing
 * directory owned by the effective uid; else "/tmp/tscshim-<euid>.cache". The caller
 * passes the variable's value (NULL in secure-execution mode). Returns 0, or -1 with an
 * empty buf when the path does not fit in size bytes. */
int cache_default_path(const char *xdg_runtime_dir, char *buf, size_t size);

/* Pure: 0 when rec can be written and read back (strings terminated, within their length
 * and character set, verdict known, cpu_count >= 1, precision finite and representable);
 * otherwise -1 with the reason in why. */
int cache_record_check(const struct cache_record *rec, char *why, size_t why_size);

/* Pure: the file's bytes for rec, checksum line included, NUL-terminated. Returns the
 * length, or -1 (with why) for an invalid record or a buffer too small. */
int cache_format(const struct cache_record *rec, char *buf, size_t size, char *why,
		 size_t why_size);

/* Pure: parses len bytes (any content: NULs, no newline, anything). Returns CACHE_OK
 * with *out filled, or CACHE_CORRUPT with the reason in why and *out unchanged. */
int cache_parse(const char *data, size_t len, struct cache_record *out, char *why,
		size_t why_size);

/* Opens without following a symlink and without blocking (a FIFO), checks the opened
 * file itself (regular, owned by geteuid(), not writable by group or others, at most
 * CACHE_MAX_SIZE bytes), reads it and parses it. Returns an enum cache_status; *out is
 * filled only for CACHE_OK. For anything else err gets one line naming the path and the
 * reason. */
int cache_read(const char *path, struct cache_record *out, char *err, size_t err_size);

/* Writes rec to a new file "<path>.tmp-<hex>" in the same directory (O_CREAT|O_EXCL|
 * O_NOFOLLOW, mode 0600) and renames it over path, so readers see the old file or the
 * new one, never a part. Refuses when path exists and is not a regular file (a symlink
 * is neither followed nor replaced, a directory is not replaced). Not fsync'ed: a crash
 * changes the boot id, which voids the record anyway. Returns 0, or -1 with one line in
 * err; no temporary file is left behind on failure. */
int cache_write(const char *path, const struct cache_record *rec, char *err, size_t err_size);

/* True when rec was measured on this boot, this CPU and this CPU set. An empty boot_id
 * (unknown) never matches. */
bool cache_matches(const struct cache_record *rec, const char *boot_id, uint32_t cpu_signature,
		   const char *cpu_model, uint32_t cpu_count, uint64_t cpu_set_hash);

#endif
