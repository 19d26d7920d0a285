/* Calibration records: what the estimator and the rate calibration found for a set of
 * CPUs on one boot, so that a process takes them from a file instead of measuring.
 *
 * Two files hold them, in one format:
 *  - the machine-wide record, written by `tscshim calib --save` as root for every online
 *    CPU (default /run/tscshim/calibration), trusted only when root owns it and its
 *    directory and neither is writable by group or others;
 *  - the per-user cache, written by the shim, owned by the user, holding up to
 *    CACHE_RECORDS_MAX records, newest first, for different CPU sets.
 *
 * The file is small text, every line ending in '\n', exactly as the writer produces it:
 *
 *   tscshim-cache 9
 *   <one or more records, each its fields in the order of the field table in cache.c:>
 *   boot_id=<1..39 printable ASCII, no space>
 *   boot_wall_ns=<decimal u64: the boot's wall-clock time, CLOCK_REALTIME less CLOCK_BOOTTIME
 *     when the record was made, 0 = unknown; a process whose own agrees within
 *     CACHE_BOOT_WALL_SLACK_NS is of the same boot without reading the boot id>
 *   cpu_signature=<decimal u32: CPUID leaf 1 EAX>
 *   counter_invariant=<1: CPUID reported an invariant counter when the record was made>
 *   cpus=<the CPU set the estimate covered: lowercase hex, CPU 0 = lowest bit, no leading zeros>
 *   all_cpus=<1: cpus holds every CPU the kernel can bring online this boot
 *     (/sys/devices/system/cpu/possible), so it covers any affinity a thread can be given>
 *   vmclock=<1: the hypervisor's vmclock device (/dev/vmclock0) existed when the record was
 *     made: a serving process maps it and watches its disruption marker; 0: it looks for
 *     none (calib/vmclock.h)>
 *   estimate_verdict=<decimal, an enum estimate_verdict>
 *   max_shift_ticks=<decimal u64>
 *   rate_millihz=<decimal u64, 0 = unknown>
 *   retry_at_ns=<decimal u64: an inconclusive record's CLOCK_MONOTONIC time to measure again, else 0>
 *   retry_interval_ms=<decimal u64: the wait that set retry_at_ns, else 0>
 *   kernel_ps=<decimal u64: per-call cost of the real clock_gettime in ps, 0 = not measured>
 *   syscall_ps=<the same for the clock_gettime system call>
 *   fenced_ps=<the same for the shim's counter path, ordered reads>
 *   unfenced_ps=<the same, unfenced reads>
 *   cost_build=<decimal u64: the shim build that measured the four costs, 0 = none>
 *   fenced_plan=<0..7: how the fenced read that fenced_ps is of reads the counter (its
 *     instruction, and whether before the line's loads; shim/line.h), 0 = not measured>
 *   cost_clocksource=<0..31 printable ASCII: the kernel clocksource the costs were measured
 *     under, empty where /sys could not tell; costs under another are not used (a process
 *     that cannot tell its own takes them as they are)>
 *   kernel_ps_2=... cost_clocksource_2=<the same seven for a second build (glibc and musl
 *     side by side) or clocksource, 0 = none; the first set is the newer>
 *   checksum=<16 lowercase hex digits: FNV-1a 64 over every byte before this line>
 *
 * Decimals are digits only, without sign or leading zeros. Anything else (another order,
 * a missing or repeated field) is corrupt, and the caller measures afresh and rewrites
 * the file. A file of another format version is another build's, not corrupt
 * (CACHE_OTHER_FORMAT): the per-user cache then keeps this build's records beside it, in
 * a file of its own (cache_format_sibling), so that two builds sharing one cache never
 * destroy each other's.
 *
 * A record answers for the set it covered and, when its verdict is consistent, for every
 * subset of it (the bound on the shift between any two of its CPUs holds for fewer CPUs
 * too); a failing or inconclusive verdict answers only for exactly its own set.
 *
 * Parsing and formatting are pure and use neither stdio nor malloc: they run in the
 * preloaded library's constructor. */
#ifndef CALIB_CACHE_H
#define CALIB_CACHE_H

#include "safefile.h"
#include "system.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

#define CACHE_FORMAT_VERSION 9 /* 3: the benefit gate's costs; 4: the build they are of;
				* 5: whether the counter is invariant; 6: costs of two builds, each with its
				* fenced read plan; 7: and the clocksource they were measured under;
				* 8: the boot's wall-clock time, and whether the set holds every CPU;
				* 9: whether the hypervisor's vmclock device exists */
#define CACHE_COSTS_MAX 2       /* builds whose costs one record keeps side by side */
#define CACHE_CLOCKSOURCE_MAX 31 /* characters of a clocksource's name the costs keep */
#define CACHE_MAX_SIZE 4096 /* bytes; a larger file is not ours */
#define CACHE_RECORDS_MAX 4

