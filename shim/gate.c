/* The gate: when the decision runs, and the one place its outcome is published. Step 1
 * (the options, taken at load: secure execution, invalid settings, the other C library,
 * disabled, nothing to serve) is here; steps 2 to 9 are decision.c's: the boot, the
 * records, the verdict, the costs and the clock's start, in one call.
 *
 * When: at the TSCSHIM_DECIDE_AFTER-th read of a served clock (gate_decide_if_due), or at
 * load when nothing is recorded (a cold start), or at a status query: one trigger path.
 * Nothing is measured at a program's read: the estimator and the cost measurement run
 * only in a cold start at load, before the program's threads exist, or at a status
 * query, which asks for the decision now. A read that finds
 * no record answering (one that passed the checks at load and fails at the read) passes
 * through, says why in one verbose line, and marks the cache for a measurement at the
 * next start's load. Whoever decides runs in someone else's program, on whatever thread
 * and stack made that read, perhaps in a signal handler on a small alternate stack: each
 * part runs on a stack of its own (decision_stack), every signal blocked, no heap on a
 * warm start, no thread, nothing left behind. One decision runs at a time in an address
 * space (the claim), with every signal blocked once for all of it: a decision at a read
 * makes as few system calls as its look-ups need (decision.c), and the gate adds two (the
 * signal mask), a third (the thread's id) and a fourth (the claim's page marked wiped on
 * fork) only where another thread exists to find the claim held or to fork meanwhile. */
#define _GNU_SOURCE
#include "gate.h"
#include "load_page.h"

#include "clock.h"
#include "environment.h"
#include "real.h"
#include "record.h"
#include "say.h"
#include "signals.h"
#include "line.h"
#include "stats.h"
#include "visible.h"

#include "libc_kind.h"
#include "options.h"
#include "raw_syscall.h"
#include "refclock.h"
#include "text.h"

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

ON_LOAD_PAGE struct decision_result gate_result;

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

/* An option's value before the whole set is resolved: the one parsed at load where a
 * TSCSHIM_ variable was set; else the table's default as options.h states it as a number
 * (test_options checks that the table's text parses to it), so that a process that sets
 * none and never decides parses nothing. The reads before the decision ask two, and the
 * A/B baseline's decision (TSCSHIM_DISABLE=1 alone) reports two more; the decision
 * itself has the whole set (options_resolved_for_decision). */
static uint64_t option_before_decision(enum option_id id)
{
	if (options.variables_set)
		return options.values.num[id];
	switch (id) {
	case OPT_CLOCKS: return OPTION_CLOCKS_DEFAULT_SET;
	case OPT_FENCE: return OPTION_FENCE_DEFAULT;
	case OPT_DECIDE_AFTER: return OPTION_DECIDE_AFTER_DEFAULT;
	case OPT_DISABLE: return options.disabled_alone;
	default: {
		/* Any other: the table's default, parsed into a copy of the caller's own. */
		struct option_values defaults;
		options_set_defaults(&defaults);
		return defaults.num[id];
	}
	}
}

/* Reads of served clocks while undecided, added a thread's batch at a time (below): a
 * shared line, written only before the decision is due, and never on the served path. A
 * fork child inherits the count (and its forking thread's batch). */
/* reads_before_decision: kept beside the state block (visible.h), which tscshim ps reads. */
/* This thread's reads not yet added to reads_before_decision (at most COUNT_BATCH - 1).
 * Initial-exec: the shim is preloaded, so its thread-local block is static (as stats.h's). */
enum { COUNT_BATCH = 64 };
static __thread uint32_t reads_not_yet_shared __attribute__((tls_model("initial-exec")));

/* Asked by the trigger before it claims the decision: 0 when this clock is not served (it
 * never decides), else this read's number among the served clocks' reads, counted once
 * per call, and the read at which the decision is due. */
