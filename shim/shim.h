/* Internal interfaces between the shim's parts. */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include "options.h"

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
	char reason[192];
};
extern struct gate_result gate;
void gate_run(void);

/* stats.c */
enum stat_clock { STAT_MONOTONIC, STAT_MONOTONIC_RAW, STAT_BOOTTIME, STAT_REALTIME, STAT_OTHER, STAT_CLOCKS };
extern bool stats_enabled;
void stats_count(enum stat_clock clock, bool served);
void stats_setup(const char *destination);
/* Writes of the stats that failed, counting a destination found unusable at load as one. */
uint64_t stats_write_failures(void);

#endif
