/* The benefit gate's figures: what a call costs here through the real clock_gettime, the
 * system call, and the shim's own path, fenced and unfenced, in this process as loaded
 * (another preloaded library's clock_gettime is the real one here). */
#ifndef SHIM_COST_H
#define SHIM_COST_H

#include "counter.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Per-call costs in picoseconds; 0 = not measured. fenced is the cheaper of the two
 * ordered reads, fenced_rdtscp says which (false: lfence; rdtsc, also where not measured
 * or the CPU has no rdtscp). */
struct cost_ps {
	uint64_t kernel, syscall, fenced, unfenced;
	bool fenced_rdtscp;
};

/* Measures the four for one served clock, timed by the counter at rate_millihz, on the
 * line clock_start published: interleaved blocks, medians, about 50 us at most.
 * Allocation-free, no thread, nothing in the live configuration changed. */
void cost_measure(clockid_t clock, uint64_t rate_millihz, struct cost_ps *out);

/* Whether the kernel's clock is still read the way `cached` says (vDSO or system call):
 * a few calls, well under a microsecond where it is the vDSO. */
bool cost_still_applies(clockid_t clock, uint64_t rate_millihz, const struct cost_ps *cached);

/* Whether the counter path (fenced or not) is min_gain_pct percent cheaper than the
 * kernel's clock by these figures. */
bool cost_pays(const struct cost_ps *c, bool fenced, unsigned min_gain_pct);

/* The served path's counter read for these costs: unfenced, or the cheaper ordered read. */
static inline enum counter_read cost_counter_read(const struct cost_ps *c, bool fenced)
{
	if (!fenced)
		return COUNTER_READ_UNFENCED;
	return c->fenced_rdtscp ? COUNTER_READ_RDTSCP : COUNTER_READ_LFENCE;
}

#endif
