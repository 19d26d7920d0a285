/* The judgement on what a decision found (decision.h), and the decision at a read, which
 * finds (shim/decision_find.c) and judges, and measures nothing. Owns the judgement's
 * steps, each named after what it finds: the counter's refusals, the reliability verdict
 * and its reason code, the costs that still hold, the benefit gate, the clock's start; a
 * forced decision runs them too (shim/decision_judge.h). May not measure, fork, or keep
 * a record (shim/decision_forced.c's: at a read, it only marks the cache for the next
 * start to measure at load), nor make a look-up of its own but the clocksource's: the
 * records it reads, it finds through shim/decision_find.c.
 *
 * Each question is answered with what is at hand, a look-up made only where that is
 * ambiguous: the boot and the CPU set as shim/decision_find.c says; the counter from a
 * record of this boot that found it invariant (CPUID otherwise); the costs' clocksource by
 * what the kernel's clock costs now, its name under /sys only where that disagrees. So a
 * decision at a read makes, from the machine-wide record, two system calls of its own (its
 * directory's lstat, the link's readlinkat), from the per-user cache three (open, read,
 * close; root's an fstat more), and reads nothing under /proc or /sys.
 *
 * A decision at a read runs on the claim's page, a stack of under 4 KiB (gate.c): its state
 * is one frame (judged_at_read), a record is parsed into it one at a time (cache_answer),
 * and the clock, whose first publication is the deepest the decision goes, is started
 * once that frame is gone. It never measures: where no record answers it passes through
 * and marks the cache, so that the next start measures at load. */
#define _GNU_SOURCE
#include "steps.h"
#include "decision.h"
#include "absdiff.h"

#include "clock.h"
#include "cost.h"
#include "decision_judge.h"
#include "record.h"
#include "say.h"

#include "benefit.h"
#include "build_id.h"
#include "cache.h"
#include "counter.h"
#include "estimate.h"
#include "text.h"
#include "verdict.h"

#include <string.h>

/* At a read where no record answers (one passed the load's check, and fails now): nothing
 * is measured at a program's read. Pass through, and have the next start measure at load. */
static void none_answers_at_read(struct decision *d)
{
	if (d->lookup_failed) {
		pass_through(d, d->lookup_failed_code, d->lookup_failed);
		return;
	}
	if (cache_path_of(d))
		record_mark_stale(cache_path_of(d));
	pass_through(d, STATE_REASON_NO_RECORD, "no record answers this process at its read (another boot, CPU or CPU set, or unusable); "
			"nothing is measured at a program's read: passing through, the next start measures at load");
}

/* The verdict's reason as a number: which of verdict_decide's branches (calib/verdict.c)
 * the inputs took, in its order (calib/verdict.c writes only the text: a branch added
 * there needs its code here). */
static enum state_reason verdict_reason_code(const struct verdict_inputs *in, const struct verdict *v)
{
	const struct estimate_analysis *a = in->analysis;
	if (!in->counter_present)
		return STATE_REASON_NO_COUNTER;
	if (!in->counter_invariant)
		return STATE_REASON_NOT_INVARIANT;
	if (in->require_tsc_clocksource && strcmp(in->clocksource, "tsc") != 0)
		return STATE_REASON_CLOCKSOURCE;
	if (v->reliable)
		return STATE_REASON_RELIABLE;
	if (in->rate_millihz == 0)
		return STATE_REASON_RATE_UNKNOWN;
	if (!a)
		return STATE_REASON_NO_ESTIMATE;
	if (a->verdict == ESTIMATE_INCONCLUSIVE)
		return STATE_REASON_INCONCLUSIVE;
	if (a->verdict == ESTIMATE_NOT_MONOTONIC)
		return STATE_REASON_NOT_MONOTONIC;
	if (a->verdict != ESTIMATE_CONSISTENT)
		return STATE_REASON_INCONSISTENT;
	return STATE_REASON_MAX_SHIFT;
}

