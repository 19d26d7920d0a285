/* The decision's steps: what a decision finds, from what the gate gives it (the options
 * that step 1 let through, whether it may measure, the signals' state), in one call at
 * the read it is due at. The gate (gate.c) decides when it runs, holds the claim, and
 * publishes the outcome.
 *   2. the boot, by its wall-clock time (REALTIME less BOOTTIME, through the vDSO);
 *   3. a record: the machine-wide one (where the load's check passed it), then the
 *      per-user cache, that answers this boot and CPU set (an inconclusive one still
 *      waiting for its retry time means: pass through without measuring). The boot id is
 *      read only where no record's boot time agrees with this one's (a wall-clock step
 *      since, or another boot), the CPU set only where no record holds every CPU the boot
 *      can bring online;
 *   4. the counter: no invariant TSC, or not the required clocksource (CPUID only when
 *      no record of this boot vouches for the CPU);
 *   5. else measured, in a child process within the budget: only in a forced decision;
 *   6. the reliability verdict;
 *   7. the costs a record keeps for this build whose kernel cost is today's (a few calls
 *      of the kernel's clock tell; where none agrees, the clocksource's name decides),
 *      and the benefit gate judged on them: with TSCSHIM_SERVE=auto, a counter that does
 *      not cost at least TSCSHIM_MIN_GAIN_PCT percent less than the kernel's clock means
 *      pass-through, and the clock is never started;
 *   8. the clock started and, in a forced decision where no record's costs applied, the
 *      costs measured once on its path (cost.c) and the gate judged on them (the path
 *      closed again when the counter does not pay);
 *   9. the record kept: one measured now, or costs measured for a record, written to the
 *      per-user cache (after step 8, so that the costs go with it); then whatever step
 *      3 took (the measuring lock) is released, in that one place (decision_run).
 * Each step is a function below, named after it, taking what it needs and returning what
 * the next needs, and writing only the decision under way (struct decision). Nothing
 * here runs at a read but look-ups: the estimator and the cost measurement only in a
 * forced decision. A decision at a read that finds the machine-wide record makes five
 * system calls (its directory's lstat, open, fstat, read, close) and reads nothing under /proc
 * or /sys unless one of the questions above is ambiguous. Buffers live in static storage:
 * one decision runs at a time in an address space (the gate's claim). */
#define _GNU_SOURCE
#include "decision.h"
#include "load_page.h"

#include "clock.h"
#include "cost.h"
#include "record.h"
#include "say.h"
#include "signals.h"

#include "benefit.h"
#include "build_id.h"
#include "cache.h"
#include "counter.h"
#include "estimate.h"
#include "options.h"
#include "raw_syscall.h"
#include "refclock.h"
#include "system.h"
#include "text.h"
#include "verdict.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The decision under way ends here, passing through: written through r, published once
 * by the gate. */
static void pass_through(struct decision_result *r, const char *reason)
{
	text_line(r->reason, sizeof r->reason, reason, NULL);
	r->serving = false;
}

/* What step 3 found, and what steps 4 to 9 need of it. */
struct found_record {
	const struct cache_record *record; /* NULL: none answered, measure */
	enum tscshim_source source;
	const char *cache_path;            /* the per-user cache, NULL for none */
	bool keep_in_cache;                /* costs measured for it may go to the cache */
	bool inconclusive_waiting;         /* an inconclusive record not yet due for a retry */
	const char *inconclusive_detail;
	int lock;                          /* held from a measurement until step 9 */
};

/* The decision under way: written only by the thread that holds the claim, on the page of
 * the claim and the record buffers (record_decision_state). The look-ups a question needs
 * are made once, where it is asked (the key says which were made). */
