/* The decision, in steps, cheapest refusal first; each step is a function below, named
 * after it, taking what it needs and returning what the next needs:
 *   1. options: secure execution (none), disabled, nothing to serve (taken at load);
 *   2. the process's CPU set and the boot;
 *   3. a record: the machine-wide one, then the per-user cache, for this set or a
 *      consistent superset (an inconclusive one still waiting for its retry time means:
 *      pass through without measuring);
 *   4. the counter: no invariant TSC, or not the required clocksource (CPUID only when
 *      no record of this boot vouches for the CPU);
 *   5. else measured, in a child process within the budget;
 *   6. the reliability verdict;
 *   7. the costs a record keeps for this build, where the kernel's clock is still read
 *      the way they say, and the benefit gate judged on them: with TSCSHIM_SERVE=auto,
 *      a counter that does not cost at least TSCSHIM_MIN_GAIN_PCT percent less than
 *      the kernel's clock means pass-through, and the clock is never started;
 *   8. the clock started and, where no record's costs applied, the costs measured once
 *      on its path (cost.c) and the gate judged on them (the path closed again when
 *      the counter does not pay);
 *   9. the record kept: one measured now, or costs measured for a record, written to the
 *      per-user cache (after step 8, so that the costs go with it).
 *
 * When: at the TSCSHIM_DECIDE_AFTER-th read of a served clock (gate_first_read), not at
 * load (a cold start, with nothing recorded, at load). Whoever decides runs in someone
 * else's program, on whatever thread and stack made that read, perhaps in a signal
 * handler: at most 4 KiB of stack (make stack-usage checks
 * gate_first_read), no heap on a warm start, no thread, nothing left behind, every
 * signal blocked meanwhile. Buffers live in static storage: the decision runs once. */
#define _GNU_SOURCE
#include "gate.h"
#include "load_page.h"

#include "clock.h"
#include "cost.h"
#include "environment.h"
#include "real.h"
#include "record.h"
#include "say.h"
#include "stats.h"

#include "benefit.h"
#include "build_id.h"
#include "cache.h"
#include "counter.h"
#include "estimate.h"
#include "libc_kind.h"
#include "options.h"
#include "raw_syscall.h"
#include "refclock.h"
#include "safefile.h"
#include "system.h"
#include "text.h"
#include "verdict.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

ON_LOAD_PAGE struct gate_result gate_result;

/* ---- step 1, at load: the options ---- */

/* The options as they were at load: the values on the load page (TSCSHIM_DISABLE=1 then
 * costs no page of its own), the rarer texts in .bss. Paths given in the environment are
 * copied: a program may later change its environment or write over the strings
 * (setproctitle does); defaults are the table's own strings. */
static struct {
	struct option_values values;
	bool variables_set;     /* a TSCSHIM_ variable was set: values holds them */
	bool disabled_alone;    /* TSCSHIM_DISABLE=1 was the only one: nothing parsed */
	const char *invalid;    /* the options' message when one was invalid, else NULL */
} options ON_LOAD_PAGE;
static char options_message[256];
/* The path values given in the environment, one after another: on the load page, as a
 * setting such as TSCSHIM_CACHE is common. The parser bounds each below
 * OPTION_TEXT_MAX; three options take paths. */
static char options_paths[3 * OPTION_TEXT_MAX] ON_LOAD_PAGE;

/* 0 before the constructor ran (options unknown: pass through, do not decide), 1 after. */
static bool loaded ON_LOAD_PAGE;
/* Set at load when the process runs on the other C library: why (the decision passes
 * through and says so), else empty. */
static char wrong_libc[160] ON_LOAD_PAGE; /* why, under the other C library; "" under ours */
/* The decision ran in the constructor: a cold start (for the verbose line). */
static bool decided_at_load ON_LOAD_PAGE;

/* The constants the load path compares with, on the load page (load_page.h). */
static char variable_prefix[] ON_LOAD_PAGE = "TSCSHIM_";
static char runtime_dir_variable[] ON_LOAD_PAGE = "XDG_RUNTIME_DIR";
static char disable_alone[] ON_LOAD_PAGE = "TSCSHIM_DISABLE=1";
static char system_record_default[] ON_LOAD_PAGE = OPTION_SYSTEM_RECORD_DEFAULT;
static char cache_default[] ON_LOAD_PAGE = OPTION_CACHE_DEFAULT;