static uint64_t served_read_number(clockid_t clock, uint64_t *decide_after)
{
	uint64_t served = option_before_decision(OPT_CLOCKS);
	*decide_after = option_before_decision(OPT_DECIDE_AFTER);
	unsigned c = served_clock_slot(clock);
	if (c >= SERVED_CLOCK_COUNT || !((served >> c) & 1))
		return 0;
	/* Each thread counts in a word of its own and adds its count to the shared one once
	 * per COUNT_BATCH reads, or at once where the two together reach the first of the
	 * reads that prepare the decision: one thread's reads are still numbered exactly,
	 * and threads reading at once write the shared line once a batch, not at every read
	 * (an atomic add on a line two CPUs fight over cost 117 ns a read). Shared only
	 * until due: the reads after it (while a decision is under way) only load the shared
	 * word and count on in their own, so that each thread's reads stay numbered. */
	uint64_t shared = atomic_load_explicit(&reads_before_decision, memory_order_relaxed);
	uint64_t mine = (uint64_t)reads_not_yet_shared + 1;
	if (shared >= *decide_after || (shared + mine < *decide_after && mine < COUNT_BATCH)) {
		reads_not_yet_shared = (uint32_t)mine;
		return shared + mine;
	}
	reads_not_yet_shared = 0;
	return atomic_fetch_add_explicit(&reads_before_decision, mine, memory_order_relaxed) + mine;
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
		decision_say(&gate_result, options_resolved_for_decision(), decided_at_load, gate_result.at_read);
}

/* ---- the claim: one decision at a time in an address space ---- */


/* The kernel marked the decision's pages wiped on fork (MADV_WIPEONFORK, at the first
 * claim: mark_claim_page): the clock's start, which marks the same pages, need not ask
 * again. On the load page: a fork child inherits the mark with the flag. */
static _Atomic bool claim_page_wiped_by_kernel ON_LOAD_PAGE;

/* The phase: undecided, or decided (gate_result published). On the load page: a fork
 * child inherits a decision made. */
enum { PHASE_UNDECIDED, PHASE_DECIDED };
static _Atomic uint32_t phase ON_LOAD_PAGE;

/* The claim (record_decision_claim): the deciding thread's id, CLAIM_ONLY_THREAD where it
 * is the process's only thread, CLAIM_GIVEN_UP once a reader found the decider gone, 0
 * when nobody decides. It lies on the fork-wiped pages, marked before a multi-threaded
 * process claims: a fork child of a process caught mid-decision finds it free and decides
 * for itself (its count of reads inherited, its next read is due), while a vfork or
 * CLONE_VM child, sharing the memory, finds it held and passes through: one address
 * space never runs two decisions. No read ever makes a system call to tell which process
 * it is in.
 *
 * The only thread (the C library says so: glibc's __libc_single_threaded) needs neither
 * its id nor the mark: with its signals blocked, no other thread of its process can come
 * to be, fork or find the claim held while it decides, and if it dies the process dies
 * with it. Its claim is CLAIM_ONLY_THREAD and, in the low 32 bits, a deadline in seconds of
 * CLOCK_MONOTONIC: the decider that a reader can find gone without its id is a vfork child
 * that decided for its parent's address space and was killed mid-decision (the parent,
 * suspended meanwhile, then finds the claim held), or a thread made by a raw clone, which
 * the C library does not count; a reader that is the only thread, or that finds such a
 * claim past its deadline (a decision at a read takes microseconds; one that measures, its
 * budget), gives the decider up, as for a thread found gone. Elsewhere (musl, threads) the id is asked and
 * the page marked. */
#define CLAIM_GIVEN_UP ((uint64_t)1 << 32)
#define CLAIM_ONLY_THREAD ((uint64_t)1 << 33)
#define CLAIM_DEADLINE_MASK 0xffffffffu
/* Seconds a decision by the only thread may take before a reader gives it up, beyond the
 * estimate's budget where it measures. */
enum { CLAIM_ONLY_THREAD_GRACE_S = 10 };
extern char __libc_single_threaded __attribute__((weak));

/* The only thread's claim: CLAIM_ONLY_THREAD and its deadline (above). A forced decision
 * may measure: the estimate's budget, the calibration and the child's 5 ms on top. */
static uint64_t only_thread_claim(bool may_measure)
{
	uint64_t seconds = CLAIM_ONLY_THREAD_GRACE_S;
	if (may_measure)
		seconds += (option_before_decision(OPT_ESTIMATE_BUDGET_US) + option_before_decision(OPT_CALIBRATE_US)) /
			   1000000u + 1;
	uint64_t deadline = refclock_now_ns(CLOCK_MONOTONIC) / 1000000000u + seconds;
	return CLAIM_ONLY_THREAD | (deadline < CLAIM_DEADLINE_MASK ? deadline : CLAIM_DEADLINE_MASK);
}

/* True where the C library says no other thread was ever created in this process. */
static bool only_thread(void)
{
	return &__libc_single_threaded && __libc_single_threaded;
}
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

/* The decision's result and figures, with how long it took and at which read (0: at load
 * or a query), then the phase (release): readers that see it decided see them. The one
 * place gate_result is published (step 1 writes a refusal into it first, unpublished). */