struct decision {
	struct decision_result r;              /* the outcome, published when the decision ends */
	struct decision_setup setup;           /* what the gate gave (step 5 may find the signals
					        * unblocked again after its fork) */
	struct cache_record record;            /* the record found, copied: the buffer it was
					        * parsed in is read into again */
	const struct option_values *o;
	struct cpu_mask cpus;                  /* key.cpus points here once read */
	char boot_id[sizeof ((struct cache_record *)0)->boot_id]; /* key.boot_id, once read */
	char clocksource[CACHE_CLOCKSOURCE_MAX + 1]; /* "" where /sys cannot tell */
	bool clocksource_read;
	struct cache_key key;
	struct found_record found;
	bool may_measure;                  /* a forced decision */
	const char *lookup_failed;         /* why a look-up the decision needed failed */
};
_Static_assert(sizeof(struct decision) <= RECORD_DECISION_STATE_SIZE, "the decision's state fits its room");
#define this_call (((struct decision *)record_decision_state())->setup)

static const char no_proc[] = "cannot read /proc/sys/kernel/random/boot_id (no /proc?): no record can be "
			      "trusted or kept without the boot's id; passing through at once, nothing measured";

/* The CPUs the process may run on, which are the main thread's (the process id's), not
 * those of whichever thread read the clock first: that one may be pinned to one CPU among
 * several others. Two system calls; asked only where no record covers every CPU. */
static bool read_cpu_set(struct decision *d)
{
	int pid = (int)raw_syscall4(SYS_getpid, 0, 0, 0, 0);
	if (cpu_mask_allowed_of(pid, &d->cpus) < 1 && cpu_mask_allowed(&d->cpus) < 1) {
		d->lookup_failed = "cannot read the CPU affinity (more than 1024 CPUs?)";
		return false;
	}
	d->key.cpus = &d->cpus;
	return true;
}

/* The boot's id (three system calls under /proc): asked only where the boot's time is
 * ambiguous, and by a forced decision, whose record names it. */
static bool read_boot(struct decision *d)
{
	if (read_boot_id(d->boot_id, sizeof d->boot_id) != 0 || !d->boot_id[0]) {
		d->lookup_failed = no_proc;
		return false;
	}
	d->key.boot_id = d->boot_id;
	return true;
}

/* The kernel's clocksource (three system calls under /sys): asked only where the costs'
 * kernel figure disagrees with today's, where TSCSHIM_REQUIRE_TSC_CLOCKSOURCE asks it, and
 * by a forced decision, which keeps costs under its name. "" where /sys cannot tell. */
static const char *read_clocksource(struct decision *d)
{
	if (!d->clocksource_read && read_current_clocksource(d->clocksource, sizeof d->clocksource) != 0)
		d->clocksource[0] = '\0';
	d->clocksource_read = true;
	return d->clocksource;
}

static bool any_of_this_boot(const struct cache_file *f, const struct cache_key *key)
{
	for (uint32_t i = 0; i < f->count && i < CACHE_RECORDS_MAX; i++)
		if (cache_same_boot(&f->record[i], key))
			return true;
	return false;
}

/* The record in f that answers this process, or NULL. Asked first by the boot's time and
 * for every CPU; the CPU set is read where a record of this boot holds fewer CPUs, the boot
 * id where no record's boot time is this boot's. NULL with lookup_failed set when one of
 * them cannot be read. */
static const struct cache_record *answer_in(struct decision *d, const struct cache_file *f)
{
	while (f) {
		int i = cache_find(f, &d->key);
		if (i >= 0)
			return &f->record[i];
		bool this_boot = any_of_this_boot(f, &d->key);
		if (this_boot && !d->key.cpus && read_cpu_set(d))
			continue;
		if (!this_boot && !d->key.boot_id && read_boot(d))
			continue;
		break;
	}
	return NULL;
}

/* Step 2: the boot, by its wall-clock time. A forced decision reads the boot id and the
 * CPU set at once: it may measure, and its record names both. Without /proc (seen at
 * load) no record could be trusted or kept. */
static bool step2_boot(struct decision *d)
{
	if (this_call.boot_unknown) {
		pass_through(&d->r, no_proc);
		return false;
	}
	d->key = (struct cache_key){.boot_wall_ns = refclock_boot_wall_ns(), .any_cpu_signature = true};
	if (d->may_measure && (!read_boot(d) || !read_cpu_set(d))) {
		pass_through(&d->r, d->lookup_failed);
		return false;
	}
	if (d->may_measure)
		read_clocksource(d);
	return true;
}

