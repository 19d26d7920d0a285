/* Internal interfaces between the shim's parts. */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include "options.h"
#include "stats_line.h"
#include "system.h"
#include "tscshim.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/time.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

/* interpose.c: the real functions, resolved without ever recursing into ourselves. */
int real_clock_gettime(clockid_t clock, struct timespec *ts);

/* clock.c: the served clocks. */
struct line_setup {
	long double ns_per_tick;  /* calibrated slope of CLOCK_MONOTONIC against the counter */
	uint64_t max_error_ns;
	uint64_t resync_ms;
	uint32_t served;          /* bit set of enum served_clock */
	bool fenced;
};
/* Anchors the first line on the kernel's clocks and opens the TSC path. The hot path,
 * clock_read(), is in line.h. */
int clock_start(const struct line_setup *setup, char *err, size_t err_size);

struct clock_counters {
	uint64_t resyncs, reanchors, fallbacks, largest_error_ns;
	uint64_t kernel_reads;  /* reads past a line's hard end answered from the kernel */
	uint64_t lost_writes;   /* re-synchronizations dropped because another published */
	int active;
	uint64_t mult;
	uint32_t shift;
};
void clock_counters(struct clock_counters *out);

/* gate.c: the load-time decision, and what it found. */
struct gate_result {
	bool active;
	bool from_cache;
	uint64_t rate_millihz;
	uint64_t max_shift_ns;
	uint32_t served;
	bool fenced;
	char reason[TSCSHIM_REASON_SIZE];
	/* Added for the machine-wide record and the CPU-coverage check: */
	const char *source;       /* where the verdict came from: "from the machine-wide record", "from the cache", "measured now", or "" */
	struct cpu_mask covered;  /* the CPUs the verdict covers; empty when none */
};
extern struct gate_result gate;
void gate_run(void);
/* True when the calling thread's allowed CPUs all lie in gate.covered: one
 * sched_getaffinity system call (about 0.3 us), meant for each re-synchronization. */
bool gate_cpu_set_covered(void);

/* stats.c: counts per slot of stats_line.h (each served clock, and one for every other). */
extern bool stats_enabled;
void stats_count(unsigned clock, bool served);
void stats_setup(const char *destination);
/* Writes of the stats that failed, counting a destination found unusable at load as one. */
uint64_t stats_write_failures(void);

#endif
