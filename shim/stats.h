/* Per-process call counts by clock (the slots of stats_line.h: each served clock, and one
 * for every other), on while TSCSHIM_STATS is set.
 *
 * Counting is inline, one thread-local load and one increment, so that the counters that
 * `tscshim ab` turns on cost the measured side as little as possible. Each thread counts
 * in a slot of its own (one cache line), so counting writes no shared line; past
 * STATS_SLOTS threads the last slot is shared and counted atomically (stats_count_slow).
 * Who writes the counts out is status.c's business. */
#ifndef SHIM_STATS_H
#define SHIM_STATS_H

#include "stats_line.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { STATS_SLOTS = 256 };
struct stats_slot {
	_Alignas(64) uint64_t count[STAT_CLOCKS][2]; /* [clock][served] */
};
extern bool stats_enabled;
extern __thread struct stats_slot *stats_my_slot __attribute__((tls_model("initial-exec")));
extern struct stats_slot stats_slots[STATS_SLOTS];
void stats_count_slow(unsigned clock, bool served);

/* clock: a served clock or STAT_OTHER (served_clock_slot() gives either). */
static inline void stats_count(unsigned clock, bool served)
{
	struct stats_slot *s = stats_my_slot;
	if (__builtin_expect(s != NULL && s != &stats_slots[STATS_SLOTS - 1], 1))
		s->count[clock][served]++;
	else
		stats_count_slow(clock, served);
}

/* TSCSHIM_STATS at load: where the counts go at exit ("" none, "stderr", or a path
 * pattern, stats_path.h), checked now for whether a write can be expected to succeed;
 * turns counting on. */
void stats_setup(const char *destination);

/* The sums over every thread's slot, [clock][served]. */
void stats_totals(uint64_t total[STAT_CLOCKS][2]);

/* Writes one line where TSCSHIM_STATS says, as this process is now (a worker that forked
 * from its master, or dropped to another user, names its own file (%p) and creates it as
 * itself). A write that cannot be made is counted and said in one line on stderr, if
 * stderr is still the file it was at load (a program may have closed it, and the
 * descriptor may since name one of the program's own files). */
void stats_write(const char *text, size_t len);

/* Writes that failed, counting a destination found unusable at load as one. */
uint64_t stats_write_failures(void);

#endif