/* Step 3 at a read, where nothing is measured: no record answers this process (it passed
 * the checks at load, and failed at the read). Pass through, and have the next start
 * measure at load. */
static bool step3_none_at_read(struct decision_result *r, const char *cache_path)
{
	if (cache_path)
		record_mark_stale(cache_path);
	pass_through(r, "no record answers this process at its read (another boot, CPU or CPU set, or "
			"unusable); nothing is measured at a program's read: passing through, the next start "
			"measures at load");
	return false;
}

/* Step 3's second half: the per-user cache. At load (may_measure) a process with no answer
 * measures, waiting, at most the estimate budget, for another process that is measuring
 * for the cache; at a read it passes through. Returns false (reason set) when the decision
 * ends here. */
static bool step3_cache(struct decision *d)
{
	struct found_record *f = &d->found;
	const char *path = f->cache_path;
	struct decision_result *r = &d->r;
	const struct cache_record *rec = path ? answer_in(d, record_cache_file(path)) : NULL;
	if (d->lookup_failed) {
		pass_through(r, d->lookup_failed);
		return false;
	}
	uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
	if (rec && rec->estimate_verdict == ESTIMATE_INCONCLUSIVE && now < rec->retry_at_ns) {
		*f = (struct found_record){rec, TSCSHIM_SOURCE_USER_CACHE, path, false, true,
					   " on an earlier start", RECORD_LOCK_NONE};
		return true;
	}
	if (rec && rec->estimate_verdict != ESTIMATE_INCONCLUSIVE) {
		f->record = rec;
		f->source = TSCSHIM_SOURCE_USER_CACHE;
		f->keep_in_cache = true;
		return true;
	}
	if (!d->may_measure)
		return step3_none_at_read(r, path);
	if (rec && say_level >= 2)
		say("cache ", path, ": an inconclusive record is due for a retry; measuring", NULL);
	f->record = rec; /* the previous inconclusive one, for the retry interval */
	if (!path)
		return true;
	const struct option_values *o = d->o;
	uint64_t wait_ns = (o->num[OPT_ESTIMATE_BUDGET_US] + o->num[OPT_CALIBRATE_US]) * 1000 + 5000000;
	f->lock = record_lock(path, wait_ns);
	if (f->lock != RECORD_LOCK_WAITED)
		return true;
	f->lock = RECORD_LOCK_NONE;
	rec = answer_in(d, record_cache_file(path));
	if (!rec || (rec->estimate_verdict == ESTIMATE_INCONCLUSIVE &&
		     refclock_now_ns(CLOCK_MONOTONIC) >= rec->retry_at_ns)) {
		pass_through(r, "another process was measuring and left no answer within the budget");
		return false;
	}
	*f = (struct found_record){rec, TSCSHIM_SOURCE_USER_CACHE, path, true,
				   rec->estimate_verdict == ESTIMATE_INCONCLUSIVE,
				   " on another process's start", RECORD_LOCK_NONE};
	return true;
}

/* Step 3: the machine-wide record (at a read, only where the load's check passed it),
 * else the per-user cache. */
static bool step3_records(struct decision *d)
{
	struct found_record *f = &d->found;
	*f = (struct found_record){.lock = RECORD_LOCK_NONE};
	f->cache_path = record_cache_path(d->o);
	if (d->may_measure || record_system_passed_load()) {
		const struct cache_file *file = record_system_file(d->o);
		const struct cache_record *rec = answer_in(d, file);
		if (d->lookup_failed) {
			pass_through(&d->r, d->lookup_failed);
			return false;
		}
		/* Inconclusive: the process measures for itself. */
		if (rec && rec->estimate_verdict != ESTIMATE_INCONCLUSIVE) {
			d->record = *rec;
			f->record = &d->record;
			f->source = TSCSHIM_SOURCE_SYSTEM_RECORD;
			return true;
		}
		if (file && say_level >= 2)
			say("machine-wide record ", d->o->text[OPT_SYSTEM_RECORD], ": not for this boot, CPU or CPU set",
			    NULL);
	}
	return step3_cache(d);
}

/* Step 4: refusals that need no estimate: no counter, not invariant, not the required
 * clocksource. True with *v filled (not reliable) when one applies. */