/* The refusals that need no estimate: no counter, not invariant, not the required
 * clocksource. A record of this boot that found the counter invariant vouches for the CPU
 * (the same boot runs on the same CPUs), so CPUID, a VM exit in a guest (about 6 us), is
 * asked only where none does. True, the reason set, when one applies. */
bool counter_refusal(struct decision *d, struct counter_identity *id)
{
	if (d->source != TSCSHIM_SOURCE_NONE && d->record.counter_invariant)
		*id = (struct counter_identity){.present = true, .invariant = true, .signature = d->record.cpu_signature};
	else
		counter_identify_basic(id);
	bool require_tsc = d->o->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0;
	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.require_tsc_clocksource = require_tsc,
		.clocksource = require_tsc ? read_clocksource(d) : d->clocksource,
	};
	struct verdict v;
	if (!verdict_refuse_early(&in, &v))
		return false;
	text_line(d->r->reason, sizeof d->r->reason, v.reason, NULL);
	d->r->reason_code = verdict_reason_code(&in, &v);
	return true;
}

/* The reliability verdict on the record's analysis, or on the one measured now, with its
 * reason, bound, rate and source in r. True where the counter is reliable. */
bool reliable_verdict(struct decision *d, const struct counter_identity *id, const struct estimate_analysis *measured)
{
	struct estimate_analysis from_record = {
		.verdict = (enum estimate_verdict)d->record.estimate_verdict,
		.max_shift_ticks = d->record.max_shift_ticks,
		.loops = UINT64_MAX,
		.min_ranges = UINT32_MAX,
	};
	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.analysis = measured ? measured : &from_record,
		.rate_millihz = d->record.rate_millihz,
		.max_skew_ns = d->o->num[OPT_MAX_SKEW_NS],
		.min_interleavings = (uint32_t)d->o->num[OPT_ESTIMATE_MIN_LOOPS],
	};
	struct verdict v;
	verdict_decide(&in, &v);
	memcpy(d->r->reason, v.reason, sizeof d->r->reason);
	d->r->reason_code = verdict_reason_code(&in, &v);
	d->r->max_shift_ns = v.max_shift_ns;
	d->r->rate_millihz = d->record.rate_millihz;
	d->r->source = d->source;
	return v.reliable;
}

/* Of the sets of costs rec keeps for build, the one measured under the kernel's clock as
 * it is now, or NULL: the set whose kernel figure agrees with the kernel's clock timed now
 * (benefit_kernel_cost_agrees: within 10 %, where the clocksources a host offers differ by
 * 16 % and more; the nearest), or any measured through a system call where the clock is
 * one now (the /sys look below costs 25-45 us on a microVM); where none agrees (another clocksource, or a moment busy
 * enough to move the figure) the set measured under the clocksource /sys names now ("" where
 * /sys cannot tell: the newest). Either way the kernel's clock must still be read the way
 * the set says, vDSO or system call (another interposer may have changed it). */