/* Our own compares (calib/environment.h): a process that never reads a clock should not
 * pay for faulting in libc's getenv and strcmp. */
LOAD_PATH static bool same_text(const char *a, const char *b)
{
	for (; *a && *a == *b; a++, b++)
		;
	return *a == *b;
}

static const char *environment_at_load(const char *name)
{
	extern char **environ;
	return environment_value(environ, name);
}

/* A cold start (no record can answer) measures at load, before the program's own
 * threads exist to compete with the estimator for the CPUs, as it always did; a warm one
 * leaves the decision to the first read of a served clock. */
LOAD_PATH static bool cold_start(bool disabled, bool serves_none, const char *system_record,
				 const char *cache, const char *xdg_runtime_dir)
{
	if (disabled || serves_none || record_may_answer(system_record, cache, xdg_runtime_dir))
		return false;
	decided_at_load = true;
	return true;
}

LOAD_PATH bool gate_load(void)
{
	extern char **environ;
	loaded = true;
	/* setuid and the like: the environment belongs to someone else (the decision says so
	 * and passes through). */
	if (getauxval(AT_SECURE))
		return false;
	/* Preloaded into a program of the other C library: nothing measured at load. */
	bool wrong = libc_check(wrong_libc, sizeof wrong_libc) != 0; /* empty when right */
	int variables = 0;
	bool disabled = false;
	const char *xdg = NULL;
	for (char **e = environ; e && *e; e++) {
		if (environment_entry_starts_with(*e, variable_prefix)) {
			variables++;
			disabled = disabled || same_text(*e, disable_alone);
		}
		xdg = xdg ? xdg : environment_entry_value(*e, runtime_dir_variable);
	}
	if (variables == 0) {
		/* The common case, a machine-wide install: nothing written, the defaults parsed
		 * by the decision if ever. */
		return !wrong && cold_start(false, false, system_record_default, cache_default, xdg);
	}
	if (variables == 1 && disabled) {
		/* The A/B baseline: nothing to parse, nothing to look for. */
		options.disabled_alone = true;
		return false;
	}
	options.variables_set = true;
	if (options_load(&options.values, environment_at_load, options_message, sizeof options_message) != 0) {
		options.invalid = options_message;
		say(options.invalid, "; passing every call to the real clock", NULL);
		return false;
	}
	size_t used = 0;
	for (int id = 0; id < OPTION_COUNT; id++) {
		const char *text = options.values.text[id];
		size_t len = strlen(text);
		if (!options.values.from_environment[id] || len == 0 || used + len + 1 > sizeof options_paths)
			continue;
		memcpy(options_paths + used, text, len + 1);
		options.values.text[id] = options_paths + used;
		used += len + 1;
	}
	say_level = (unsigned)options.values.num[OPT_VERBOSE];
	/* At load, so that stderr is compared with the one the process had then. */
	stats_setup(options.values.text[OPT_STATS]);
	const struct option_values *o = &options.values;
	return !wrong && cold_start(o->num[OPT_DISABLE] != 0, o->num[OPT_CLOCKS] == 0,
				    o->text[OPT_SYSTEM_RECORD], o->text[OPT_CACHE], xdg);
}

/* The options the decision uses: the copy, or the defaults when no variable was set.
 * Only the deciding thread calls it. */
static const struct option_values *decision_options(void)
{
	if (!options.variables_set)
		options_set_defaults(&options.values);
	if (options.disabled_alone)
		options.values.num[OPT_DISABLE] = 1;
	return &options.values;
}

/* The clocks served, and the read of one at which the decision is due: the options', or
 * with no variable set their defaults as numbers (options.h), nothing parsed. */
static uint64_t clocks_and_decide_after(uint64_t *decide_after)
{
	if (options.variables_set) {
		*decide_after = options.values.num[OPT_DECIDE_AFTER];
		return options.values.num[OPT_CLOCKS];
	}
	*decide_after = OPTION_DECIDE_AFTER_DEFAULT;
	return OPTION_CLOCKS_DEFAULT_SET;
}

