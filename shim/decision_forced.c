/* The forced decision (decision.h: a cold start at load, or a status query that may
 * measure): what a decision at a read does and, where no record answers, the answer
 * measured now or waited for from another process measuring for the same cache, the
 * costs measured on the opened path, and what was measured kept in the per-user cache.
 * Owns the measuring (record_measure: in a child process, within the estimate budget),
 * the flag that child inherits (decision_measuring_in_child), the cache's lock and what
 * is kept. Finds through shim/decision_find.c (the answer another process left too) and
 * judges through shim/decision.c's steps (shim/decision_judge.h): may not look a record
 * up or judge one by itself. The gate runs it only where measuring is allowed, never at a
 * program's read. */
#define _GNU_SOURCE
#include "decision.h"
#include "absdiff.h"
#include "load_page.h"

#include "clock.h"
#include "cost.h"
#include "decision_judge.h"
#include "record.h"
#include "signals.h"

#include "cache.h"
#include "estimate.h"
#include "refclock.h"
#include "text.h"

#include <stdatomic.h>
#include <string.h>

/* Set while the estimator's child measures: that child, and its threads, inherit it. */
static _Atomic bool measuring_in_child ON_LOAD_PAGE;

bool decision_measuring_in_child(void)
{
	return atomic_load_explicit(&measuring_in_child, memory_order_relaxed);
}

/* Where no record answers and another process is measuring for the same cache, its
 * answer, waited for at most the estimate's budget (record_lock); *lock is held where
 * this process is to measure. True with d->record (from the cache) when that one answers;
 * false with the reason set when it left none. */
static bool measured_by_another_process(struct decision *d, int *lock, bool *none)
{
	const struct option_values *o = d->o;
	uint64_t wait_ns = (o->num[OPT_ESTIMATE_BUDGET_US] + o->num[OPT_CALIBRATE_US]) * 1000 + 5000000;
	*lock = record_lock(cache_path_of(d), wait_ns);
	*none = false;
	if (*lock != RECORD_LOCK_WAITED)
		return false;
	*lock = RECORD_LOCK_NONE;
	struct record_text t;
	if (record_cache_text(cache_path_of(d), &t) && answer_in(d, &t, &d->record) &&
	    (d->record.estimate_verdict != ESTIMATE_INCONCLUSIVE ||
	     refclock_now_ns(CLOCK_MONOTONIC) < d->record.retry_at_ns)) {
		d->source = TSCSHIM_SOURCE_USER_CACHE;
		d->inconclusive = d->record.estimate_verdict == ESTIMATE_INCONCLUSIVE;
		return true;
	}
	*none = true;
	pass_through(d, STATE_REASON_MEASURER_GONE, "another process was measuring and left no answer within the budget");
	return false;
}

/* Why a measurement was inconclusive, for its reason. */
static void describe_inconclusive(const struct option_values *o, const struct measurement *m, char *detail,
				  size_t detail_size)
{
	struct text t = text_start(detail, detail_size);
	text_add(&t, ": ");
	if (m->problem[0]) {
		text_add(&t, m->problem);
		return;
	}
	text_add_u64(&t, m->analysis.loops);
	text_add(&t, " loops, at least ");
	text_add_u64(&t, m->analysis.min_ranges);
	text_add(&t, " ranges per CPU pair (need ");
	text_add_u64(&t, o->num[OPT_ESTIMATE_MIN_LOOPS]);
	text_add(&t, " each)");
}

/* The estimate and the rate measured now, in a child process within the budget, into
 * d->record (inconclusive when the child did not answer), its analysis in *a; previous is
 * the inconclusive record it retries, if any. False (reason set) where nothing may be
 * measured, or the measurement was inconclusive (reason set, the record kept). */