static bool step4_counter_refuses(const struct decision *d, const struct counter_identity *id, struct verdict *v)
{
	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.require_tsc_clocksource = d->o->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = d->clocksource,
	};
	return verdict_refuse_early(&in, v);
}



/* Set while step 5's child measures: that child, and its threads, inherit it. */
static _Atomic bool measuring_in_child ON_LOAD_PAGE;

/* The record measured now (step 5), kept for step 9. */
static struct cache_record measured_record;

/* Step 5's reason for an inconclusive measurement, into detail. */
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

/* Step 5, at load only: measured in a child. Returns the record (inconclusive when the
 * child did not answer), with its analysis in *a; NULL (reason set) when nothing may be
 * measured. */
static const struct cache_record *step5_measure(struct decision_result *r, const struct option_values *o,
						const struct cache_key *key, struct found_record *f,
						struct estimate_analysis *a)
{
	static char detail[200];
	struct measurement m;
	const char *why = NULL;
	atomic_store_explicit(&measuring_in_child, true, memory_order_relaxed);
	int rc = record_measure(o, key, f->record, &measured_record, &m, &why);
	atomic_store_explicit(&measuring_in_child, false, memory_order_relaxed);
	/* The estimator's fork ran the program's pthread_atfork handlers on this thread, and
	 * they may have changed its mask (glibc's pthread_sigmask alone unblocks SIGCANCEL):
	 * block every signal again for the steps that follow. */
	uint64_t mask_after_fork;
	this_call.signals_blocked = this_call.signals_blocked && signals_block_all(&mask_after_fork);
	if (rc != 0) {
		pass_through(r, why);
		return NULL;
	}
	*a = m.analysis;
	f->source = TSCSHIM_SOURCE_MEASURED;
	f->record = &measured_record;
	f->keep_in_cache = f->cache_path != NULL;
	if (measured_record.estimate_verdict == ESTIMATE_INCONCLUSIVE) {
		describe_inconclusive(o, &m, detail, sizeof detail);
		f->inconclusive_waiting = true;
		f->inconclusive_detail = detail;
	}
	return f->record;
}

/* Step 6: the reliability verdict from a record's analysis. */
static void step6_verdict(const struct option_values *o, const struct counter_identity *id,
			  const struct cache_record *rec, const struct estimate_analysis *measured,
			  struct verdict *v)
{
	struct estimate_analysis from_record = {
		.verdict = (enum estimate_verdict)rec->estimate_verdict,
		.max_shift_ticks = rec->max_shift_ticks,
		.loops = UINT64_MAX,
		.min_ranges = UINT32_MAX,
	};
	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.analysis = measured ? measured : &from_record,
		.rate_millihz = rec->rate_millihz,
		.max_skew_ns = o->num[OPT_MAX_SKEW_NS],
		.min_interleavings = (uint32_t)o->num[OPT_ESTIMATE_MIN_LOOPS],
	};
	verdict_decide(&in, v);
}

/* Step 8's start: the line anchored and the counter path opened. */
static bool step8_clock_start(struct decision_result *r, const struct option_values *o, const struct cache_record *rec)
{
	struct line_setup setup = {
		.ns_per_tick = ns_per_tick_at(r->rate_millihz),
		.max_error_ns = o->num[OPT_MAX_ERROR_NS],
		.resync_ms = o->num[OPT_RESYNC_MS],
		.served = r->served,
		.read_plan = cost_read_plan(&r->cost, r->fenced),
		.covered = rec->cpus,
		.covers_every_cpu = rec->all_cpus != 0,
		.signals_blocked = this_call.signals_blocked,
		.wiped_marked = this_call.wiped_marked,
	};
	const char *err = NULL;
	if (clock_start(&setup, &err) != 0) {
		pass_through(r, err);
		return false;
	}
	r->serving = true;
	return true;
}

/* ---- step 8: the benefit gate ---- */

/* "23.4": ps as ns with one decimal. */
static void text_add_ps(struct text *t, uint64_t ps)
{
	uint64_t tenths = (ps + 50) / 100;
	text_add_u64(t, tenths / 10);
	char frac[3] = {'.', (char)('0' + tenths % 10), '\0'};
	text_add(t, frac);
}

