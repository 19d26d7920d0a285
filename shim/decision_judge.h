/* The judgement's steps that both decisions run, in the same order, on what was found or
 * measured: shim/decision.c's face to the forced decision (shim/decision_forced.c). The
 * steps are defined in shim/decision.c, the three small ones below inline, as they were
 * when the decision was one file. For the decisions' files alone: the gate knows only
 * decision.h. */
#ifndef SHIM_DECISION_JUDGE_H
#define SHIM_DECISION_JUDGE_H

#include "clock.h"
#include "decision_find.h"
#include "record.h"

#include "clocks.h"
#include "counter.h"
#include "estimate.h"
#include "text.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Each step in a line (shim/decision.c says what each finds, and how). Hidden: a call from
 * decision_forced.c is a direct one (decision_find.h). */
#pragma GCC visibility push(hidden)
bool counter_refusal(struct decision *d, struct counter_identity *id); /* no counter, not invariant, ... */
bool reliable_verdict(struct decision *d, const struct counter_identity *id, const struct estimate_analysis *measured);
bool costs_that_still_hold(struct decision *d); /* into r->cost */
bool worth_serving(struct decision *d);         /* the benefit gate on r->cost */
void line_setup_of(const struct decision *d, struct line_setup *out); /* how the clock is to start */
#pragma GCC visibility pop

/* A record found inconclusive, not yet due for its retry: pass through, saying when it is.
 * Inline in each decision, as when the decision was one file. */
static inline void inconclusive_until_retry(struct decision *d, const char *detail)
{
	d->r->source = d->source;
	d->r->rate_millihz = d->record.rate_millihz;
	record_inconclusive_reason(&d->record, detail, d->r->reason, sizeof d->r->reason);
	d->r->reason_code = STATE_REASON_INCONCLUSIVE;
}

/* The line anchored and the counter path opened (the deepest the decision goes: the first
 * line's publication). Inline in each decision, as when the decision was one file: no
 * frame more under the clock's start. */
static inline bool clock_started(struct decision_result *r, const struct line_setup *setup)
{
	const char *err = NULL;
	r->serving = clock_start(setup, &err) == 0;
	if (!r->serving) {
		text_line(r->reason, sizeof r->reason, err, NULL);
		r->reason_code = STATE_REASON_CLOCK_START;
	}
	return r->serving;
}

/* The clock whose costs are measured and checked: the first served one stands for them
 * all. */
static inline clockid_t cost_clock(uint32_t served)
{
	return clock_table[__builtin_ctz(served)].id;
}

#endif