static bool measured_now(struct decision *d, const struct counter_identity *id, const struct cache_record *previous,
			 struct estimate_analysis *a)
{
	struct measurement m;
	const char *why = NULL;
	struct cache_record prior = previous ? *previous : (struct cache_record){0};
	d->key.cpu_signature = id->signature; /* a record measured now is this CPU's */
	d->key.any_cpu_signature = false;
	atomic_store_explicit(&measuring_in_child, true, memory_order_relaxed);
	int rc = record_measure(d->o, &d->key, previous ? &prior : NULL, &d->record, &m, &why);
	atomic_store_explicit(&measuring_in_child, false, memory_order_relaxed);
	/* The estimator's fork ran the program's pthread_atfork handlers on this thread, and
	 * they may have changed its mask (glibc's pthread_sigmask alone unblocks SIGCANCEL):
	 * block every signal again for what follows (the gate restores the mask it saved). */
	uint64_t mask_after_fork;
	d->s.signals_blocked = d->s.signals_blocked && signals_block_all(&mask_after_fork);
	if (rc != 0) {
		pass_through(d, STATE_REASON_SECCOMP, why); /* record_measure's one refusal */
		return false;
	}
	*a = m.analysis;
	d->source = TSCSHIM_SOURCE_MEASURED;
	if (d->record.estimate_verdict != ESTIMATE_INCONCLUSIVE)
		return true;
	char detail[200];
	describe_inconclusive(d->o, &m, detail, sizeof detail);
	record_inconclusive_reason(&d->record, detail, d->r->reason, sizeof d->r->reason);
	d->r->reason_code = STATE_REASON_INCONCLUSIVE;
	return false;
}

/* Into the per-user cache: a record measured now, or costs measured for a record (with
 * the clocksource they were measured under), or the machine-wide record where only its
 * boot id proved it this boot's (the wall clock stepped since it was written: the copy
 * carries the boot's time as the clock reads now, so that the next start's decision finds
 * it at its read without the id). */
static void write_to_cache(struct decision *d, bool costs_now)
{
	uint64_t a = d->record.boot_wall_ns, b = d->key.boot_wall_ns;
	bool copy = d->source == TSCSHIM_SOURCE_SYSTEM_RECORD && abs_diff_u64(a, b) > CACHE_BOOT_WALL_SLACK_NS;
	if (!cache_path_of(d) || !(d->source == TSCSHIM_SOURCE_MEASURED || (costs_now && d->source != TSCSHIM_SOURCE_NONE) ||
				copy))
		return;
	struct cache_record keep = d->record;
	keep.boot_wall_ns = d->key.boot_wall_ns;
	if (costs_now) {
		const struct cost_ps *c = &d->r->cost;
		struct cache_costs set = {c->kernel, c->syscall, c->fenced, c->unfenced, d->r->cost_build, c->fenced_plan, ""};
		memcpy(set.clocksource, d->clocksource, sizeof set.clocksource);
		cache_costs_keep(&keep, &set);
	}
	record_keep(cache_path_of(d), &keep);
}

/* The clock started as the record and the costs say (the decision at a read starts it
 * once its judgement's frame is gone). */
static inline bool start_clock(const struct decision *d)
{
	struct line_setup setup;
	line_setup_of(d, &setup);
	return clock_started(d->r, &setup);
}

/* On a reliable verdict in a forced decision: the record's costs that still hold judge
 * before the path opens; without them the path opens and its costs are measured on it
 * (cost.c), then judged. True when they were measured now. */
static bool measure_costs_unless_held(struct decision *d)
{
	if (costs_that_still_hold(d)) {
		if (worth_serving(d))
			start_clock(d);
		return false;
	}
	if (!start_clock(d))
		return false;
	cost_measure(cost_clock(d->r->served), d->r->rate_millihz, &d->r->cost);
	clock_set_read_plan(cost_read_plan(&d->r->cost, d->r->fenced));
	worth_serving(d);
	return true;
}

void decision_forced(const struct decision_setup *s, struct decision_result *r)
{
	struct decision d;
	begin(&d, s, r);
	if (!key_of_this_boot(&d, true))
		return;
	int lock = RECORD_LOCK_NONE;
	bool none = false, found = record_for_this_boot(&d, true), waited = false;
	if (!found && cache_path_of(&d) && !d.lookup_failed)
		found = waited = measured_by_another_process(&d, &lock, &none);
	if (d.lookup_failed)
		pass_through(&d, d.lookup_failed_code, d.lookup_failed);
	struct counter_identity id;
	if (d.lookup_failed || none || counter_refusal(&d, &id)) {
		record_unlock(lock);
		return;
	}
	struct estimate_analysis analysis;
	bool costs_now = false;
	if (found && d.inconclusive)
		inconclusive_until_retry(&d, waited ? " on another process's start" : " on an earlier start");
	else if ((found || measured_now(&d, &id, d.inconclusive ? &d.record : NULL, &analysis)) &&
		 reliable_verdict(&d, &id, found ? NULL : &analysis))
		costs_now = measure_costs_unless_held(&d);
	if (d.source != TSCSHIM_SOURCE_NONE)
		write_to_cache(&d, costs_now);
	record_unlock(lock);
}