/* The benefit gate's figures in ns, from the picoseconds a record keeps (the kernel's
 * two; enough to tell which way the kernel's clock is read). */
static struct cost kernel_costs_ns(const struct cost_ps *c)
{
	return (struct cost){.kernel_ns = c->kernel / 1e3, .syscall_ns = c->syscall / 1e3};
}

/* The clock whose costs are measured and checked: the first served one stands for them all. */
static clockid_t cost_clock(uint32_t served)
{
	return clock_table[__builtin_ctz(served)].id;
}

static void text_add_ps(struct text *t, uint64_t ps);

/* Among the costs rec keeps for this build, the set measured under the kernel's clock as
 * it is now, or NULL: the set whose kernel figure agrees with a few calls timed now (the
 * nearest); where none agrees (another clocksource, or a host busier or slower than when
 * they were measured), the one measured under the clocksource /sys names now ("" where
 * /sys cannot tell: the newest; cache_costs_of). Either way the kernel's clock must still
 * be read the way the set says, vDSO or system call (another interposer may have changed
 * it). TSCSHIM_REQUIRE_TSC_CLOCKSOURCE read the name already: it decides. */
static const struct cache_costs *costs_for_kernel_now(struct decision *d, const struct cache_record *rec,
						      uint64_t build)
{
	const struct cache_costs *candidates[CACHE_COSTS_MAX];
	int n = cache_costs_of_build(rec, build, candidates, CACHE_COSTS_MAX);
	if (n == 0)
		return NULL;
	uint64_t now_ps = cost_kernel_now_ps(cost_clock(d->r.served), d->r.rate_millihz);
	const struct cache_costs *best = NULL;
	for (int i = 0; !d->clocksource_read && i < n; i++) {
		const struct cache_costs *c = candidates[i];
		struct cost_ps as_ps = {.kernel = c->kernel_ps, .syscall = c->syscall_ps};
		if (!benefit_kernel_cost_agrees((double)now_ps, (double)c->kernel_ps) || !cost_still_applies(now_ps, &as_ps))
			continue;
		uint64_t apart = now_ps > c->kernel_ps ? now_ps - c->kernel_ps : c->kernel_ps - now_ps;
		uint64_t best_apart = best ? (now_ps > best->kernel_ps ? now_ps - best->kernel_ps : best->kernel_ps - now_ps)
					   : UINT64_MAX;
		if (apart < best_apart)
			best = c;
	}
	if (say_level >= 2 && !d->clocksource_read) {
		char text[96];
		struct text t = text_start(text, sizeof text);
		text_add_ps(&t, now_ps);
		text_add(&t, best ? " ns a call now, as the costs' " : " ns a call now, unlike the costs' ");
		text_add_ps(&t, (best ? best : candidates[0])->kernel_ps);
		say("the kernel's clock costs ", text, best ? " ns: they apply" : " ns: the clocksource's name decides", NULL);
	}
	if (best)
		return best;
	const struct cache_costs *named = cache_costs_of(rec, build, read_clocksource(d));
	struct cost_ps as_ps = {.kernel = named ? named->kernel_ps : 0, .syscall = named ? named->syscall_ps : 0};
	return named && cost_still_applies(now_ps, &as_ps) ? named : NULL;
}

/* Step 7: the costs a record keeps (the one the verdict came from; where that is the
 * machine-wide record and keeps none of this build, those a process kept for it in the
 * per-user cache), measured under the kernel's clock as it is now. Returns false when
 * none apply. */
static bool step7_record_costs(struct decision *d, const struct cache_record *rec)
{
	struct decision_result *r = &d->r;
	uint64_t build = shim_build_id();
	r->cost_build = build;
	const struct cache_costs *any[CACHE_COSTS_MAX];
	if (cache_costs_of_build(rec, build, any, CACHE_COSTS_MAX) == 0 &&
	    d->found.source == TSCSHIM_SOURCE_SYSTEM_RECORD && d->found.cache_path) {
		rec = answer_in(d, record_cache_file(d->found.cache_path));
		d->lookup_failed = NULL; /* the verdict stands without them */
	}
	const struct cache_costs *c = costs_for_kernel_now(d, rec, build);
	if (!c) {
		r->cost = (struct cost_ps){0};
		return false;
	}
	r->cost = (struct cost_ps){c->kernel_ps, c->syscall_ps, c->fenced_ps, c->unfenced_ps, (uint8_t)c->fenced_plan, {0}};
	r->costs_from_record = true;
	return true;
}

