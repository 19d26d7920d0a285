/* Whether the counter may serve time here, and why: one pure decision shared by the
 * shim's load-time gate and `tscshim calib`. */
#ifndef CALIB_VERDICT_H
#define CALIB_VERDICT_H

#include "counter.h"
#include "estimate.h"
#include "tscshim.h"

#include <stdbool.h>
#include <stdint.h>

struct verdict_inputs {
	bool counter_present, counter_invariant;
	const struct estimate_analysis *analysis; /* NULL: the estimator did not run */
	uint64_t rate_millihz;                    /* 0: unknown */
	uint64_t max_skew_ns;
	bool require_tsc_clocksource;
	const char *clocksource;                  /* the kernel's current one, or "" */
	uint32_t min_interleavings;               /* the estimator's limit, for the message; 0: 10 */
};

struct verdict {
	bool reliable;
	uint64_t max_shift_ns; /* UINT64_MAX when unknown */
	char reason[TSCSHIM_REASON_SIZE];
};

void verdict_decide(const struct verdict_inputs *in, struct verdict *out);

/* The refusals that need neither a record nor the estimator: no counter, not invariant,
 * not the required clocksource. True with out filled (not reliable) when one applies. */
bool verdict_refuse_early(const struct verdict_inputs *in, struct verdict *out);

/* ticks * 1e9 / rate, saturating. */
uint64_t ticks_at_rate_to_ns(uint64_t ticks, uint64_t rate_millihz);

#endif