static const struct cache_costs *costs_of_kernel_now(struct decision *d, const struct cache_record *rec,
						     uint64_t build)
{
	const struct cache_costs *sets[CACHE_COSTS_MAX], *best = NULL;
	int n = cache_costs_of_build(rec, build, sets, CACHE_COSTS_MAX);
	if (n == 0)
		return NULL;
	uint64_t now = cost_kernel_now_ps(cost_clock(d->r->served), d->r->rate_millihz);
	uint64_t best_apart = UINT64_MAX;
	for (int i = 0; !d->clocksource_read && i < n; i++) {
		struct cost_ps then = {
			.kernel = sets[i]->kernel_ps, .syscall = sets[i]->syscall_ps, .fenced = sets[i]->fenced_ps};
		uint64_t apart = abs_diff_u64(now, then.kernel);
		/* A system call's cost hardly depends on the clocksource behind it (1.1 us here,
		 * the clocksources' own reads 20-40 ns), nor would the benefit: any set measured
		 * through a system call applies where the clock is one now. */
		bool agrees = benefit_kernel_cost_agrees((double)now, (double)then.kernel) ||
			      cost_kernel_path(&then) == KERNEL_PATH_SYSCALL;
		if (agrees && cost_still_applies(now, &then) && apart < best_apart) {
			best = sets[i];
			best_apart = apart;
		}
	}
	if (say_level >= 2 && !d->clocksource_read) {
		char text[96];
		struct text t = text_start(text, sizeof text);
		cost_add_ns(&t, now);
		text_add(&t, best ? " ns a call now, as the costs' " : " ns a call now, unlike the costs' ");
		cost_add_ns(&t, (best ? best : sets[0])->kernel_ps);
		say("the kernel's clock costs ", text, best ? " ns: they apply" : " ns: the clocksource's name decides", NULL);
	}
	if (best)
		return best;
	const struct cache_costs *named = cache_costs_of(rec, build, read_clocksource(d));
	struct cost_ps then = {.kernel = named ? named->kernel_ps : 0,
			       .syscall = named ? named->syscall_ps : 0,
			       .fenced = named ? named->fenced_ps : 0};
	return named && cost_still_applies(now, &then) ? named : NULL;
}

/* Those kept for the machine-wide record in the per-user cache (a process measured them
 * there): their own frame, off the decision's. */
static __attribute__((noinline)) bool costs_kept_in_cache(struct decision *d, uint64_t build, struct cost_ps *out)
{
	struct cache_record kept;
	struct record_text t;
	const struct cache_costs *c = NULL;
	if (cache_path_of(d) && record_cache_text(cache_path_of(d), &t) && answer_in(d, &t, &kept))
		c = costs_of_kernel_now(d, &kept, build);
	d->lookup_failed = NULL; /* the verdict stands without them */
	if (c)
		*out = (struct cost_ps){c->kernel_ps, c->syscall_ps, c->fenced_ps, c->unfenced_ps, (uint8_t)c->fenced_plan, {0}};
	return c != NULL;
}

/* The costs the record keeps for this build that still hold (costs_of_kernel_now), into
 * r->cost; where it is the machine-wide record and keeps none of this build, those kept
 * for it in the per-user cache. False when none do. */
bool costs_that_still_hold(struct decision *d)
{
	uint64_t build = shim_build_id();
	const struct cache_costs *sets[CACHE_COSTS_MAX];
	d->r->cost_build = build;
	d->r->cost = (struct cost_ps){0};
	if (cache_costs_of_build(&d->record, build, sets, CACHE_COSTS_MAX) == 0 &&
	    d->source == TSCSHIM_SOURCE_SYSTEM_RECORD)
		return d->r->costs_from_record = costs_kept_in_cache(d, build, &d->r->cost);
	const struct cache_costs *c = costs_of_kernel_now(d, &d->record, build);
	if (c)
		d->r->cost = (struct cost_ps){c->kernel_ps, c->syscall_ps, c->fenced_ps, c->unfenced_ps,
					      (uint8_t)c->fenced_plan, {0}};
	return d->r->costs_from_record = c != NULL;
}

/* The benefit gate on r->cost: true to serve (TSCSHIM_SERVE=always, or the counter is
 * cheaper by the minimum gain), the reason saying why; else every call passes through
 * (the path, if it was opened, closed again: the hot path then costs nothing more than a
 * clock the shim does not serve). */