/* "the kernel's clock costs 23.4 ns here (a system call), the counter 27.6 ns". */
static void describe_costs(struct text *t, const struct cost_ps *c, uint64_t counter_ps)
{
	struct cost ns = kernel_costs_ns(c);
	text_add(t, "the kernel's clock costs ");
	text_add_ps(t, c->kernel);
	text_add(t, benefit_kernel_path(&ns) == KERNEL_PATH_SYSCALL ? " ns here (a system call), the counter "
								    : " ns here, the counter ");
	text_add_ps(t, counter_ps);
	text_add(t, " ns");
}

/* The benefit gate on r->cost: true to serve (TSCSHIM_SERVE=always, or the counter is
 * cheaper by the minimum gain), with the reason saying why; else every call passes
 * through (the path, if it was opened, closed again: the hot path then costs nothing
 * more than a clock the shim does not serve). */
static bool judge_benefit(struct decision_result *r, const struct option_values *o)
{
	uint64_t counter_ps = r->fenced ? r->cost.fenced : r->cost.unfenced;
	unsigned min_gain = (unsigned)o->num[OPT_MIN_GAIN_PCT];
	bool pays = cost_pays(&r->cost, r->fenced, min_gain);
	char why[TSCSHIM_REASON_SIZE];
	struct text t = text_start(why, sizeof why);
	bool serve = pays || o->num[OPT_SERVE] == SERVE_ALWAYS;
	if (serve) {
		/* The reliability reason stays first: tests and people look for it. */
		text_add(&t, r->reason);
		text_add(&t, pays ? "; " : "; TSCSHIM_SERVE=always: ");
		describe_costs(&t, &r->cost, counter_ps);
	} else {
		clock_close();
		r->serving = false;
		r->not_worth_it = true;
		text_add(&t, "pass-through: ");
		describe_costs(&t, &r->cost, counter_ps);
		text_add(&t, r->fenced ? " (fenced), not " : " (unfenced), not ");
		text_add_u64(&t, min_gain);
		text_add(&t, "% cheaper (TSCSHIM_MIN_GAIN_PCT)");
	}
	memcpy(r->reason, why, sizeof r->reason);
	return serve;
}

/* Steps 7 and 8 at a read with no record's costs for this build: nothing is measured
 * there. TSCSHIM_SERVE=always serves without them; auto passes through, saying why, and
 * has the next start measure them at load where the cache would keep them. */
static bool steps7_8_no_costs_at_read(struct decision *d, const struct cache_record *rec)
{
	struct decision_result *r = &d->r;
	if (d->o->num[OPT_SERVE] == SERVE_ALWAYS)
		return step8_clock_start(r, d->o, rec);
	if (d->found.cache_path && d->found.keep_in_cache)
		record_mark_stale(d->found.cache_path);
	r->not_worth_it = true;
	pass_through(r, "pass-through: the record holds no costs of this build under this clocksource "
			"(tscshim calib --save stores them), and nothing is measured at a program's read");
	return false;
}

/* Steps 7 and 8 on a reliable verdict. A record's costs judge before the path opens: where
 * the counter does not pay (a host whose kernel reads the TSC itself) the decision
 * anchors nothing, marks no page wiped on fork and publishes nothing. Without them the
 * path opens and, at load only, its costs are measured on it. Returns true when the
 * costs were measured now (step 9 keeps them). */
static bool steps7_8_benefit(struct decision *d, const struct cache_record *rec)
{
	struct decision_result *r = &d->r;
	const struct option_values *o = d->o;
	if (step7_record_costs(d, rec)) {
		if (judge_benefit(r, o))
			step8_clock_start(r, o, rec);
		return false;
	}
	if (!d->may_measure) {
		steps7_8_no_costs_at_read(d, rec);
		return false;
	}
	if (!step8_clock_start(r, o, rec))
		return false;
	cost_measure(cost_clock(r->served), r->rate_millihz, &r->cost);
	clock_set_read_plan(cost_read_plan(&r->cost, r->fenced));
	judge_benefit(r, o);
	return true;
}