static void publish(const struct decision_result *r, uint64_t decide_ns, uint64_t at_read)
{
	if (r != &gate_result)
		gate_result = *r;
	gate_result.decide_ns = decide_ns;
	gate_result.at_read = at_read;
	atomic_store_explicit(&phase, PHASE_DECIDED, memory_order_release);
	visible_published(&gate_result, decided_at_load);
}

/* Without MADV_WIPEONFORK (kernels before 4.14) a fork child frees the claim itself, as
 * the wiped page would have it. */
static void claim_reset_in_child(void)
{
	atomic_store_explicit(record_decision_claim(), 0, memory_order_relaxed);
}

/* The claim's page marked wiped on fork, before a claim where other threads exist: once
 * per process image (a fork child keeps the mark). The same pages the clock's start marks
 * (clock.c), which then finds them marked. Returns whether the kernel marks them. */
static bool mark_claim_page(void)
{
	if (!atomic_load_explicit(&claim_page_marked, memory_order_acquire)) {
		if (raw_syscall4(SYS_madvise, (long)&wiped, sizeof wiped, MADV_WIPEONFORK, 0) != 0)
			libc_atfork_child(claim_reset_in_child);
		else
			atomic_store_explicit(&claim_page_wiped_by_kernel, true, memory_order_relaxed);
		atomic_store_explicit(&claim_page_marked, true, memory_order_release);
	}
	return atomic_load_explicit(&claim_page_wiped_by_kernel, memory_order_relaxed);
}

/* The deciding thread died mid-decision (killed by a seccomp filter, say): this process
 * passes through for good, at the real function's cost. Whatever that thread began (a
 * line published, the path opened) is closed again. */
