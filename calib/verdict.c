/* Whether the counter may serve time here, and why (calib/verdict.h): one pure decision. */
#include "verdict.h"

#include "text.h"

#include <stdio.h>
#include <string.h>

uint64_t ticks_at_rate_to_ns(uint64_t ticks, uint64_t rate_millihz)
{
	if (rate_millihz == 0 || ticks == UINT64_MAX)
		return UINT64_MAX;
	unsigned __int128 ns = (unsigned __int128)ticks * 1000000000000ull / rate_millihz;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

bool verdict_refuse_early(const struct verdict_inputs *in, struct verdict *out)
{
	memset(out, 0, sizeof *out);
	out->max_shift_ns = UINT64_MAX;
	/* Fixed texts without printf: this runs on every start of a refused machine. */
	static const char no_counter[] = "the CPU has no time-stamp counter";
	static const char not_invariant[] =
		"the CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8)";
	if (!in->counter_present) {
		memcpy(out->reason, no_counter, sizeof no_counter);
	} else if (!in->counter_invariant) {
		memcpy(out->reason, not_invariant, sizeof not_invariant);
	} else if (in->require_tsc_clocksource && strcmp(in->clocksource, "tsc") != 0) {
		struct text t = text_start(out->reason, sizeof out->reason);
		text_add(&t, "the kernel's clocksource is '");
		text_add(&t, in->clocksource);
		text_add(&t, "', not tsc (TSCSHIM_REQUIRE_TSC_CLOCKSOURCE=1)");
	} else {
		return false;
	}
	return true;
}

void verdict_decide(const struct verdict_inputs *in, struct verdict *out)
{
	const struct estimate_analysis *a = in->analysis;
	if (verdict_refuse_early(in, out))
		return;
	out->max_shift_ns = a ? ticks_at_rate_to_ns(a->max_shift_ticks, in->rate_millihz) : UINT64_MAX;

	if (in->rate_millihz == 0) {
		snprintf(out->reason, sizeof out->reason, "the counter's rate is unknown");
	} else if (!a) {
		snprintf(out->reason, sizeof out->reason, "the estimator did not run");
	} else if (a->verdict == ESTIMATE_INCONCLUSIVE) {
		snprintf(out->reason, sizeof out->reason,
			 "estimate inconclusive: %llu loops, at least %u ranges per CPU pair (need %u each)",
			 (unsigned long long)a->loops, a->min_ranges,
			 in->min_interleavings ? in->min_interleavings : 10);
	} else if (a->verdict == ESTIMATE_NOT_MONOTONIC) {
		snprintf(out->reason, sizeof out->reason,
			 "counters not monotonic across CPUs: %llu steps back, largest %llu ticks",
			 (unsigned long long)a->monotonic_violations,
			 (unsigned long long)a->largest_step_back);
	} else if (a->verdict != ESTIMATE_CONSISTENT) {
		snprintf(out->reason, sizeof out->reason, "counters inconsistent: %s (CPU index %u)",
			 estimate_verdict_name(a->verdict), a->worst_cpu);
	} else if (out->max_shift_ns > in->max_skew_ns) {
		snprintf(out->reason, sizeof out->reason,
			 "maximum shift bound %llu ns exceeds TSCSHIM_MAX_SKEW_NS=%llu",
			 (unsigned long long)out->max_shift_ns, (unsigned long long)in->max_skew_ns);
	} else {
		/* The shim's warm start reaches only this branch: no snprintf (see text.h). */
		out->reliable = true;
		struct text t = text_start(out->reason, sizeof out->reason);
		text_add(&t, "invariant TSC, monotonic, same rate, maximum shift bound ");
		text_add_u64(&t, out->max_shift_ns);
		text_add(&t, " ns <= ");
		text_add_u64(&t, in->max_skew_ns);
		text_add(&t, " ns");
	}
}