/* Step 9, whatever the verdict: a record measured now, or costs measured for a record
 * (with the clocksource they were measured under), into the per-user cache. */
static void step9_keep(const struct decision *d, const struct cache_record *rec, bool costs_now)
{
	const struct decision_result *r = &d->r;
	const struct found_record *f = &d->found;
	if (!f->cache_path || !rec)
		return;
	if (f->source != TSCSHIM_SOURCE_MEASURED && !(costs_now && f->keep_in_cache) &&
	    !(costs_now && f->source == TSCSHIM_SOURCE_SYSTEM_RECORD))
		return;
	struct cache_record keep = *rec;
	if (costs_now) {
		struct cache_costs c = {r->cost.kernel, r->cost.syscall, r->cost.fenced, r->cost.unfenced, r->cost_build,
					r->cost.fenced_plan, ""};
		memcpy(c.clocksource, d->clocksource, sizeof c.clocksource);
		cache_costs_keep(&keep, &c);
	}
	record_keep(f->cache_path, &keep);
}

/* ---- the decision ---- */

/* Step 4's identity of the counter: a record of this boot that says the counter was
 * invariant vouches for the CPU (the same boot runs on the same CPUs), so the process
 * asks CPUID nothing, each a VM exit in a guest (about 6 us); else CPUID. */
static void counter_identity(const struct found_record *f, struct counter_identity *id)
{
	if (f->source != TSCSHIM_SOURCE_NONE && f->record->counter_invariant) {
		*id = (struct counter_identity){.present = true, .invariant = true,
						.signature = f->record->cpu_signature};
		return;
	}
	counter_identify_basic(id);
}

/* Steps 4 to 9 on what steps 2 and 3 found (step 5 and the cost measurement only in a
 * forced decision). */
static void steps4_to_9(struct decision *d)
{
	struct decision_result *r = &d->r;
	const struct option_values *o = d->o;
	struct found_record *found = &d->found;
	struct counter_identity id;
	struct verdict v;
	counter_identity(found, &id);
	if (o->num[OPT_REQUIRE_TSC_CLOCKSOURCE])
		read_clocksource(d);
	if (step4_counter_refuses(d, &id, &v)) {
		text_line(r->reason, sizeof r->reason, v.reason, NULL);
		return;
	}
	d->key.cpu_signature = id.signature; /* a record measured now is this CPU's */
	d->key.any_cpu_signature = false;
	const struct cache_record *rec = found->record;
	struct estimate_analysis analysis;
	const struct estimate_analysis *measured = NULL;
	if (found->source == TSCSHIM_SOURCE_NONE) {
		rec = step5_measure(r, o, &d->key, found, &analysis);
		measured = &analysis;
		if (!rec)
			return;
	}
	r->source = found->source;
	r->rate_millihz = rec->rate_millihz;
	bool costs_now = false;
	if (found->inconclusive_waiting) {
		record_inconclusive_reason(rec, found->inconclusive_detail, r->reason, sizeof r->reason);
	} else {
		step6_verdict(o, &id, rec, measured, &v);
		memcpy(r->reason, v.reason, sizeof r->reason);
		r->max_shift_ns = v.max_shift_ns;
		if (v.reliable)
			costs_now = steps7_8_benefit(d, rec);
	}
	step9_keep(d, rec, costs_now);
}

/* ---- the verbose line ---- */

static const char *source_words(enum tscshim_source s)
{
	switch (s) {
	case TSCSHIM_SOURCE_SYSTEM_RECORD: return "from the machine-wide record";
	case TSCSHIM_SOURCE_USER_CACHE: return "from the cache";
	case TSCSHIM_SOURCE_MEASURED: return "measured now";
	default: return "";
	}
}