/* Two readings of one boot's wall-clock time (REALTIME less BOOTTIME) differ only by a
 * step of the wall clock (settimeofday, an NTP step, a leap second) and by the time between
 * the two clock reads: within this, they are the same boot. Another boot began at another
 * time (it began after this one's record was written). Wall-clock times before
 * CACHE_BOOT_WALL_PLAUSIBLE_NS (2020) are a machine with no clock at boot, whose boots may
 * all begin at one time: there the boot id decides. */
#define CACHE_BOOT_WALL_SLACK_NS 1000000ull
#define CACHE_BOOT_WALL_PLAUSIBLE_NS 1577836800000000000ull

/* An inconclusive verdict is measured again after 10 s, then 20 s, ... at most 320 s. */
#define CACHE_RETRY_FIRST_MS 10000
#define CACHE_RETRY_MAX_MS 320000

/* The benefit gate's per-call costs (picoseconds: whole numbers in the file), kept so
 * that a warm start does not measure them again; 0 = not measured. */
struct cache_costs {
	uint64_t kernel_ps, syscall_ps, fenced_ps, unfenced_ps;
	/* The shim build that measured them (shim_build_id()): another build's hot path
	 * costs something else, so its figures are not used. 0 = none (an empty set). */
	uint64_t build;
	/* The fenced read plan measured cheapest (fenced_ps is its cost; shim/line.h), 0 = none. */
	uint32_t fenced_plan;
	/* The kernel clocksource they were measured under ("" where /sys could not tell): the
	 * kernel's cost is that clocksource's, and under another the costs are not used. */
	char clocksource[CACHE_CLOCKSOURCE_MAX + 1];
};

struct cache_record {
	char boot_id[40];          /* /proc/sys/kernel/random/boot_id */
	uint64_t boot_wall_ns;     /* the boot's wall-clock time when recorded, 0 = unknown */
	uint32_t cpu_signature;    /* CPUID leaf 1 EAX */
	/* 1: CPUID reported an invariant counter when this was recorded; a record of this boot
	 * then vouches for the CPU, and a process that finds it asks CPUID nothing. */
	uint32_t counter_invariant;
	struct cpu_mask cpus;      /* the CPUs the estimate covered, at least one */
	uint32_t all_cpus;         /* 1: cpus holds every CPU possible this boot */
	uint32_t vmclock;          /* 1: /dev/vmclock0 existed when this was recorded */
	uint32_t estimate_verdict; /* enum estimate_verdict from calib/estimate.h */
	uint64_t max_shift_ticks;  /* UINT64_MAX = unknown */
	uint64_t rate_millihz;     /* counter rate in mHz, 0 = unknown */
	uint64_t retry_at_ns;      /* see the format above */
	uint64_t retry_interval_ms;
	/* The benefit gate's per-call costs, for up to two builds, newest first. */
	struct cache_costs costs[CACHE_COSTS_MAX];
};

/* Costs above this (1 ms a call) are not a clock read: the field is out of range. */
#define CACHE_COST_MAX_PS 1000000000ull

struct cache_file {
	uint32_t count;
	struct cache_record record[CACHE_RECORDS_MAX]; /* newest first */
};

enum cache_status {
	CACHE_OK = SAFEFILE_OK,
	CACHE_MISSING = SAFEFILE_MISSING,
	CACHE_UNTRUSTED = SAFEFILE_UNTRUSTED,
	CACHE_IO_ERROR = SAFEFILE_IO_ERROR,
	CACHE_CORRUPT,   /* not a well-formed file of this format version */
	CACHE_OTHER_FORMAT, /* a well-marked file of another format version: another build's */
};

/* Where this build keeps its per-user records when the cache at path holds another
 * format version (another build's): "<path>.v<CACHE_FORMAT_VERSION>". Returns 0, or -1
 * when it does not fit in size bytes. */
int cache_format_sibling(const char *path, char *buf, size_t size);

/* FNV-1a 64 over len bytes: the file's checksum, and the build-id's fold. */
uint64_t fnv1a64(const char *data, size_t len);

/* "$XDG_RUNTIME_DIR/tscshim.cache" when xdg_runtime_dir is set, absolute, and an existing
 * directory owned by the effective uid; else "/tmp/tscshim-<euid>.cache". The caller
 * passes the variable's value (NULL in secure-execution mode). Returns 0, or -1 with an
 * empty buf when the path does not fit in size bytes. */
int cache_default_path(const char *xdg_runtime_dir, char *buf, size_t size);
/* The same for a given effective uid, with no call into libc: the shim's load path. */
int cache_default_path_for(const char *xdg_runtime_dir, uid_t euid, char *buf, size_t size);

