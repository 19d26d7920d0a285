/* The decision, in steps, cheapest refusal first; each step is a function below, named
 * after it, taking what it needs and returning what the next needs, and writing only
 * the decision under way (struct gate_result *r, published once at the end):
 *   1. options: secure execution (none), disabled, nothing to serve (taken at load);
 *   2. the process's CPU set and the boot;
 *   3. a record: the machine-wide one, then the per-user cache, for this set or a
 *      consistent superset (an inconclusive one still waiting for its retry time means:
 *      pass through without measuring);
 *   4. the counter: no invariant TSC, or not the required clocksource (CPUID only when
 *      no record of this boot vouches for the CPU);
 *   5. else measured, in a child process within the budget: only at load;
 *   6. the reliability verdict;
 *   7. the costs a record keeps for this build (one of two it may keep), where the kernel's clock is still read
 *      the way they say, and the benefit gate judged on them: with TSCSHIM_SERVE=auto,
 *      a counter that does not cost at least TSCSHIM_MIN_GAIN_PCT percent less than
 *      the kernel's clock means pass-through, and the clock is never started;
 *   8. the clock started and, at load where no record's costs applied, the costs
 *      measured once on its path (cost.c) and the gate judged on them (the path closed
 *      again when the counter does not pay);
 *   9. the record kept: one measured now, or costs measured for a record, written to the
 *      per-user cache (after step 8, so that the costs go with it); then whatever step
 *      3 took (the measuring lock) is released, in that one place.
 *
 * The steps run as parts (decision_parts, one table): the CPU set, the boot, the
 * clocksource, the machine-wide record, the per-user cache, then steps 4 to 9. Each of the
 * five reads of a served clock before the TSCSHIM_DECIDE_AFTER-th runs the next part, so
 * that no read pays for the whole decision (each part is a look-up in /proc or /sys or a
 * file's read); the due read runs what is left, at least steps 4 to 9. A part that ends
 * the decision (no /proc, say) publishes it at its own read.
 *
 * When: at the TSCSHIM_DECIDE_AFTER-th read of a served clock (gate_decide_if_due), or at
 * load when nothing is recorded (a cold start), or at a status query: one trigger path;
 * the last two run every part at once.
 * Nothing is measured at a program's read: the estimator and the cost measurement run
 * only in a cold start at load, before the program's threads exist, or at a status
 * query, which asks for the decision now. A read that finds
 * no record answering (one that passed the checks at load and fails at the read) passes
 * through, says why in one verbose line, and marks the cache for a measurement at the
 * next start's load. Whoever decides runs in someone else's program, on whatever thread
 * and stack made that read, perhaps in a signal handler on a small alternate stack: each
 * part runs on a stack of its own (decision_stack), every signal blocked, no heap on a
 * warm start, no thread, nothing left behind. Buffers live in static storage: one part
 * runs at a time in an address space (the claim, taken for each part and freed after
 * each but the last). */
#define _GNU_SOURCE
#include "gate.h"
#include "load_page.h"

#include "clock.h"
#include "cost.h"
#include "environment.h"
#include "real.h"
#include "record.h"
#include "say.h"
#include "signals.h"
#include "line.h"
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
#include <sys/mman.h>
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
/* Set at load on a cold start: the decision the constructor makes next may measure (the
 * estimator, the costs); no other decision does. Also for the verbose line. */
static bool decided_at_load ON_LOAD_PAGE;
/* Set at load when /proc was not there to give the boot's id: no record can be trusted
 * or kept, so nothing is measured, and the decision passes through at once. */
static bool boot_unknown ON_LOAD_PAGE;
/* Set at load when TSCSHIM_VERBOSE is: a process that never decides says so at exit. */
static bool verbose_at_exit ON_LOAD_PAGE;

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

/* Whether this process measures at load: no record can answer it (record_may_answer's
 * checks of owner, mode, type, size and time), so it measures now, before the program's
 * own threads exist to compete with the estimator for the CPUs; a warm one leaves the
 * decision to the due read, which never measures. Without /proc the boot cannot be
 * known, and a measurement could never be kept: nothing is measured, and the decision
 * passes through, saying so. */
LOAD_PATH static bool must_measure_at_load(bool disabled, bool serves_none, const char *system_record,
					   const char *cache, const char *xdg_runtime_dir)
{
	if (disabled || serves_none || record_may_answer(system_record, cache, xdg_runtime_dir))
		return false;
	if (!record_boot_known()) {
		boot_unknown = true;
		return false;
	}
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
		return !wrong && must_measure_at_load(false, false, system_record_default, cache_default, xdg);
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
	verbose_at_exit = say_level >= 1;
	if (verbose_at_exit)
		say_keep_stderr();
	/* At load, so that stderr is compared with the one the process had then. */
	stats_setup(options.values.text[OPT_STATS]);
	const struct option_values *o = &options.values;
	return !wrong && must_measure_at_load(o->num[OPT_DISABLE] != 0, o->num[OPT_CLOCKS] == 0,
					      o->text[OPT_SYSTEM_RECORD], o->text[OPT_CACHE], xdg);
}