/* The cost part: every figure, where it came from, and the setting. */
static void say_costs(struct text *t, const struct decision_result *r, const struct option_values *o)
{
	const struct cost_ps *c = &r->cost;
	if (!c->kernel)
		return;
	struct cost ns = kernel_costs_ns(c);
	text_add(t, "; per call: kernel ");
	text_add_ps(t, c->kernel);
	text_add(t, " ns (");
	text_add(t, kernel_path_name(benefit_kernel_path(&ns)));
	text_add(t, "), system call ");
	text_add_ps(t, c->syscall);
	text_add(t, " ns, fenced ");
	text_add_ps(t, c->fenced);
	text_add(t, " ns (");
	text_add(t, read_plan_name(cost_read_plan(c, true)));
	static const char *const plan_words[4] = {"; lfence first ", ", after ", "; rdtscp first ", ", after "};
	for (int p = 0; say_level >= 2 && p < 4; p++) {
		/* Every fenced plan measured (cost.c's order): what the choice was made from. */
		if (!c->fenced_by_plan[p])
			continue;
		text_add(t, plan_words[p]);
		text_add_ps(t, c->fenced_by_plan[p]);
	}
	text_add(t, "), unfenced ");
	text_add_ps(t, c->unfenced);
	text_add(t, r->costs_from_record ? " ns, from the record; TSCSHIM_SERVE=" : " ns, measured now; TSCSHIM_SERVE=");
	text_add(t, o->num[OPT_SERVE] == SERVE_ALWAYS ? "always" : "auto");
	text_add(t, ", TSCSHIM_MIN_GAIN_PCT=");
	text_add_u64(t, o->num[OPT_MIN_GAIN_PCT]);
}

/* "N us at clock read M", "... at load", "... when the status was asked for". */
static void say_when(struct text *t, const struct decision_result *r, bool at_load, uint64_t at_read)
{
	text_add_u64(t, r->decide_ns / 1000);
	if (at_load) {
		text_add(t, " us at load (no record passed the checks at load)");
	} else if (at_read > 1) {
		text_add(t, " us at clock read ");
		text_add_u64(t, at_read);
	} else {
		text_add(t, at_read ? " us at the first clock read" : " us when the status was asked for");
	}
}

void decision_say(const struct decision_result *r, const struct option_values *o, bool at_load, uint64_t at_read)
{
	char figures[400];
	struct text t = text_start(figures, sizeof figures);
	uint64_t rate = r->rate_millihz;
	text_add(&t, " (rate ");
	text_add_u64(&t, rate / 1000);
	text_add(&t, ".");
	text_add(&t, rate % 1000 < 100 ? (rate % 1000 < 10 ? "00" : "0") : "");
	text_add_u64(&t, rate % 1000);
	text_add(&t, " Hz");
	const char *source = source_words(r->source);
	text_add(&t, source[0] ? ", " : "");
	text_add(&t, source);
	text_add(&t, r->fenced ? ", fenced" : ", unfenced");
	text_add(&t, " reads, decided in ");
	say_when(&t, r, at_load, at_read);
	say_costs(&t, r, o);
	text_add(&t, ")");
	/* The benefit gate's reason starts "pass-through: ", which the line says already. */
	const char *reason = r->reason + (r->not_worth_it ? strlen("pass-through: ") : 0);
	const char *note = record_note();
	say(r->serving ? "serving from the TSC: " : "passing through: ", reason, figures, note[0] ? "; cache " : "",
	    note, NULL);
}

bool decision_measuring_in_child(void)
{
	return atomic_load_explicit(&measuring_in_child, memory_order_relaxed);
}

const struct decision_result *decision_run(const struct decision_setup *setup)
{
	struct decision *d = record_decision_state();
	memset(d, 0, sizeof *d);
	this_call = *setup;
	d->o = setup->o;
	d->r.max_shift_ns = UINT64_MAX;
	d->r.served = (uint32_t)d->o->num[OPT_CLOCKS];
	d->r.fenced = d->o->num[OPT_FENCE] != 0;
	d->found.lock = RECORD_LOCK_NONE;
	d->may_measure = setup->may_measure;
	if (step2_boot(d) && step3_records(d))
		steps4_to_9(d);
	if (d->found.lock >= 0)
		close(d->found.lock);
	return &d->r;
}
