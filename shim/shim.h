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
/* Closes the TSC path clock_start opened (the benefit gate found it not worth it): every
 * call passes through, the counters say inactive. Before main, one thread. */
void clock_close(void);

/* cost.c: the benefit gate's measurement, after clock_start. Per-call costs in ps of the
 * real clock_gettime, the system call, and the served path fenced and unfenced, for one
 * served clock, timed by the counter at rate_millihz: interleaved blocks, medians, about
 * 50 us at most. Allocation-free, no thread. */
struct cost_ps {
	uint64_t kernel, syscall, fenced, unfenced;
};
void cost_measure(clockid_t clock, uint64_t rate_millihz, struct cost_ps *out);

/* This library's GNU build-id folded to 64 bits (never 0), or 0 if it has none: the key
 * under which its measured costs are cached (shim/build_id.c). */
uint64_t shim_build_id(void);
/* Whether the kernel's clock is still read the way the cached costs say (vDSO or system
 * call): a few calls, well under a microsecond where it is the vDSO. */
bool cost_still_applies(clockid_t clock, uint64_t rate_millihz, const struct cost_ps *cached);

struct clock_counters {
	uint64_t resyncs, reanchors, fallbacks, largest_error_ns;
	uint64_t kernel_reads;  /* reads past a line's hard end answered from the kernel */
	uint64_t lost_writes;   /* re-synchronizations dropped because another published */
	int active;
	bool stopped_uncovered; /* stopped: the affinity widened beyond the verdict's CPUs */
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
	/* The benefit gate: the costs it judged by (all 0 when it did not run), whether they
	 * were measured by this process, and whether it refused to serve. */
	struct cost_ps cost;
	bool cost_measured_now;
	bool not_worth_it;
};
extern struct gate_result gate;
void gate_run(void);
/* True when the calling thread's allowed CPUs all lie in gate.covered: one
 * sched_getaffinity system call (about 0.3 us), meant for each re-synchronization. */
bool gate_cpu_set_covered(void);

/* stats.c: counts per slot of stats_line.h (each served clock, and one for every other).
 * Counting is inline, one thread-local load and one increment, so that the counters that
 * `tscshim ab` turns on cost the measured side as little as possible. Each thread counts
 * in a slot of its own (one cache line), so counting writes no shared line; past
 * STATS_SLOTS threads the last slot is shared and counted atomically (stats_count_slow). */
enum { STATS_SLOTS = 256, STATS_CLOCK_IDS = 32 };
struct stats_slot {
	_Alignas(64) uint64_t count[STAT_CLOCKS][2]; /* [clock][served] */
};
extern bool stats_enabled;
extern __thread struct stats_slot *stats_my_slot __attribute__((tls_model("initial-exec")));
extern struct stats_slot stats_slots[STATS_SLOTS];
extern uint8_t stats_clock_slot[STATS_CLOCK_IDS]; /* by clock id: its counter */
void stats_count_slow(unsigned clock, bool served);

static inline unsigned stats_slot_of(clockid_t id)
{
	return (unsigned)id < STATS_CLOCK_IDS ? stats_clock_slot[id] : STAT_OTHER;
}

static inline void stats_count(unsigned clock, bool served)
{
	struct stats_slot *s = stats_my_slot;
	if (__builtin_expect(s != NULL && s != &stats_slots[STATS_SLOTS - 1], 1))
		s->count[clock][served]++;
	else
		stats_count_slow(clock, served);
}
void stats_setup(const char *destination);
/* Writes of the stats that failed, counting a destination found unusable at load as one. */
uint64_t stats_write_failures(void);

#endif