/* The options the decision uses: the copy, or the defaults when no variable was set,
 * resolved here. Only the deciding thread calls it. */
static const struct option_values *options_resolved_for_decision(void)
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

/* Reads of served clocks while undecided, added a thread's batch at a time (below): a
 * shared line, written only before the decision is due, and never on the served path. A
 * fork child inherits the count (and its forking thread's batch). */
static _Atomic uint64_t reads_before_decision ON_LOAD_PAGE;
/* This thread's reads not yet added to reads_before_decision (at most COUNT_BATCH - 1).
 * Initial-exec: the shim is preloaded, so its thread-local block is static (as stats.h's). */
enum { COUNT_BATCH = 64 };
static __thread uint32_t reads_not_yet_shared __attribute__((tls_model("initial-exec")));
/* The count at which the decision was claimed (0: at load, or asked for by the status). */
static uint64_t decided_at_read;

/* The decision's parts run at the reads just before the due one, one a read (below):
 * this many of them. */
enum { PREPARE_PARTS = 5 };

/* Asked by the trigger before it claims the decision: 0 when this clock is not served (it
 * never decides), else this read's number among the served clocks' reads, counted once
 * per call, and the read at which the decision is due. */
static uint64_t served_read_number(clockid_t clock, uint64_t *decide_after)
{
	uint64_t served = clocks_and_decide_after(decide_after);
	unsigned c = served_clock_slot(clock);
	if (c >= SERVED_CLOCK_COUNT || !((served >> c) & 1))
		return 0;
	/* Each thread counts in a word of its own and adds its count to the shared one once
	 * per COUNT_BATCH reads, or at once where the two together reach the first of the
	 * reads that prepare the decision: one thread's reads are still numbered exactly,
	 * and threads reading at once write the shared line once a batch, not at every read
	 * (an atomic add on a line two CPUs fight over cost 117 ns a read). Shared only
	 * until due: the reads after it (while a decision is under way, its parts perhaps
	 * still running) only load the shared word and count on in their own, so that each
	 * thread's reads stay numbered. */
	uint64_t shared = atomic_load_explicit(&reads_before_decision, memory_order_relaxed);
	uint64_t mine = (uint64_t)reads_not_yet_shared + 1;
	if (shared >= *decide_after || (shared + mine + PREPARE_PARTS < *decide_after && mine < COUNT_BATCH)) {
		reads_not_yet_shared = (uint32_t)mine;
		return shared + mine;
	}
	reads_not_yet_shared = 0;
	return atomic_fetch_add_explicit(&reads_before_decision, mine, memory_order_relaxed) + mine;
}

/* ---- the decision's outcome, step by step ---- */

/* The decision under way: written by the steps through r, published once (decide_now). */
static void pass_through(struct gate_result *r, const char *reason)
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
	/* Where the machine-wide record answered but keeps no costs of this build under
	 * this clocksource: those a process kept for it in the per-user cache, else NULL. */
	const struct cache_costs *cache_costs;
};

/* The decision under way, between its parts (below): written only by the thread that
 * holds the claim, read only by the next holder (the claim's compare-and-swap orders
 * them). How many parts are done is counted on the fork-wiped page beside the claim
 * (record_decision_parts), so that a fork child starts over and never reads this
 * half-made. */
struct decision {
	struct gate_result r;              /* the outcome, published when the last part ends */
	const struct option_values *o;
	struct cpu_mask cpus;
	char boot_id[sizeof ((struct cache_record *)0)->boot_id];
	char clocksource[CACHE_CLOCKSOURCE_MAX + 1]; /* "" where /sys cannot tell */
	struct cache_key key;              /* boot_id and cpus above */
	struct found_record found;
	bool may_measure;                  /* this part runs in a forced decision */
	uint64_t prepared_ns;              /* the parts run at reads before the one that decides */
	uint32_t prepared_reads;
};
static struct decision under_way;

/* Part 1, after step 1: the CPUs the process may run on, which are the main thread's (the
 * process id's), not those of whichever thread read the clock first: that one may be
 * pinned to one CPU among several others. */
static bool part_cpu_set(struct decision *d)
{
	int pid = (int)raw_syscall4(SYS_getpid, 0, 0, 0, 0);
	if (cpu_mask_allowed_of(pid, &d->cpus) < 1 && cpu_mask_allowed(&d->cpus) < 1) {
		pass_through(&d->r, "cannot read the CPU affinity (more than 1024 CPUs?)");
		return false;
	}
	return true;
}