/* Pure: 0 when rec can be written and read back; otherwise -1 with the reason in why. */
int cache_record_check(const struct cache_record *rec, char *why, size_t why_size);

/* Pure: the file's bytes, checksum line included, NUL-terminated. Returns the length,
 * or -1 (with why) for an invalid record, no record, or a buffer too small. */
int cache_format(const struct cache_file *file, char *buf, size_t size, char *why,
		 size_t why_size);

/* Pure: parses len bytes (any content). Returns CACHE_OK with *out filled, or
 * CACHE_CORRUPT with the reason in why and *out unchanged. */
int cache_parse(const char *data, size_t len, struct cache_file *out, char *why,
		size_t why_size);

/* Reads and parses path under trust (see safefile.h), through buf (at least
 * CACHE_MAX_SIZE + 1 bytes, the caller's: static in the shim, whose stack is small).
 * Returns an enum cache_status; *out is filled only for CACHE_OK; otherwise err gets
 * one line naming the path and the reason. */
int cache_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
	       struct cache_file *out, char *err, size_t err_size);

/* Formats file into buf and writes it atomically (safefile_write), or, with as_link, as
 * a symbolic link's target (safefile_write_link: the machine-wide record, read whole by
 * one readlinkat). */
int cache_write(const char *path, const struct cache_file *file, bool world_readable,
		char *buf, size_t size, char *err, size_t err_size);
int cache_write_link(const char *path, const struct cache_file *file, char *buf, size_t size, char *err,
		     size_t err_size);

/* What a process looks a record up by. The boot is proven by the boot id where the caller
 * read it, else by the boot's wall-clock time: a process reads the boot id only where no
 * record's time agrees with its own (a wall-clock step since, or another boot). */
struct cache_key {
	const char *boot_id;       /* NULL: not read; "" (unknown) never matches */
	uint64_t boot_wall_ns;     /* REALTIME less BOOTTIME now; used where boot_id is NULL */
	uint32_t cpu_signature;
	bool any_cpu_signature;    /* not asked (no CPUID): a record of this boot vouches for it */
	/* The process's allowed CPUs; NULL: not read, and only a consistent record that holds
	 * every possible CPU (all_cpus) answers, as it covers any set. */
	const struct cpu_mask *cpus;
};

/* Pure: whether rec is of the boot key names (its boot id, else its boot's wall-clock
 * time within CACHE_BOOT_WALL_SLACK_NS, both plausible) and CPU. */
bool cache_same_boot(const struct cache_record *rec, const struct cache_key *key);

/* Pure: the index of the record that answers for key (an exact set first, else the
 * first consistent superset), or -1. */
int cache_find(const struct cache_file *file, const struct cache_key *key);

/* Pure: what a file's text answers for key, parsed record by record into one record's
 * room (no struct cache_file: the decision at a read runs on a stack of one page). The
 * record cache_find would pick goes to *out. Returns CACHE_OK (found or not, in *a),
 * CACHE_CORRUPT or CACHE_OTHER_FORMAT with why. */
struct cache_answer {
	bool found;     /* *out answers */
	bool exact;     /* for exactly the key's CPU set */
	bool this_boot; /* some record is of the key's boot and CPU (the CPU set may not fit) */
};
int cache_answer(const char *data, size_t len, const struct cache_key *key, struct cache_record *out,
		 struct cache_answer *a, char *why, size_t why_size);

/* Pure: whether a file's text is a well-marked file of another format version (another
 * build's), by its first line. */
bool cache_text_of_other_format(const char *data, size_t len);


/* Pure: puts rec first; drops records of another boot or CPU, a record for the same
 * CPU set (whose costs of other builds rec takes over), and the oldest beyond
 * CACHE_RECORDS_MAX. */
void cache_insert(struct cache_file *file, const struct cache_record *rec);

/* Pure: the record's costs of build measured under clocksource, all four measured, or NULL.
 * clocksource "" (the caller cannot tell which it is): the newest set of build. */
const struct cache_costs *cache_costs_of(const struct cache_record *rec, uint64_t build, const char *clocksource);

/* Pure: the record's complete sets of costs of build (all four measured), newest first,
 * into out (room entries at most). Returns how many; 0 for a NULL record. */
int cache_costs_of_build(const struct cache_record *rec, uint64_t build, const struct cache_costs **out, int room);

/* Pure: puts c first among the record's costs: it replaces the set of the same build and
 * clocksource; another's is kept (glibc's and musl's side by side, or one build's under
 * two clocksources), the oldest dropped beyond CACHE_COSTS_MAX. */
void cache_costs_keep(struct cache_record *rec, const struct cache_costs *c);

/* Pure: the wait before measuring again after an inconclusive estimate, given the
 * record that held the previous one (NULL: none): 10 s, doubling, capped. */
uint64_t cache_retry_interval_ms(const struct cache_record *previous);

#endif
