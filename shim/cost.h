/* The benefit gate's figures: what a call costs here through the real clock_gettime, the
 * system call, and the shim's own path, fenced and unfenced, in this process as loaded
 * (another preloaded library's clock_gettime is the real one here). */
#ifndef SHIM_COST_H
#define SHIM_COST_H

#include "line.h"

#include "benefit.h"
#include "text.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Per-call costs in picoseconds; 0 = not measured. fenced is the cheapest fenced read
 * plan's (shim/line.h: lfence; rdtsc or rdtscp, the counter before or after the line's
 * loads), fenced_plan says which (0: not measured). */
struct cost_ps {
	uint64_t kernel, syscall, fenced, unfenced;
	uint8_t fenced_plan;
	/* Each fenced plan's cost as measured now (TSCSHIM_VERBOSE=2 shows them), in the
	 * order of cost.c's fenced_plans; 0 where not measured (a record's costs, no rdtscp). */
	uint64_t fenced_by_plan[4];
};

/* "lfence, counter first" and the like: a fenced plan as the verbose line names it. */
const char *read_plan_name(unsigned plan);

/* Measures the four for one served clock, timed by the counter at rate_millihz, on the
 * line clock_start published: interleaved blocks, medians, about 50 us at most.
 * Allocation-free, no thread, nothing in the live configuration changed. */
void cost_measure(clockid_t clock, uint64_t rate_millihz, struct cost_ps *out);

/* What the kernel's clock costs a call now, in ps, measured as cost_measure measures it
 * but the cheapest of three short blocks (about 1.5 us where it is the vDSO), timed by the
 * counter at rate_millihz. Nothing needs the path open. */
uint64_t cost_kernel_now_ps(clockid_t clock, uint64_t rate_millihz);

/* Whether the kernel's clock, at now_ps a call, is read the way `cached` says (vDSO or
 * system call): another library preloaded before us may make every read a system call. */
bool cost_still_applies(uint64_t now_ps, const struct cost_ps *cached);

/* How the kernel's clock is read by these figures: the vDSO or a system call. */
enum kernel_path cost_kernel_path(const struct cost_ps *c);

/* "23.4": ps as ns with one decimal. */
void cost_add_ns(struct text *t, uint64_t ps);

/* "the kernel's clock costs 23.4 ns here (a system call), the counter 27.6 ns". */
void cost_describe(struct text *t, const struct cost_ps *c, uint64_t counter_ps);

/* Whether the counter path (fenced or not) is min_gain_pct percent cheaper than the
 * kernel's clock by these figures. */
bool cost_pays(const struct cost_ps *c, bool fenced, unsigned min_gain_pct);

/* The served path's read plan for these costs: unfenced, or the fenced plan measured
 * cheapest (the default where none was). */
static inline unsigned cost_read_plan(const struct cost_ps *c, bool fenced)
{
	if (!fenced)
		return COUNTER_READ_UNFENCED;
	bool usable = read_plan_valid(c->fenced_plan) && (c->fenced_plan & 3) != COUNTER_READ_UNFENCED;
	return usable ? c->fenced_plan : DEFAULT_FENCED_PLAN;
}

#endif