/* Reads of served clocks while undecided, this one included when it counts. Written by
 * at most TSCSHIM_DECIDE_AFTER calls (and those that come while the decision runs): a
 * shared line, but only before the decision, and never on the served path. A fork child
 * inherits the count. */
static _Atomic uint64_t reads_before_decision ON_LOAD_PAGE;
/* The count at which the decision was claimed (0: at load, or asked for by the status). */
static uint64_t decided_at_read;

/* Asked by the first-read trigger before it claims the decision: 0 when this clock is not
 * served (it never decides), else this read's number among the served clocks' reads,
 * counted once per call, with *due set when the decision is due at it. */
static uint64_t served_read_number(clockid_t clock, bool *due)
{
	uint64_t decide_after;
	uint64_t served = clocks_and_decide_after(&decide_after);
	unsigned c = served_clock_slot(clock);
	if (c >= SERVED_CLOCK_COUNT || !((served >> c) & 1))
		return 0;
	uint64_t n = atomic_fetch_add_explicit(&reads_before_decision, 1, memory_order_relaxed) + 1;
	*due = n >= decide_after;
	return n;
}

/* ---- the decision's outcome, step by step ---- */

static void pass_through(const char *reason)
{
	text_line(gate_result.reason, sizeof gate_result.reason, reason, NULL);
	gate_result.active = false;
}

/* Step 2: the key a record is looked up by: the boot, and the CPUs the process may run
 * on, which are the main thread's (the process id's), not those of whichever thread
 * read the clock first: that one may be pinned to one CPU among several others. Any CPU
 * signature: a record of this boot vouches for the CPU (step 4). Returns false (reason
 * set) when the CPU set cannot be read. */
static bool step2_cpu_set_and_boot(int pid, struct cpu_mask *cpus, char *boot_id,
				   size_t boot_id_size, struct cache_key *key)
{
	if (cpu_mask_allowed_of(pid, cpus) < 1 && cpu_mask_allowed(cpus) < 1) {
		pass_through("cannot read the CPU affinity (more than 1024 CPUs?)");
		return false;
	}
	read_boot_id(boot_id, boot_id_size);
	*key = (struct cache_key){.boot_id = boot_id, .any_cpu_signature = true, .cpus = cpus};
	return true;
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

/* Step 3: the machine-wide record, then the per-user cache (waiting, at most the estimate
 * budget, for another process that is measuring for it). Returns false (reason set)
 * when another process measured and left no answer in time. */
static bool step3_record(const struct option_values *o, const struct cache_key *key,
			 struct found_record *f)
{
	*f = (struct found_record){.lock = RECORD_LOCK_NONE};
	f->cache_path = record_cache_path(o);
	f->record = record_from_system(o, key);
	if (f->record) {
		f->source = TSCSHIM_SOURCE_SYSTEM_RECORD;
		return true;
	}
	const char *path = f->cache_path;
	const struct cache_record *rec = path ? record_from_cache(path, key) : NULL;
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
	if (rec && say_level >= 2)
		say("cache ", path, ": an inconclusive record is due for a retry; measuring", NULL);
	f->record = rec; /* the previous inconclusive one, for the retry interval */
	if (!path)
		return true;
	uint64_t wait_ns = (o->num[OPT_ESTIMATE_BUDGET_US] + o->num[OPT_CALIBRATE_US]) * 1000 + 5000000;
	f->lock = record_lock(path, wait_ns);
	if (f->lock != RECORD_LOCK_WAITED)
		return true;
	f->lock = RECORD_LOCK_NONE;
	rec = record_from_cache(path, key);
	if (!rec || (rec->estimate_verdict == ESTIMATE_INCONCLUSIVE &&
		     refclock_now_ns(CLOCK_MONOTONIC) >= rec->retry_at_ns)) {
		pass_through("another process was measuring and left no answer within the budget");
		return false;
	}
	*f = (struct found_record){rec, TSCSHIM_SOURCE_USER_CACHE, path, true,
				   rec->estimate_verdict == ESTIMATE_INCONCLUSIVE,
				   " on another process's start", RECORD_LOCK_NONE};
	return true;
}

/* Step 4: refusals that need no estimate: no counter, not invariant, not the required
 * clocksource. True with *v filled (not reliable) when one applies. */
static bool step4_counter_refuses(const struct option_values *o, const struct counter_identity *id,
				  struct verdict *v)
{
	char clocksource[64] = "";
	if (o->num[OPT_REQUIRE_TSC_CLOCKSOURCE])
		read_current_clocksource(clocksource, sizeof clocksource);
	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.require_tsc_clocksource = o->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = clocksource,
	};
	return verdict_refuse_early(&in, v);
}