bool worth_serving(struct decision *d)
{
	struct decision_result *r = d->r;
	uint64_t counter_ps = r->fenced ? r->cost.fenced : r->cost.unfenced;
	unsigned min_gain = (unsigned)d->o->num[OPT_MIN_GAIN_PCT];
	bool pays = cost_pays(&r->cost, r->fenced, min_gain);
	bool serve = pays || d->o->num[OPT_SERVE] == SERVE_ALWAYS;
	char why[TSCSHIM_REASON_SIZE];
	struct text t = text_start(why, sizeof why);
	if (serve) {
		/* The reliability reason stays first: tests and people look for it. */
		text_add(&t, r->reason);
		text_add(&t, pays ? "; " : "; TSCSHIM_SERVE=always: ");
		cost_describe(&t, &r->cost, counter_ps);
	} else {
		clock_close();
		r->serving = false;
		r->not_worth_it = true;
		r->reason_code = STATE_REASON_NOT_WORTH_IT;
		text_add(&t, "pass-through: ");
		cost_describe(&t, &r->cost, counter_ps);
		text_add(&t, r->fenced ? " (fenced), not " : " (unfenced), not ");
		text_add_u64(&t, min_gain);
		text_add(&t, "% cheaper (TSCSHIM_MIN_GAIN_PCT)");
	}
	memcpy(r->reason, why, sizeof r->reason);
	return serve;
}

/* How the clock is to start: on the record's rate and CPU set, the read plan its costs
 * chose, the options' bound. */
void line_setup_of(const struct decision *d, struct line_setup *out)
{
	const struct decision_result *r = d->r;
	*out = (struct line_setup){
		.ns_per_tick = ns_per_tick_at(r->rate_millihz),
		.max_error_ns = d->o->num[OPT_MAX_ERROR_NS],
		.resync_ms = d->o->num[OPT_RESYNC_MS],
		.served = r->served,
		.read_plan = cost_read_plan(&r->cost, r->fenced),
		.covered = d->record.cpus,
		.covers_every_cpu = d->record.all_cpus != 0,
		.watch_disruption = d->record.vmclock != 0,
		.signals_blocked = d->s.signals_blocked,
		.wiped_marked = d->s.wiped_marked,
		.kernel_read_ns = r->cost.kernel / 1000,
	};
}

/* A reliable verdict with no costs of this build under this clocksource, where nothing may
 * be measured: TSCSHIM_SERVE=always serves without them (true); auto passes through,
 * saying why, and where the record is the cache's, has the next start measure them at
 * load. */
static bool serve_without_costs(struct decision *d)
{
	if (d->o->num[OPT_SERVE] == SERVE_ALWAYS)
		return true;
	if (d->source == TSCSHIM_SOURCE_USER_CACHE)
		record_mark_stale(cache_path_of(d));
	d->r->not_worth_it = true;
	pass_through(d, STATE_REASON_NO_COSTS, "pass-through: the record holds no costs of this build under this clocksource "
			"(tscshim calib --save stores them), and nothing is measured at a program's read");
	return false;
}

/* A decision at a read, up to whether the clock starts: in a frame of its own, gone by
 * then (the claim's page is the stack: test/stack-usage.py). True with *setup where it
 * does. */
static __attribute__((noinline)) bool judged_at_read(const struct decision_setup *s, struct decision_result *r,
						     struct line_setup *setup)
{
	struct decision d;
	begin(&d, s, r);
	if (!key_of_this_boot(&d, false))
		return false;
	STEP("decision: the boot's time (vDSO)");
	if (!record_for_this_boot(&d, false)) {
		none_answers_at_read(&d);
		return false;
	}
	STEP("decision: the record parsed, the answer found");
	struct counter_identity id;
	if (counter_refusal(&d, &id))
		return false;
	if (d.inconclusive) {
		inconclusive_until_retry(&d, " on an earlier start");
		return false;
	}
	if (!reliable_verdict(&d, &id, NULL))
		return false;
	STEP("decision: the verdict");
	bool costs_hold = costs_that_still_hold(&d);
	STEP("decision: the costs checked (the kernel's clock timed)");
	if (costs_hold ? !worth_serving(&d) : !serve_without_costs(&d))
		return false;
	line_setup_of(&d, setup);
	STEP("decision: the benefit gate");
	return true;
}

void decision_at_read(const struct decision_setup *s, struct decision_result *r)
{
	struct line_setup setup;
	if (judged_at_read(s, r, &setup)) {
		clock_started(r, &setup);
		STEP("decision: the clock started (anchors, first line published)");
	}
}