/* Part 2: the boot, the other half of the key a record is looked up by. Any CPU signature:
 * a record of this boot vouches for the CPU (step 4). Without the boot's id no record could
 * be trusted or kept. */
static bool part_boot(struct decision *d)
{
	if (boot_unknown || read_boot_id(d->boot_id, sizeof d->boot_id) != 0 || !d->boot_id[0]) {
		pass_through(&d->r, "cannot read /proc/sys/kernel/random/boot_id (no /proc?): no record can be "
				    "trusted or kept without the boot's id; passing through at once, nothing measured");
		return false;
	}
	d->key = (struct cache_key){.boot_id = d->boot_id, .any_cpu_signature = true, .cpus = &d->cpus};
	return true;
}

/* Part 3: the kernel's clocksource. The costs a record keeps are of one clocksource (the
 * kernel's clock costs what its clocksource costs to read), and are not used under
 * another; TSCSHIM_REQUIRE_TSC_CLOCKSOURCE asks for it too. "" where /sys cannot tell
 * (costs measured then are kept with "", and used only where it cannot tell either). */
static bool part_clocksource(struct decision *d)
{
	if (read_current_clocksource(d->clocksource, sizeof d->clocksource) != 0)
		d->clocksource[0] = '\0';
	return true;
}

/* Step 3 at a read, where nothing is measured: no record answers this process (it passed
 * the checks at load, and failed at the read). Pass through, and have the next start
 * measure at load. */
static bool step3_none_at_read(struct gate_result *r, const char *cache_path)
{
	if (cache_path)
		record_mark_stale(cache_path);
	pass_through(r, "no record answers this process at its read (another boot, CPU or CPU set, or "
			"unusable); nothing is measured at a program's read: passing through, the next start "
			"measures at load");
	return false;
}

/* Part 4 (step 3's first half): the machine-wide record, and where the per-user cache is. */
static bool part_system_record(struct decision *d)
{
	struct found_record *f = &d->found;
	*f = (struct found_record){.lock = RECORD_LOCK_NONE};
	f->cache_path = record_cache_path(d->o);
	f->record = record_from_system(d->o, &d->key);
	if (f->record)
		f->source = TSCSHIM_SOURCE_SYSTEM_RECORD;
	return true;
}

/* Part 5 (step 3's second half): the per-user cache. Where the machine-wide record
 * answered, read only when that record keeps no costs of this build under this
 * clocksource: for the costs a process kept for it there. Where it did not, for a record.
 * At load (may_measure) a process with no answer measures, waiting, at most the estimate
 * budget, for another process that is measuring for the cache; at a read it passes
 * through. Returns false (reason set) when the decision ends here. */