/* Every signal, SIGCANCEL included (the raw system call; glibc's wrappers leave it out):
 * no handler runs inside the decision, jumps out of it, or cancels it midway. */
static bool block_all_signals(uint64_t *saved)
{
	uint64_t all = ~(uint64_t)0;
	return raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)saved, sizeof all) == 0;
}

/* Whether every signal is blocked for the rest of the decision (gate_first_read's block
 * may be refused, by a seccomp filter say): then the first publication need not block
 * them again. */
static bool decision_signals_blocked;

/* Set while step 5's child measures: that child, and its threads, inherit it. */
static _Atomic bool measuring_in_child ON_LOAD_PAGE;

/* The record measured now (step 5), kept for step 9. */
static struct cache_record measured_record;

/* Step 5: measured in a child. Returns the record (inconclusive when the child did not
 * answer), with its analysis in *a; NULL (reason set) when nothing may be measured. */
static const struct cache_record *step5_measure(const struct option_values *o,
						const struct cache_key *key, struct found_record *f,
						struct estimate_analysis *a, char *detail, size_t detail_size)
{
	struct measurement m;
	const char *why = NULL;
	atomic_store_explicit(&measuring_in_child, true, memory_order_relaxed);
	int rc = record_measure(o, key, f->record, &measured_record, &m, &why);
	atomic_store_explicit(&measuring_in_child, false, memory_order_relaxed);
	/* The estimator's fork ran the program's pthread_atfork handlers on this thread, and
	 * they may have changed its mask (glibc's pthread_sigmask alone unblocks SIGCANCEL):
	 * block every signal again for the steps that follow. */
	uint64_t mask_after_fork;
	decision_signals_blocked = decision_signals_blocked && block_all_signals(&mask_after_fork);
	if (rc != 0) {
		pass_through(why);
		return NULL;
	}
	*a = m.analysis;
	f->source = TSCSHIM_SOURCE_MEASURED;
	f->record = &measured_record;
	f->keep_in_cache = f->cache_path != NULL;
	if (measured_record.estimate_verdict == ESTIMATE_INCONCLUSIVE) {
		struct text t = text_start(detail, detail_size);
		text_add(&t, ": ");
		if (m.problem[0]) {
			text_add(&t, m.problem);
		} else {
			text_add_u64(&t, m.analysis.loops);
			text_add(&t, " loops, at least ");
			text_add_u64(&t, m.analysis.min_ranges);
			text_add(&t, " ranges per CPU pair (need ");
			text_add_u64(&t, o->num[OPT_ESTIMATE_MIN_LOOPS]);
			text_add(&t, " each)");
		}
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
static bool step8_clock_start(const struct option_values *o, const struct cpu_mask *covered)
{
	struct line_setup setup = {
		.ns_per_tick = ns_per_tick_at(gate_result.rate_millihz),
		.max_error_ns = o->num[OPT_MAX_ERROR_NS],
		.resync_ms = o->num[OPT_RESYNC_MS],
		.served = gate_result.served,
		.read_plan = cost_read_plan(&gate_result.cost, gate_result.fenced),
		.covered = *covered,
		.signals_blocked = decision_signals_blocked,
	};
	const char *err = NULL;
	if (clock_start(&setup, &err) != 0) {
		pass_through(err);
		return false;
	}
	gate_result.active = true;
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

static bool record_has_costs(const struct cache_record *rec, uint64_t build)
{
	return rec && rec->kernel_ps && rec->syscall_ps && rec->fenced_ps && rec->unfenced_ps &&
	       build && rec->cost_build == build;
}

/* The clock whose costs are measured and checked: the first served one stands for them all. */
static clockid_t cost_clock(void)
{
	return clock_table[__builtin_ctz(gate_result.served)].id;
}

/* Step 7: the costs a record keeps (the one the verdict came from, else this key's entry
 * in the per-user cache, where a process keeps costs it measured for the machine-wide
 * record) when they are this build's and the kernel's clock is still read the way they
 * say (cost_still_applies needs no open path). Returns false when none apply: step 8
 * measures them. */
static bool step7_record_costs(const struct cache_record *rec, const struct found_record *f,
			       const struct cache_key *key)
{
	uint64_t build = shim_build_id();
	gate_result.cost_build = build;
	const struct cache_record *candidates[2] = {rec, NULL};
	if (!record_has_costs(rec, build) && f->source == TSCSHIM_SOURCE_SYSTEM_RECORD && f->cache_path)
		candidates[1] = record_from_cache(f->cache_path, key);
	for (int i = 0; i < 2; i++) {
		const struct cache_record *r = candidates[i];
		if (!record_has_costs(r, build))
			continue;
		gate_result.cost = (struct cost_ps){r->kernel_ps, r->syscall_ps, r->fenced_ps, r->unfenced_ps,
						    (uint8_t)r->fenced_plan, {0}};
		if (cost_still_applies(cost_clock(), gate_result.rate_millihz, &gate_result.cost)) {
			gate_result.costs_from_record = true;
			return true;
		}
		/* Another interposer changed how the kernel's clock is read: measure again. */
	}
	return false;
}

/* "the kernel's clock costs 23.4 ns here (a system call), the counter 27.6 ns". */
static void describe_costs(struct text *t, uint64_t counter_ps)
{
	struct cost c = {.kernel_ns = gate_result.cost.kernel / 1e3, .syscall_ns = gate_result.cost.syscall / 1e3};
	text_add(t, "the kernel's clock costs ");
	text_add_ps(t, gate_result.cost.kernel);
	text_add(t, benefit_kernel_path(&c) == KERNEL_PATH_SYSCALL ? " ns here (a system call), the counter "
								   : " ns here, the counter ");
	text_add_ps(t, counter_ps);
	text_add(t, " ns");
}

/* The benefit gate on gate_result.cost: true to serve (TSCSHIM_SERVE=always, or the
 * counter is cheaper by the minimum gain), with the reason saying why; else every call
 * passes through (the path, if it was opened, closed again: the hot path then costs
 * nothing more than a clock the shim does not serve). */
static bool judge_benefit(const struct option_values *o)
{
	uint64_t counter_ps = gate_result.fenced ? gate_result.cost.fenced : gate_result.cost.unfenced;
	unsigned min_gain = (unsigned)o->num[OPT_MIN_GAIN_PCT];
	bool pays = cost_pays(&gate_result.cost, gate_result.fenced, min_gain);
	char why[TSCSHIM_REASON_SIZE];
	struct text t = text_start(why, sizeof why);
	bool serve = pays || o->num[OPT_SERVE] == SERVE_ALWAYS;
	if (serve) {
		/* The reliability reason stays first: tests and people look for it. */
		text_add(&t, gate_result.reason);
		text_add(&t, pays ? "; " : "; TSCSHIM_SERVE=always: ");
		describe_costs(&t, counter_ps);
	} else {
		clock_close();
		gate_result.active = false;
		gate_result.not_worth_it = true;
		text_add(&t, "pass-through: ");
		describe_costs(&t, counter_ps);
		text_add(&t, gate_result.fenced ? " (fenced), not " : " (unfenced), not ");
		text_add_u64(&t, min_gain);
		text_add(&t, "% cheaper (TSCSHIM_MIN_GAIN_PCT)");
	}
	memcpy(gate_result.reason, why, sizeof gate_result.reason);
	return serve;
}

/* Steps 7 and 8 on a reliable verdict. A record's costs judge before the path opens: where
 * the counter does not pay (a host whose kernel reads the TSC itself) the decision
 * anchors nothing, marks no page wiped on fork and publishes nothing, about a quarter of
 * a warm decision there. Without them the path opens and its costs are measured on it.
 * Returns true when the costs were measured now (step 9 keeps them). */
static bool steps7_8_benefit(const struct option_values *o, const struct cache_record *rec,
			     const struct found_record *f, const struct cache_key *key)
{
	bool from_record = step7_record_costs(rec, f, key);
	if (from_record && !judge_benefit(o))
		return false;
	if (!step8_clock_start(o, &rec->cpus))
		return false;
	if (from_record)
		return false; /* judged above: serve */
	cost_measure(cost_clock(), gate_result.rate_millihz, &gate_result.cost);
	clock_set_read_plan(cost_read_plan(&gate_result.cost, gate_result.fenced));
	judge_benefit(o);
	return true;
}

/* Step 9, whatever the verdict: a record measured now, or costs measured for a record,
 * into the per-user cache; then the measuring lock is released. */
static void step9_keep(const struct found_record *f, const struct cache_record *rec, bool costs_now)
{
	if (f->cache_path && rec && (f->source == TSCSHIM_SOURCE_MEASURED || (costs_now && f->keep_in_cache) ||
				     (costs_now && f->source == TSCSHIM_SOURCE_SYSTEM_RECORD))) {
		struct cache_record keep = *rec;
		if (costs_now) {
			keep.kernel_ps = gate_result.cost.kernel;
			keep.syscall_ps = gate_result.cost.syscall;
			keep.fenced_ps = gate_result.cost.fenced;
			keep.unfenced_ps = gate_result.cost.unfenced;
			keep.fenced_plan = gate_result.cost.fenced_plan;
			keep.cost_build = gate_result.cost_build;
		}
		record_keep(f->cache_path, &keep);
	}
	if (f->lock >= 0)
		close(f->lock);
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
static void say_costs(struct text *t, const struct option_values *o)
{
	if (!gate_result.cost.kernel)
		return;
	struct cost c = {.kernel_ns = gate_result.cost.kernel / 1e3, .syscall_ns = gate_result.cost.syscall / 1e3};
	text_add(t, "; per call: kernel ");
	text_add_ps(t, gate_result.cost.kernel);
	text_add(t, " ns (");
	text_add(t, kernel_path_name(benefit_kernel_path(&c)));
	text_add(t, "), system call ");
	text_add_ps(t, gate_result.cost.syscall);
	text_add(t, " ns, fenced ");
	text_add_ps(t, gate_result.cost.fenced);
	text_add(t, " ns (");
	text_add(t, read_plan_name(cost_read_plan(&gate_result.cost, true)));
	static const char *const plan_words[4] = {"; lfence first ", ", after ", "; rdtscp first ", ", after "};
	for (int p = 0; say_level >= 2 && p < 4; p++) {
		/* Every fenced plan measured (cost.c's order): what the choice was made from. */
		if (!gate_result.cost.fenced_by_plan[p])
			continue;
		text_add(t, plan_words[p]);
		text_add_ps(t, gate_result.cost.fenced_by_plan[p]);
	}
	text_add(t, "), unfenced ");
	text_add_ps(t, gate_result.cost.unfenced);
	text_add(t, gate_result.costs_from_record ? " ns, from the record; TSCSHIM_SERVE=" : " ns, measured now; TSCSHIM_SERVE=");
	text_add(t, o->num[OPT_SERVE] == SERVE_ALWAYS ? "always" : "auto");
	text_add(t, ", TSCSHIM_MIN_GAIN_PCT=");
	text_add_u64(t, o->num[OPT_MIN_GAIN_PCT]);
}

/* The decision, its figures, what went wrong with the cache, and how long it took. Out
 * of line: its buffers stay off the stack of the steps' deeper calls. */
static __attribute__((noinline)) void say_decision(const struct option_values *o)
{
	char figures[400];
	struct text t = text_start(figures, sizeof figures);
	uint64_t rate = gate_result.rate_millihz;
	text_add(&t, " (rate ");
	text_add_u64(&t, rate / 1000);
	text_add(&t, ".");
	text_add(&t, rate % 1000 < 100 ? (rate % 1000 < 10 ? "00" : "0") : "");
	text_add_u64(&t, rate % 1000);
	text_add(&t, " Hz");
	const char *source = source_words(gate_result.source);
	text_add(&t, source[0] ? ", " : "");
	text_add(&t, source);
	text_add(&t, gate_result.fenced ? ", fenced" : ", unfenced");
	text_add(&t, " reads, decided in ");
	text_add_u64(&t, gate_result.decide_ns / 1000);
	if (decided_at_load) {
		text_add(&t, " us at load (nothing recorded yet)");
	} else if (decided_at_read > 1) {
		text_add(&t, " us at clock read ");
		text_add_u64(&t, decided_at_read);
	} else {
		text_add(&t, decided_at_read ? " us at the first clock read" : " us when the status was asked for");
	}
	say_costs(&t, o);
	text_add(&t, ")");
	/* The benefit gate's reason starts "pass-through: ", which the line says already. */
	const char *reason = gate_result.reason + (gate_result.not_worth_it ? strlen("pass-through: ") : 0);
	const char *note = record_note();
	say(gate_result.active ? "serving from the TSC: " : "passing through: ", reason, figures,
	    note[0] ? "; cache " : "", note, NULL);
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

/* Steps 2 to 9 after the options, on a reliable path or not; pid is the process's. */
static __attribute__((noinline)) void decide_from_options(const struct option_values *o, int pid)
{
	struct cpu_mask cpus;
	char boot_id[sizeof ((struct cache_record *)0)->boot_id];
	struct cache_key key;
	if (!step2_cpu_set_and_boot(pid, &cpus, boot_id, sizeof boot_id, &key))
		return;
	struct found_record found;
	if (!step3_record(o, &key, &found))
		return;
	struct counter_identity id;
	struct verdict v;
	counter_identity(&found, &id);
	if (step4_counter_refuses(o, &id, &v)) {
		text_line(gate_result.reason, sizeof gate_result.reason, v.reason, NULL);
		step9_keep(&found, NULL, false);
		return;
	}
	key.cpu_signature = id.signature; /* a record measured now is this CPU's */
	key.any_cpu_signature = false;
	const struct cache_record *rec = found.record;
	struct estimate_analysis analysis;
	const struct estimate_analysis *measured = NULL;
	static char detail[200]; /* static: the decision's stack may be a signal's, and small */
	if (found.source == TSCSHIM_SOURCE_NONE) {
		rec = step5_measure(o, &key, &found, &analysis, detail, sizeof detail);
		measured = &analysis;
		if (!rec) {
			step9_keep(&found, NULL, false);
			return;
		}
	}
	gate_result.source = found.source;
	gate_result.rate_millihz = rec->rate_millihz;
	bool costs_now = false;
	if (found.inconclusive_waiting) {
		record_inconclusive_reason(rec, found.inconclusive_detail, gate_result.reason,
					   sizeof gate_result.reason);
	} else {
		step6_verdict(o, &id, rec, measured, &v);
		memcpy(gate_result.reason, v.reason, sizeof gate_result.reason);
		gate_result.max_shift_ns = v.max_shift_ns;
		if (v.reliable)
			costs_now = steps7_8_benefit(o, rec, &found, &key);
	}
	step9_keep(&found, rec, costs_now);
}

static void decide(int pid)
{
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);
	gate_result.max_shift_ns = UINT64_MAX;
	if (options.disabled_alone && !wrong_libc[0]) {
		/* The A/B baseline's decision: the defaults it reports are options.h's numbers;
		 * nothing to parse or look at. */
		gate_result.served = OPTION_CLOCKS_DEFAULT_SET;
		gate_result.fenced = OPTION_FENCE_DEFAULT != 0;
		pass_through("TSCSHIM_DISABLE=1");
		gate_result.decide_ns = refclock_now_ns(CLOCK_MONOTONIC) - began;
		return;
	}
	const struct option_values *o = decision_options();
	if (getauxval(AT_SECURE)) {
		pass_through("secure execution: environment and cache ignored, passing through");
	} else if (options.invalid) {
		pass_through(options.invalid);
	} else if (wrong_libc[0]) {
		pass_through(wrong_libc);
	} else {
		gate_result.served = (uint32_t)o->num[OPT_CLOCKS];
		gate_result.fenced = o->num[OPT_FENCE] != 0;
		if (o->num[OPT_DISABLE])
			pass_through("TSCSHIM_DISABLE=1");
		else if (gate_result.served == 0)
			pass_through("TSCSHIM_CLOCKS=none");
		else
			decide_from_options(o, pid);
	}
	gate_result.decide_ns = refclock_now_ns(CLOCK_MONOTONIC) - began;
	const char *why_dlsym;
	if (say_level >= 2 && real_found_by_dlsym(&why_dlsym))
		say("real functions found with dlsym: ", why_dlsym, NULL);
	else if (say_level >= 2)
		say("real functions read from the loader's tables", NULL);
	if (say_level >= 1 && !options.invalid && wrong_libc[0])
		say("passing through: ", wrong_libc, NULL);
	else if (say_level >= 1 && !options.invalid)
		say_decision(o);
}

/* The phase word: (pid << 2) | phase, the pid being the decider's while it decides. A
 * fork child of a process caught mid-decision finds another process's pid there, and no
 * thread of its own deciding: it decides itself. */
enum { PHASE_UNDECIDED, PHASE_DECIDING, PHASE_DECIDED };
static _Atomic uint64_t phase_word ON_LOAD_PAGE;
/* The deciding thread (pthread_self()), which a fork child made by it keeps. */
static _Atomic uintptr_t decider ON_LOAD_PAGE;

/* Counted only while a decision is under way: a shared line, written in that window
 * alone. */
static _Atomic uint64_t passed_while_deciding;

uint64_t gate_passed_while_deciding(void)
{
	return atomic_load_explicit(&passed_while_deciding, memory_order_relaxed);
}

bool gate_decided(void)
{
	return (atomic_load_explicit(&phase_word, memory_order_acquire) & 3) == PHASE_DECIDED;
}

bool gate_first_read(clockid_t clock, bool force)
{
	uint64_t word = atomic_load_explicit(&phase_word, memory_order_acquire);
	if ((word & 3) == PHASE_DECIDED)
		return true;
	if (!loaded)
		return false;
	/* A read before the decision is due only counts, whatever the phase: a fork child of
	 * a process whose decision was forced (a status query) waits for its own due read
	 * too. From the due read on, every read of a served clock looks below at who decides. */
	uint64_t read_number = 0;
	bool due = force;
	if (!force && ((read_number = served_read_number(clock, &due)) == 0 || !due))
		return false;
	uint64_t me = (uint64_t)raw_syscall4(SYS_getpid, 0, 0, 0, 0);
	uintptr_t self = (uintptr_t)pthread_self();
	if ((word & 3) == PHASE_DECIDING && word >> 2 == me) {
		/* Under way in this process: pass through meanwhile, never wait. */
		atomic_fetch_add_explicit(&passed_while_deciding, 1, memory_order_relaxed);
		return false;
	}
	/* Under way in the process this one was forked from. A fork the decider itself made
	 * (the estimator's child and its threads, whose allocator may read the clock) carries
	 * on the decider's work and must never decide again; a fork another thread made has
	 * no decider and takes over (one made during the measurement itself cannot tell
	 * itself from the estimator's, and passes through for good: correct, unserved). */
	if ((word & 3) == PHASE_DECIDING &&
	    (atomic_load_explicit(&measuring_in_child, memory_order_relaxed) ||
	     atomic_load_explicit(&decider, memory_order_relaxed) == self))
		return false;
	if (!atomic_compare_exchange_strong(&phase_word, &word, me << 2 | PHASE_DECIDING)) {
		/* Another thread began deciding between our load and our claim. */
		if (gate_decided())
			return true;
		atomic_fetch_add_explicit(&passed_while_deciding, 1, memory_order_relaxed);
		return false;
	}
	atomic_store_explicit(&decider, self, memory_order_relaxed);
	decided_at_read = read_number;
	uint64_t saved_mask;
	bool blocked = block_all_signals(&saved_mask);
	decision_signals_blocked = blocked;
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	int saved_errno = errno;
	decide((int)me);
	errno = saved_errno;
	atomic_store_explicit(&phase_word, me << 2 | PHASE_DECIDED, memory_order_release);
	pthread_setcancelstate(cancel_state, NULL);
	if (blocked)
		raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved_mask, 0, sizeof saved_mask);
	return true;
}