static void give_up_after_dead_decider(void)
{
	clock_close();
	struct decision_result r = {.max_shift_ns = UINT64_MAX};
	text_line(r.reason, sizeof r.reason,
		  "the thread deciding died mid-decision (killed by a seccomp filter?); passing every call through", NULL);
	publish(&r, 0, 0);
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
	bool gone = false;
	/* A reader that is the only thread itself finds the only thread's claim held by no
	 * one: it was not made on this thread (no handler runs inside a decision), so by a
	 * vfork child, which is gone once the parent runs again. */
	if (check && (claim & CLAIM_ONLY_THREAD))
		gone = only_thread() || refclock_now_ns(CLOCK_MONOTONIC) / 1000000000u > (claim & CLAIM_DEADLINE_MASK);
	else if (check)
		gone = raw_syscall4(SYS_tkill, (long)(claim & 0xffffffffu), 0, 0, 0) == -ESRCH;
	/* Gone, undecided: the one reader that swaps the claim gives up for the process, and
	 * dispatches its read again (the caller then takes the pass-through's direct path). */
	if (gone && !gate_decided() && atomic_compare_exchange_strong(record_decision_claim(), &claim, CLAIM_GIVEN_UP)) {
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

/* Step 1, at the decision: the options as they were at load. Returns them when the
 * decision goes on; else NULL, with the pass-through in *r. */
static const struct option_values *step1_options(struct decision_result *r)
{
	*r = (struct decision_result){.max_shift_ns = UINT64_MAX};
	const char *refusal = NULL;
	const struct option_values *o = NULL;
	if (options.disabled_alone && !wrong_libc[0]) {
		/* The A/B baseline's decision: the defaults it reports are options.h's numbers;
		 * nothing to parse or look at. */
		r->served = (uint32_t)option_before_decision(OPT_CLOCKS);
		r->fenced = option_before_decision(OPT_FENCE) != 0;
		refusal = "TSCSHIM_DISABLE=1";
	} else {
		o = options_resolved_for_decision();
		r->served = (uint32_t)o->num[OPT_CLOCKS];
		r->fenced = o->num[OPT_FENCE] != 0;
		if (getauxval(AT_SECURE))
			refusal = "secure execution: environment and cache ignored, passing through";
		else if (options.invalid || wrong_libc[0])
			refusal = options.invalid ? options.invalid : wrong_libc;
		else if (o->num[OPT_DISABLE] || r->served == 0)
			refusal = o->num[OPT_DISABLE] ? "TSCSHIM_DISABLE=1" : "TSCSHIM_CLOCKS=none";
	}
	if (!refusal)
		return o;
	text_line(r->reason, sizeof r->reason, refusal, NULL);
	return NULL;
}

/* Whether a forced decision may measure: a cold start at load always (no thread of the
 * program runs yet); a status query only where the C library does not say other threads
 * exist. The estimator's fork is libc's (it must run the host's fork handlers), and glibc's
 * fork takes malloc's locks where threads exist: a query made in a signal handler that
 * interrupted malloc would wait for itself for ever (tscshim_status is async-signal-safe).
 * Such a query passes through instead, and the next start measures at load. */
static bool may_measure_now(void)
{
	return decided_at_load || !(&__libc_single_threaded && !__libc_single_threaded);
}

/* What a claim of the decision was made for: a read (its number), or 0 for a forced
 * decision (at load, a status query), which may measure. On the claimer's stack: the
 * decision writes no data page of the gate's but the published result (on the load page). */
struct decision_call {
	uint64_t read_number;
	bool wiped_marked;    /* the claim's page was marked wiped on fork for this decision */
	bool signals_blocked; /* every signal is blocked for it (the block may be refused, by a
			       * seccomp filter say): the first publication need not block them */
};

/* The decision, on its own stack: step 1, then decision.c's steps; published and said.
 * A refusal at step 1 is written into gate_result itself, not yet published (the phase
 * says undecided until publish). */
static void decide_on_own_stack(void *arg)
{
	const struct decision_call *call = arg;
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);
	const struct option_values *o = step1_options(&gate_result);
	const struct decision_result *outcome = &gate_result;
	if (o) {
		struct decision_setup setup = {
			.o = o,
			.may_measure = call->read_number == 0 && may_measure_now(),
			.boot_unknown = boot_unknown,
			.signals_blocked = call->signals_blocked,
			.wiped_marked = call->wiped_marked,
		};
		outcome = decision_run(&setup);
	}
	publish(outcome, refclock_now_ns(CLOCK_MONOTONIC) - began, call->read_number);
	say_decided();
	say_stack_used();
}

/* Takes the claim and decides. Every signal is blocked and cancellation off from before
 * the claim is taken until after the decision is published, errno kept: a handler that
 * jumps out, or a cancellation acted on, in between would leave the claim held by a live
 * thread for good (no handler runs inside the decision, jumps out of it or cancels it).
 * Only a forced decision may measure: a cold start at load, or a status query, which a
 * program (tscshim calib --save's costs child) makes to have it decided now; never a read
 * (read_number 0: not a read). Returns false when another thread (or a vfork child) held
 * the claim first: *held is the claim found. */
static bool claim_and_decide(uint64_t read_number, uint64_t *held)
{
	_Atomic uint64_t *claim = record_decision_claim();
	bool alone = only_thread();
	struct decision_call call = {read_number, false, false};
	call.wiped_marked = alone ? atomic_load_explicit(&claim_page_wiped_by_kernel, memory_order_relaxed)
				  : mark_claim_page();
	uint64_t me = alone ? only_thread_claim(read_number == 0)
			    : (uint64_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0) & 0xffffffffu;
	uint64_t saved_mask;
	bool blocked = signals_block_all(&saved_mask);
	int cancel_state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	int saved_errno = errno;
	bool claimed = atomic_compare_exchange_strong(claim, held, me);
	if (claimed && !gate_decided()) {
		call.signals_blocked = blocked;
		run_on_decision_stack(decide_on_own_stack, &call);
	}
	errno = saved_errno;
	pthread_setcancelstate(cancel_state, NULL);
	signals_restore(blocked, &saved_mask);
	return claimed;
}

bool gate_decide_if_due(clockid_t clock, bool force)
{
	if (gate_decided())
		return true;
	if (!loaded)
		return false;
	/* A read before the decision is due only counts, whatever the claim: a fork child of
	 * a process whose decision was forced (a status query) waits for its own reads too.
	 * From the due read on, every read of a served clock looks at the claim (where
	 * threads' batched counts carried the count past it, the first read that sees it due
	 * decides). */
	uint64_t read_number = 0;
	if (!force) {
		uint64_t decide_after = 0;
		read_number = served_read_number(clock, &decide_after);
		if (read_number == 0 || read_number < decide_after)
			return false;
	}
	/* The estimator's child, forked by the decider, and its threads carry on the decider's
	 * work and never decide. */
	if (decision_measuring_in_child())
		return false;
	/* A write, not a load, is the first touch of the claim's page (it changes nothing):
	 * a page first read and then written faults twice. */
	uint64_t held = atomic_fetch_add_explicit(record_decision_claim(), 0, memory_order_acquire);
	if (held != 0)
		return claimed_elsewhere(held);
	if (!claim_and_decide(read_number, &held))
		return claimed_elsewhere(held);
	return true;
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