static bool part_cache(struct decision *d)
{
	struct found_record *f = &d->found;
	const char *path = f->cache_path;
	if (f->record) {
		uint64_t build = shim_build_id();
		if (path && !cache_costs_of(f->record, build, d->clocksource))
			f->cache_costs = cache_costs_of(record_from_cache(path, &d->key), build, d->clocksource);
		return true;
	}
	struct gate_result *r = &d->r;
	const struct cache_record *rec = path ? record_from_cache(path, &d->key) : NULL;
	uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
	if (rec && rec->estimate_verdict == ESTIMATE_INCONCLUSIVE && now < rec->retry_at_ns) {
		*f = (struct found_record){rec, TSCSHIM_SOURCE_USER_CACHE, path, false, true,
					   " on an earlier start", RECORD_LOCK_NONE, NULL};
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
	rec = record_from_cache(path, &d->key);
	if (!rec || (rec->estimate_verdict == ESTIMATE_INCONCLUSIVE &&
		     refclock_now_ns(CLOCK_MONOTONIC) >= rec->retry_at_ns)) {
		pass_through(r, "another process was measuring and left no answer within the budget");
		return false;
	}
	*f = (struct found_record){rec, TSCSHIM_SOURCE_USER_CACHE, path, true,
				   rec->estimate_verdict == ESTIMATE_INCONCLUSIVE,
				   " on another process's start", RECORD_LOCK_NONE, NULL};
	return true;
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

/* Whether every signal is blocked for the rest of the decision (the trigger's block may be
 * refused, by a seccomp filter say): then the first publication need not block them again. */
static bool decision_signals_blocked;

/* The kernel marked the decision's pages wiped on fork (MADV_WIPEONFORK, at the first
 * claim: mark_claim_page): the clock's start, which marks the same pages, need not ask
 * again. On the load page: a fork child inherits the mark with the flag. */
static _Atomic bool claim_page_wiped_by_kernel ON_LOAD_PAGE;

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
static const struct cache_record *step5_measure(struct gate_result *r, const struct option_values *o,
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
	decision_signals_blocked = decision_signals_blocked && signals_block_all(&mask_after_fork);
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
static bool step8_clock_start(struct gate_result *r, const struct option_values *o, const struct cpu_mask *covered)
{
	struct line_setup setup = {
		.ns_per_tick = ns_per_tick_at(r->rate_millihz),
		.max_error_ns = o->num[OPT_MAX_ERROR_NS],
		.resync_ms = o->num[OPT_RESYNC_MS],
		.served = r->served,
		.read_plan = cost_read_plan(&r->cost, r->fenced),
		.covered = *covered,
		.signals_blocked = decision_signals_blocked,
		.wiped_marked = atomic_load_explicit(&claim_page_wiped_by_kernel, memory_order_relaxed),
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

/* Step 7: the costs a record keeps (the one the verdict came from, else those a process
 * kept for the machine-wide record in the per-user cache, which part 5 found) when they
 * are this build's, of this clocksource, and the kernel's clock is still read the way
 * they say (cost_still_applies needs no open path). Returns false when none apply. */
static bool step7_record_costs(struct decision *d, const struct cache_record *rec)
{
	struct gate_result *r = &d->r;
	uint64_t build = shim_build_id();
	r->cost_build = build;
	const struct cache_costs *candidates[2] = {cache_costs_of(rec, build, d->clocksource), d->found.cache_costs};
	for (int i = 0; i < 2; i++) {
		const struct cache_costs *c = candidates[i];
		if (!c)
			continue;
		r->cost = (struct cost_ps){c->kernel_ps, c->syscall_ps, c->fenced_ps, c->unfenced_ps,
					   (uint8_t)c->fenced_plan, {0}};
		if (cost_still_applies(cost_clock(r->served), r->rate_millihz, &r->cost)) {
			r->costs_from_record = true;
			return true;
		}
		/* Another interposer changed how the kernel's clock is read: measure again. */
	}
	r->cost = (struct cost_ps){0};
	return false;
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
static bool judge_benefit(struct gate_result *r, const struct option_values *o)
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
	struct gate_result *r = &d->r;
	if (d->o->num[OPT_SERVE] == SERVE_ALWAYS)
		return step8_clock_start(r, d->o, &rec->cpus);
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
	struct gate_result *r = &d->r;
	const struct option_values *o = d->o;
	if (step7_record_costs(d, rec)) {
		if (judge_benefit(r, o))
			step8_clock_start(r, o, &rec->cpus);
		return false;
	}
	if (!d->may_measure) {
		steps7_8_no_costs_at_read(d, rec);
		return false;
	}
	if (!step8_clock_start(r, o, &rec->cpus))
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
	const struct gate_result *r = &d->r;
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
	const struct cost_ps *c = &gate_result.cost;
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
	text_add(t, gate_result.costs_from_record ? " ns, from the record; TSCSHIM_SERVE=" : " ns, measured now; TSCSHIM_SERVE=");
	text_add(t, o->num[OPT_SERVE] == SERVE_ALWAYS ? "always" : "auto");
	text_add(t, ", TSCSHIM_MIN_GAIN_PCT=");
	text_add_u64(t, o->num[OPT_MIN_GAIN_PCT]);
}

/* The count at which the decision was claimed (0: at load, or asked for by the status). */
static uint64_t decided_at_read;

/* "N us at clock read M", "... at load", "... when the status was asked for". */
static void say_when(struct text *t)
{
	text_add_u64(t, gate_result.decide_ns / 1000);
	if (decided_at_load) {
		text_add(t, " us at load (no record passed the checks at load)");
	} else if (decided_at_read > 1) {
		text_add(t, " us at clock read ");
		text_add_u64(t, decided_at_read);
	} else {
		text_add(t, decided_at_read ? " us at the first clock read" : " us when the status was asked for");
	}
	if (gate_result.prepared_reads) {
		text_add(t, ", prepared in ");
		text_add_u64(t, gate_result.prepared_ns / 1000);
		text_add(t, " us at the ");
		text_add_u64(t, gate_result.prepared_reads);
		text_add(t, gate_result.prepared_reads == 1 ? " read before it" : " reads before it");
	}
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
	say_when(&t);
	say_costs(&t, o);
	text_add(&t, ")");
	/* The benefit gate's reason starts "pass-through: ", which the line says already. */
	const char *reason = gate_result.reason + (gate_result.not_worth_it ? strlen("pass-through: ") : 0);
	const char *note = record_note();
	say(gate_result.serving ? "serving from the TSC: " : "passing through: ", reason, figures,
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

/* Part 6, the last: steps 4 to 9 on what parts 1 to 5 found (step 5 and the cost
 * measurement only in a forced decision). Ends the decision. */
static bool part_verdict(struct decision *d)
{
	struct gate_result *r = &d->r;
	const struct option_values *o = d->o;
	struct found_record *found = &d->found;
	struct counter_identity id;
	struct verdict v;
	counter_identity(found, &id);
	/* The clocksource as it is now, where it decides: part 3 may have read it long ago
	 * (the reads before the due one can be hours apart), and the kernel's watchdog may
	 * have left the TSC meanwhile. */
	if (o->num[OPT_REQUIRE_TSC_CLOCKSOURCE])
		part_clocksource(d);
	if (step4_counter_refuses(d, &id, &v)) {
		text_line(r->reason, sizeof r->reason, v.reason, NULL);
		return false;
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
			return false;
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
	return false;
}

/* Step 1, the first thing the first part does: the options. Returns false (reason set)
 * when they end the decision. */
static bool step1_options(struct decision *d)
{
	struct gate_result *r = &d->r;
	if (options.disabled_alone && !wrong_libc[0]) {
		/* The A/B baseline's decision: the defaults it reports are options.h's numbers;
		 * nothing to parse or look at. */
		r->served = OPTION_CLOCKS_DEFAULT_SET;
		r->fenced = OPTION_FENCE_DEFAULT != 0;
		pass_through(r, "TSCSHIM_DISABLE=1");
		return false;
	}
	const struct option_values *o = d->o = options_resolved_for_decision();
	if (getauxval(AT_SECURE)) {
		pass_through(r, "secure execution: environment and cache ignored, passing through");
		return false;
	}
	if (options.invalid || wrong_libc[0]) {
		pass_through(r, options.invalid ? options.invalid : wrong_libc);
		return false;
	}
	r->served = (uint32_t)o->num[OPT_CLOCKS];
	r->fenced = o->num[OPT_FENCE] != 0;
	if (o->num[OPT_DISABLE] || r->served == 0) {
		pass_through(r, o->num[OPT_DISABLE] ? "TSCSHIM_DISABLE=1" : "TSCSHIM_CLOCKS=none");
		return false;
	}
	return true;
}

/* The decision's parts, in order: one table. Each read of a served clock among the
 * PREPARE_PARTS reads before the due one runs the next part not yet done (where no other
 * thread is running one), so that no read pays for the whole decision: each part costs
 * a look-up through /proc or /sys, or a file's read, a few microseconds. The due read
 * runs what is left, at least the verdict and the clock's start; a forced decision (a
 * cold start at load, a status query) runs them all at once. Each returns false when the
 * decision ends there (its reason set): it is then published at that read. */
static bool part_options_and_cpu_set(struct decision *d)
{
	return step1_options(d) && part_cpu_set(d);
}
static bool (*const decision_parts[])(struct decision *) = {
	part_options_and_cpu_set, /* step 1, and the CPU set (1-2 us) */
	part_boot,                /* step 2: the boot's id (/proc/sys: 5-10 us) */
	part_clocksource,         /* the clocksource the costs are of (/sys: 6-11 us) */
	part_system_record,       /* step 3: the machine-wide record (7-12 us) */
	part_cache,               /* step 3: the per-user cache, where needed (7-10 us) */
	part_verdict,             /* steps 4 to 9: the verdict, the costs, the clock's start */
};
enum { DECISION_PARTS = sizeof decision_parts / sizeof decision_parts[0] };
_Static_assert(PREPARE_PARTS == DECISION_PARTS - 1, "a read before the due one for each part but the last");

/* Runs the next part not yet done, or all of them. Returns true when the
 * decision ended (r holds it); what step 3 took (the measuring lock) is released then, in
 * this one place, however the parts after it ended. */
static bool run_parts(struct decision *d, bool all, bool may_measure)
{
	_Atomic uint32_t *done = record_decision_parts();
	unsigned part = atomic_load_explicit(done, memory_order_relaxed);
	if (part == 0) {
		memset(d, 0, sizeof *d);
		d->r.max_shift_ns = UINT64_MAX;
		d->found.lock = RECORD_LOCK_NONE;
	}
	d->may_measure = may_measure;
	unsigned until = all ? DECISION_PARTS : part + 1;
	bool going = true;
	for (; going && part < until && part < DECISION_PARTS; part++)
		going = decision_parts[part](d);
	atomic_store_explicit(done, part, memory_order_relaxed);
	if (going && part < DECISION_PARTS)
		return false;
	if (d->found.lock >= 0)
		close(d->found.lock);
	return true;
}
/* What the decision says when TSCSHIM_VERBOSE is set. */
static void say_decided(void)
{
	const char *why_dlsym;
	if (say_level >= 2 && real_found_by_dlsym(&why_dlsym))
		say("real functions found with dlsym: ", why_dlsym, NULL);
	else if (say_level >= 2)
		say("real functions read from the loader's tables", NULL);
	if (say_level >= 1 && !options.invalid && wrong_libc[0])
		say("passing through: ", wrong_libc, NULL);
	else if (say_level >= 1 && !options.invalid)
		say_decision(options_resolved_for_decision());
}

/* ---- the claim: one decision at a time in an address space ---- */

/* The phase: undecided, or decided (gate_result published). On the load page: a fork
 * child inherits a decision made. */
enum { PHASE_UNDECIDED, PHASE_DECIDED };
static _Atomic uint32_t phase ON_LOAD_PAGE;

/* The claim (record_decision_claim): the deciding thread's id, CLAIM_GIVEN_UP once a
 * reader found that thread gone, 0 when nobody decides. It lies on the fork-wiped pages,
 * marked before anyone claims: a fork child of a process caught mid-decision finds it free
 * and decides for itself (its count of reads inherited, its next read is due), while a
 * vfork or CLONE_VM child, sharing the memory, finds it held and passes through: one
 * address space never runs two decisions. No read ever makes a system call to tell
 * which process it is in. */
#define CLAIM_GIVEN_UP ((uint64_t)1 << 32)
/* Atomic: two threads whose reads fall due together may both mark it (madvise is
 * idempotent), and neither may tear the flag. */
static _Atomic bool claim_page_marked ON_LOAD_PAGE;

/* Counted only while a decision is under way: shared lines, written in that window
 * alone. The reads that found the claim held (the dead decider's check counts them), and
 * those of them that passed through (the stats line's passed_while_deciding). */
static _Atomic uint64_t reads_finding_claim;
static _Atomic uint64_t passed_while_deciding;

uint64_t gate_passed_while_deciding(void)
{
	return atomic_load_explicit(&passed_while_deciding, memory_order_relaxed);
}

bool gate_decided(void)
{
	return atomic_load_explicit(&phase, memory_order_acquire) == PHASE_DECIDED;
}

/* The decision's result and figures, then the phase (release): readers that see it
 * decided see them. The one place gate_result is written. */
static void publish(const struct gate_result *r)
{
	gate_result = *r;
	atomic_store_explicit(&phase, PHASE_DECIDED, memory_order_release);
}

/* Without MADV_WIPEONFORK (kernels before 4.14) a fork child frees the claim itself, and
 * starts the decision's parts over, as the wiped page would have it. */
static void claim_reset_in_child(void)
{
	atomic_store_explicit(record_decision_claim(), 0, memory_order_relaxed);
	atomic_store_explicit(record_decision_parts(), 0, memory_order_relaxed);
}

/* The claim's page marked wiped on fork, before the first claim: once per process image
 * (a fork child keeps the mark). The same pages the clock's start marks (clock.c), which
 * then finds them marked. */
static void mark_claim_page(void)
{
	if (atomic_load_explicit(&claim_page_marked, memory_order_acquire))
		return;
	if (raw_syscall4(SYS_madvise, (long)&wiped, sizeof wiped, MADV_WIPEONFORK, 0) != 0)
		libc_atfork_child(claim_reset_in_child);
	else
		atomic_store_explicit(&claim_page_wiped_by_kernel, true, memory_order_relaxed);
	atomic_store_explicit(&claim_page_marked, true, memory_order_release);
}

/* The deciding thread died mid-decision (killed by a seccomp filter, say): this process
 * passes through for good, at the real function's cost. Whatever that thread began (a
 * line published, the path opened) is closed again. */
static void give_up_after_dead_decider(void)
{
	clock_close();
	struct gate_result r = {.max_shift_ns = UINT64_MAX};
	pass_through(&r, "the thread deciding died mid-decision (killed by a seccomp filter?); passing every "
			 "call through");
	publish(&r);
	if (say_level >= 1)
		say("passing through: ", r.reason, NULL);
}

/* A read that found the decision claimed: pass through, never wait. Now and then (at the
 * 1024th such read, then at each doubling: a handful of system calls in a process's life)
 * it checks that the thread deciding still exists; when it is gone, the process passes
 * through for good. True when the decision is made meanwhile. */
static bool claimed_elsewhere(uint64_t claim)
{
	uint64_t seen = atomic_fetch_add_explicit(&reads_finding_claim, 1, memory_order_relaxed) + 1;
	bool check = seen >= 1024 && (seen & (seen - 1)) == 0 && claim != CLAIM_GIVEN_UP;
	/* Gone, undecided: the one reader that swaps the claim gives up for the process, and
	 * dispatches its read again (the caller then takes the pass-through's direct path). */
	if (check && raw_syscall4(SYS_tkill, (long)(claim & 0xffffffffu), 0, 0, 0) == -ESRCH && !gate_decided() &&
	    atomic_compare_exchange_strong(record_decision_claim(), &claim, CLAIM_GIVEN_UP)) {
		give_up_after_dead_decider();
		return true;
	}
	if (gate_decided())
		return true;
	/* Counted only when this read does pass through: the stats add it to the calls
	 * passed, never to those served. */
	atomic_fetch_add_explicit(&passed_while_deciding, 1, memory_order_relaxed);
	return false;
}

/* ---- the decision's own stack ---- */

/* The decision runs on this stack, not the caller's: the due read may come in a signal
 * handler on a small alternate stack (6 KiB and less crashed: the decision and libc's
 * calls under it need more). One decision at a time per address space (the claim), so
 * one stack. Its pages are touched only by a decision. Sanitizer builds, whose runtimes
 * track the stack, decide on the caller's. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DECISION_OWN_STACK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DECISION_OWN_STACK 0
#endif
#endif
#if !defined(DECISION_OWN_STACK) && defined(__x86_64__)
#define DECISION_OWN_STACK 1
#elif !defined(DECISION_OWN_STACK)
#define DECISION_OWN_STACK 0
#endif
enum { DECISION_STACK_SIZE = 64 * 1024 };
static AFTER_BSS _Alignas(4096) unsigned char decision_stack[DECISION_STACK_SIZE];

/* fn(arg) on decision_stack: rsp switched, the call made, rsp restored; every register
 * the call may change is declared so. */
static void run_on_decision_stack(void (*fn)(void *), void *arg)
{
#if DECISION_OWN_STACK
	void *top = decision_stack + sizeof decision_stack; /* 16-byte aligned at the call */
	__asm__ volatile("mov %%rsp, %%rbx\n\t"
			 "mov %[top], %%rsp\n\t"
			 "call *%[fn]\n\t"
			 "mov %%rbx, %%rsp"
			 : "+D"(arg), [fn] "+S"(fn), [top] "+d"(top)
			 :
			 : "rbx", "rax", "rcx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2",
			   "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)",
			   "st(7)");
#else
	fn(arg);
#endif
}

/* How much of decision_stack the decisions so far used: its untouched low end is still
 * zero. For TSCSHIM_VERBOSE=2 (make stack-usage reads it): reading the whole stack
 * touches its pages. */
static size_t decision_stack_used(void)
{
	size_t i = 0;
	while (i < sizeof decision_stack && decision_stack[i] == 0)
		i++;
	return sizeof decision_stack - i;
}

static void say_stack_used(void)
{
	if (!DECISION_OWN_STACK || say_level < 2)
		return;
	char text[64];
	struct text t = text_start(text, sizeof text);
	text_add_u64(&t, decision_stack_used());
	text_add(&t, " of ");
	text_add_u64(&t, sizeof decision_stack);
	say("decision stack: ", text, " bytes used (libc's frames included)", NULL);
}

/* What one claim of the decision runs: one more part (a read before the due one), or
 * every part left (the due read, a forced decision). */
struct decision_call {
	uint64_t read_number; /* 0: forced (at load, a status query): it may measure */
	bool all;
};

/* The decision's parts, on their own stack: those this call runs, and when the decision
 * ends, published and said. */
static void decide_on_own_stack(void *arg)
{
	const struct decision_call *call = arg;
	struct decision *d = &under_way;
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);
	bool ended = run_parts(d, call->all, call->read_number == 0);
	uint64_t took = refclock_now_ns(CLOCK_MONOTONIC) - began;
	if (!ended) {
		d->prepared_ns += took;
		d->prepared_reads++;
		return;
	}
	decided_at_read = call->read_number;
	d->r.decide_ns = took;
	d->r.prepared_ns = d->prepared_ns;
	d->r.prepared_reads = d->prepared_reads;
	publish(&d->r);
	say_decided();
	say_stack_used();
}

/* What one attempt on the claim came to. */
enum claim_outcome {
	CLAIM_LOST,      /* another thread (or a vfork child) took it first */
	CLAIM_DECIDED,   /* the decision is made (now, or by another meanwhile) */
	CLAIM_PART_DONE, /* one part done, the decision not yet made: the claim freed again */
};

/* Takes the claim and runs what this read owes: one more part, or every part left
 * (`all`). Every signal is blocked and cancellation off from before the claim is taken
 * until after it is freed (or kept, the decision made), errno kept: a handler that jumps
 * out, or a cancellation acted on, between the two would leave the claim held by a live
 * thread for good (no handler runs inside a part, jumps out of it or cancels it). Only a
 * forced decision may measure: a cold start at load, or a status query, which a program
 * (tscshim calib --save's costs child) makes to have it decided now; never a read
 * (read_number 0: not a read). On CLAIM_LOST, *held is the claim found. */
static enum claim_outcome claim_and_decide(uint64_t read_number, bool all, uint64_t *held)
{
	_Atomic uint64_t *claim = record_decision_claim();
	uint64_t me = (uint64_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0) & 0xffffffffu;
	uint64_t saved_mask;
	bool blocked = signals_block_all(&saved_mask);
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	int saved_errno = errno;
	enum claim_outcome outcome;
	if (!atomic_compare_exchange_strong(claim, held, me)) {
		outcome = CLAIM_LOST;
	} else if (gate_decided()) {
		outcome = CLAIM_DECIDED; /* decided between our first look and the claim */
	} else {
		decision_signals_blocked = blocked;
		struct decision_call call = {read_number, all};
		run_on_decision_stack(decide_on_own_stack, &call);
		outcome = gate_decided() ? CLAIM_DECIDED : CLAIM_PART_DONE;
		/* The claim is free for the next read's part, whichever thread makes it. */
		if (outcome == CLAIM_PART_DONE)
			atomic_store_explicit(claim, 0, memory_order_release);
	}
	errno = saved_errno;
	pthread_setcancelstate(cancel_state, NULL);
	signals_restore(blocked, &saved_mask);
	return outcome;
}

bool gate_decide_if_due(clockid_t clock, bool force)
{
	if (gate_decided())
		return true;
	if (!loaded)
		return false;
	/* A read before the decision's parts are due only counts, whatever the claim: a fork
	 * child of a process whose decision was forced (a status query) waits for its own
	 * reads too. From the first read that prepares on, every read of a served clock
	 * looks at the claim. */
	uint64_t read_number = 0, decide_after = 0;
	bool all = force;
	if (!force) {
		read_number = served_read_number(clock, &decide_after);
		if (read_number == 0 || read_number + PREPARE_PARTS < decide_after)
			return false;
		/* One part a read, the last (steps 4 to 9) at the due read; where other threads'
		 * batches carried the count past the first reads that prepare, the parts go on
		 * at the reads after it, one a read, and the decision comes as many reads later.
		 * A count too small for five reads before it runs what is left at the due read
		 * (TSCSHIM_DECIDE_AFTER=1: everything at the first). */
		all = read_number >= decide_after && decide_after <= PREPARE_PARTS;
	}
	/* The estimator's child, forked by the decider, and its threads carry on the decider's
	 * work and never decide. */
	if (atomic_load_explicit(&measuring_in_child, memory_order_relaxed))
		return false;
	uint64_t held = atomic_load_explicit(record_decision_claim(), memory_order_acquire);
	if (held != 0)
		return claimed_elsewhere(held);
	mark_claim_page();
	switch (claim_and_decide(read_number, all, &held)) {
	case CLAIM_LOST:
		return claimed_elsewhere(held);
	case CLAIM_DECIDED:
		return true;
	default:
		/* This read passed through while the decision was under way. */
		atomic_fetch_add_explicit(&passed_while_deciding, 1, memory_order_relaxed);
		return false;
	}
}

/* ---- at exit: the verbose line of a process that never decided ---- */

/* Why this process never decided, for its one verbose line. */
static const char *never_decided_why(void)
{
	if (wrong_libc[0])
		return wrong_libc;
	if (options.values.num[OPT_DISABLE])
		return "TSCSHIM_DISABLE=1";
	if (options.values.num[OPT_CLOCKS] == 0)
		return "TSCSHIM_CLOCKS=none";
	if (atomic_load_explicit(record_decision_claim(), memory_order_relaxed) != 0)
		return "a decision was still under way at exit";
	return "fewer reads of a served clock than TSCSHIM_DECIDE_AFTER";
}

static __attribute__((noinline)) void say_never_decided(void)
{
	char text[160];
	struct text t = text_start(text, sizeof text);
	text_add(&t, "never decided: ");
	/* This thread's reads not yet shared count too; other threads' (fewer than a batch
	 * each) do not: "at least". */
	text_add_u64(&t, atomic_load_explicit(&reads_before_decision, memory_order_relaxed) + reads_not_yet_shared);
	text_add(&t, " reads of a served clock, the decision due at read ");
	text_add_u64(&t, options.values.num[OPT_DECIDE_AFTER]);
	text_add(&t, " (TSCSHIM_DECIDE_AFTER); every call went to the kernel's clock: ");
	say(text, never_decided_why(), NULL);
}

/* Every process runs it at exit; only one whose TSCSHIM_VERBOSE was set at load does
 * anything (one flag on the load page): the line a process that never decided owes. */
LOAD_PATH __attribute__((destructor)) static void gate_at_exit(void)
{
	if (verbose_at_exit && !gate_decided()) {
		say_at_exit();
		say_never_decided();
	}
}
