/* The gate (gate.h): when the decision runs, the claim, the stack it runs on, and the one
 * place its outcome is published. Owns the batching of the reads before the decision (the
 * shared count is visible.c's), the claim and its page, the forced decision's stack, and
 * gate_result's publication. May not decide (what a decision finds is decision.h's), nor
 * touch the clock but to close it after a dead decider; the switch of stacks itself is
 * shim/stack_switch.h's.
 *
 * Whoever decides runs in someone else's program, on whatever thread and stack made the
 * due read, perhaps in a signal handler on a small alternate stack. So the decision runs
 * on a stack of its own, every signal blocked for all of it (no handler runs inside it,
 * jumps out of it or cancels it), with no heap, no thread and nothing left behind; one
 * decision runs at a time in an address space (the claim). A decision at a read runs on
 * the claim's page itself, the first of the fork-wiped scratch that the first line's
 * publication writes anyway: its state, the record it parses and its stack take no page of
 * their own. A forced decision (a cold start at load, a status query), which may fork the
 * estimator, runs on a stack of 64 KiB that no fork child finds wiped.
 *
 * The gate's own system calls: the signal mask's two, and where another thread exists to
 * find the claim held or to fork meanwhile, the thread's id and the claim page's mark. */
#define _GNU_SOURCE
#include "steps.h"
#include "gate.h"
#include "load_page.h"

#include "clock.h"
#include "decision_say.h"
#include "line.h"
#include "real.h"
#include "record.h"
#include "say.h"
#include "settings.h"
#include "signals.h"
#include "stack_switch.h"
#include "visible.h"

#include "libc_kind.h"
#include "raw_syscall.h"
#include "refclock.h"
#include "text.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>

ON_LOAD_PAGE struct decision_result gate_result;

/* The phase (gate.h). On the load page: a fork child inherits a decision made. */
ON_LOAD_PAGE _Atomic uint32_t gate_phase;

/* ---- when: the reads before the decision ---- */

/* Reads of served clocks while undecided, added a thread's batch at a time (below): a
 * shared line, written only before the decision is due, and never on the served path. A
 * fork child inherits the count (and its forking thread's batch). */
/* reads_before_decision: kept beside the state block (visible.h), which tscshim ps reads. */
/* This thread's reads not yet added to reads_before_decision (at most COUNT_BATCH - 1).
 * Initial-exec: the shim is preloaded, so its thread-local block is static (as stats.h's). */
enum { COUNT_BATCH = 64 };
static __thread uint32_t reads_not_yet_shared __attribute__((tls_model("initial-exec")));

/* 0 when this clock is not served (it never decides), else this read's number among the
 * served clocks' reads, counted once per call; and the read the decision is due at. */
static uint64_t served_read_number(clockid_t clock, uint64_t *decide_after)
{
	uint64_t served = setting_before_decision(OPT_CLOCKS);
	*decide_after = setting_before_decision(OPT_DECIDE_AFTER);
	unsigned c = served_clock_slot(clock);
	if (c >= SERVED_CLOCK_COUNT || !((served >> c) & 1))
		return 0;
	/* Each thread counts in a word of its own and adds its count to the shared one once
	 * per COUNT_BATCH reads, or at once where the two together reach the due read: one
	 * thread's reads are still numbered exactly, and threads reading at once write the
	 * shared line once a batch, not at every read (an atomic add on a line two CPUs fight
	 * over cost 117 ns a read). Past the due read (while a decision is under way) a read
	 * only loads the shared word and counts on in its own. */
	uint64_t shared = atomic_load_explicit(&reads_before_decision, memory_order_relaxed);
	uint64_t mine = (uint64_t)reads_not_yet_shared + 1;
	if (shared >= *decide_after || (shared + mine < *decide_after && mine < COUNT_BATCH)) {
		reads_not_yet_shared = (uint32_t)mine;
		return shared + mine;
	}
	reads_not_yet_shared = 0;
	return atomic_fetch_add_explicit(&reads_before_decision, mine, memory_order_relaxed) + mine;
}

/* ---- the claim: one decision at a time in an address space ---- */

/* The claim's page: the first of the fork-wiped scratch (shim/line.h; record.h leaves it
 * to the gate), its first 128 bytes the line's state. The claim on a cache line of its
 * own, then the stack of a decision at a read, growing down from the page's end: what
 * test/stack-usage.py finds such a decision needs, libc's few frames and a margin fit it. */
struct claim_page {
	_Alignas(64) _Atomic uint64_t claim;
	_Alignas(64) unsigned char stack[RECORD_SCRATCH_GATES_BYTES - 64];
};
_Static_assert(sizeof(struct claim_page) == RECORD_SCRATCH_GATES_BYTES, "the claim's page fills the gate's part");
#define claim_page (*(struct claim_page *)(void *)wiped.decision_scratch)

/* The claim: the deciding thread's id, CLAIM_ONLY_THREAD where it is the process's only
 * thread, CLAIM_GIVEN_UP once a reader found the decider gone, 0 when nobody decides. On
 * the fork-wiped page, marked before a process with threads claims: a fork child of a
 * process caught mid-decision finds it free and decides for itself (its count of reads
 * inherited, its next read is due), while a vfork or CLONE_VM child, sharing the memory,
 * finds it held and passes through: one address space never runs two decisions. No read
 * ever makes a system call to tell which process it is in.
 *
 * The only thread (glibc's __libc_single_threaded says so) needs neither its id nor the
 * mark: with its signals blocked, no other thread of its process can come to be, fork or
 * find the claim held while it decides, and if it dies the process dies with it. Its
 * claim is CLAIM_ONLY_THREAD and, in the low 32 bits, a deadline in seconds of
 * CLOCK_MONOTONIC: the decider that a reader can find gone without its id is a vfork child
 * that decided for its parent's address space and was killed mid-decision, or a thread
 * made by a raw clone, which the C library does not count; a reader that is the only
 * thread, or that finds such a claim past its deadline, gives the decider up, as for a
 * thread found gone. */
#define CLAIM_GIVEN_UP ((uint64_t)1 << 32)
#define CLAIM_ONLY_THREAD ((uint64_t)1 << 33)
#define CLAIM_DEADLINE_MASK 0xffffffffu
/* Seconds a decision by the only thread may take before a reader gives it up, beyond the
 * estimate's budget where it measures. */
enum { CLAIM_ONLY_THREAD_GRACE_S = 10 };
extern char __libc_single_threaded __attribute__((weak));

/* True where the C library says no other thread was ever created in this process. */
static bool only_thread(void)
{
	return &__libc_single_threaded && __libc_single_threaded;
}

/* The only thread's claim (above). A forced decision may measure: the estimate's budget,
 * the calibration and the child's 5 ms on top. */
static uint64_t only_thread_claim(bool forced)
{
	uint64_t seconds = CLAIM_ONLY_THREAD_GRACE_S;
	if (forced)
		seconds += (setting_before_decision(OPT_ESTIMATE_BUDGET_US) + setting_before_decision(OPT_CALIBRATE_US)) /
			   1000000u + 1;
	uint64_t deadline = refclock_now_ns(CLOCK_MONOTONIC) / 1000000000u + seconds;
	return CLAIM_ONLY_THREAD | (deadline < CLAIM_DEADLINE_MASK ? deadline : CLAIM_DEADLINE_MASK);
}

/* The kernel marked the claim's page wiped on fork (MADV_WIPEONFORK): the clock's start,
 * which marks the same pages, need not ask again. On the load page: a fork child inherits
 * the mark with the flag. Atomic: two threads whose reads fall due together may both mark
 * it (madvise is idempotent), and neither may tear the flags. */
static _Atomic bool claim_page_wiped_by_kernel ON_LOAD_PAGE;
static _Atomic bool claim_page_marked ON_LOAD_PAGE;

/* Without MADV_WIPEONFORK (kernels before 4.14) a fork child frees the claim itself, as
 * the wiped page would have it. */
static void claim_reset_in_child(void)
{
	atomic_store_explicit(&claim_page.claim, 0, memory_order_relaxed);
}

/* The claim's page marked wiped on fork, before a claim where other threads exist: once
 * per process image (a fork child keeps the mark). Returns whether the kernel marks it. */
static bool mark_claim_page(void)
{
	if (!atomic_load_explicit(&claim_page_marked, memory_order_acquire)) {
		if (raw_syscall4(SYS_madvise, (long)&wiped, sizeof wiped, MADV_WIPEONFORK, 0) == 0)
			atomic_store_explicit(&claim_page_wiped_by_kernel, true, memory_order_relaxed);
		else if (libc_atfork_child(claim_reset_in_child) != 0 && say_level >= 1)
			say("cannot have a fork child free the decision's claim; its children may pass through", NULL);
		atomic_store_explicit(&claim_page_marked, true, memory_order_release);
	}
	return atomic_load_explicit(&claim_page_wiped_by_kernel, memory_order_relaxed);
}

/* Counted only while a decision is under way: shared lines, written in that window
 * alone. The reads that found the claim held (the dead decider's check counts them), and
 * those of them that passed through (the stats line's passed_while_deciding). */
static _Atomic uint64_t reads_finding_claim;
static _Atomic uint64_t passed_while_deciding;

uint64_t gate_passed_while_deciding(void)
{
	return atomic_load_explicit(&passed_while_deciding, memory_order_relaxed);
}

/* ---- the publication ---- */

/* The decision's result and figures, with how long it took and at which read (0: at load
 * or a query), then the phase (release): readers that see it decided see them. The one
 * place the decision is published; a decision writes its result into gate_result itself
 * beforehand, unpublished (the phase says undecided until here). */
static void publish(const struct decision_result *r, uint64_t decide_ns, uint64_t at_read)
{
	if (r != &gate_result)
		gate_result = *r;
	gate_result.decide_ns = decide_ns;
	gate_result.at_read = at_read;
	atomic_store_explicit(&gate_phase, GATE_DECIDED, memory_order_release);
	visible_published(&gate_result, settings_cold_start());
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
	r.reason_code = STATE_REASON_DECIDER_DIED;
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
	if (gone && !gate_decided() &&
	    atomic_compare_exchange_strong(&claim_page.claim, &claim, CLAIM_GIVEN_UP)) {
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

/* ---- the stacks ---- */

/* A forced decision's stack: it may measure, and the estimator's fork child returns on it
 * (the claim's page may be wiped in that child). Touched only by such a decision. */
enum { FORCED_STACK_SIZE = 64 * 1024 };
static AFTER_BSS _Alignas(4096) unsigned char forced_stack[FORCED_STACK_SIZE];

/* For TSCSHIM_VERBOSE=2 (make stack-usage reads it): how much of a stack the decisions so
 * far used, its untouched low end being still zero (as the claim's page is before the
 * first decision, and in a fork child). */
static void say_stack_used(const unsigned char *stack, size_t size, const char *which)
{
	if (!DECISION_OWN_STACK || say_level < 2)
		return;
	size_t i = 0;
	while (i < size && stack[i] == 0)
		i++;
	char text[64];
	struct text t = text_start(text, sizeof text);
	text_add_u64(&t, size - i);
	text_add(&t, " of ");
	text_add_u64(&t, size);
	say("decision stack (", which, "): ", text, " bytes used (libc's frames included)", NULL);
}

/* ---- the decision ---- */

/* Whether a forced decision may measure: a cold start at load always (no thread of the
 * program runs yet); a status query only where the C library does not say other threads
 * exist. The estimator's fork is libc's (it must run the host's fork handlers), and glibc's
 * fork takes malloc's locks where threads exist: a query made in a signal handler that
 * interrupted malloc would wait for itself for ever (tscshim_status is async-signal-safe).
 * Such a query decides as a read does, and the next start measures at load. */
static bool may_measure_now(void)
{
	return settings_cold_start() || !(&__libc_single_threaded && !__libc_single_threaded);
}

/* What a claim of the decision was made for: a read (its number), or 0 for a forced
 * decision; how the claim was made. On the claimer's stack. */
struct decision_call {
	uint64_t read_number;
	bool wiped_marked;    /* the claim's page was marked wiped on fork for this decision */
	bool signals_blocked; /* every signal is blocked for it (the block may be refused, by a
			       * seccomp filter say): the first publication need not block them */
};

/* The settings' refusal (settings_for_decision wrote its text, r->reason) as a number.
 * settings.c writes the text alone, so the refusal is told apart here in its order: its
 * two fixed texts, then secure execution, then an invalid value before the other C
 * library's build. */
static enum state_reason refusal_code(const struct decision_result *r)
{
	if (strcmp(r->reason, "TSCSHIM_DISABLE=1") == 0)
		return STATE_REASON_DISABLED;
	if (strcmp(r->reason, "TSCSHIM_CLOCKS=none") == 0)
		return STATE_REASON_NO_CLOCKS;
	if (getauxval(AT_SECURE))
		return STATE_REASON_SECURE_EXECUTION;
	return settings_invalid() ? STATE_REASON_INVALID_SETTING : STATE_REASON_OTHER_LIBC;
}

/* The decision, on its stack: the settings' refusal, or what the decision finds, written
 * into gate_result and published; then said. */
static void decide(void *arg)
{
	const struct decision_call *call = arg;
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);
	const struct option_values *o = settings_for_decision(&gate_result);
	if (!o)
		gate_result.reason_code = refusal_code(&gate_result);
	if (o) {
		struct decision_setup s = {o, settings_boot_unknown(), call->signals_blocked, call->wiped_marked};
		if (call->read_number == 0 && may_measure_now())
			decision_forced(&s, &gate_result);
		else
			decision_at_read(&s, &gate_result);
	}
	publish(&gate_result, refclock_now_ns(CLOCK_MONOTONIC) - began, call->read_number);
	STEP("decision: the result published");
	const char *why_dlsym = "";
	bool by_dlsym = say_level >= 2 && real_found_by_dlsym(&why_dlsym);
	if (say_level >= 2)
		say(by_dlsym ? "real functions found with dlsym: " : "real functions read from the loader's tables",
		    why_dlsym, NULL);
	/* An invalid setting was said at load, in its one line. */
	if (say_level >= 1 && settings_wrong_libc())
		say("passing through: ", settings_wrong_libc(), NULL);
	else if (say_level >= 1 && !settings_invalid())
		decision_say(&gate_result, o, settings_cold_start());
	if (call->read_number)
		say_stack_used(claim_page.stack, sizeof claim_page.stack, "the claim's page");
	else
		say_stack_used(forced_stack, sizeof forced_stack, "a forced decision's");
}

/* Takes the claim and decides. Every signal is blocked and cancellation off from before
 * the claim is taken until after the decision is published, errno kept: a handler that
 * jumps out, or a cancellation acted on, in between would leave the claim held by a live
 * thread for good. Returns false when another thread (or a vfork child) held the claim
 * first: *held is the claim found. */
static bool claim_and_decide(uint64_t read_number, uint64_t *held)
{
	bool alone = only_thread();
	struct decision_call call = {read_number, false, false};
	call.wiped_marked = alone ? atomic_load_explicit(&claim_page_wiped_by_kernel, memory_order_relaxed)
				  : mark_claim_page();
	uint64_t me = alone ? only_thread_claim(read_number == 0)
			    : (uint64_t)raw_syscall4(SYS_gettid, 0, 0, 0, 0) & 0xffffffffu;
	uint64_t saved_mask;
	STEP("decision: the claim's page written");
	bool blocked = signals_block_all(&saved_mask);
	/* Only another thread can cancel this one (its own handlers are blocked): alone, the
	 * call is not made (its first touch of libc's page cost 6-7 us on a microVM). */
	int cancel_state;
	bool cancel_set = !alone && pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state) == 0;
	int saved_errno = errno;
	bool claimed = atomic_compare_exchange_strong(&claim_page.claim, held, me);
	STEP("decision: cancellation off, the claim taken");
	if (claimed && !gate_decided()) {
		call.signals_blocked = blocked;
		run_on_stack(decide, &call,
			     read_number ? (void *)(claim_page.stack + sizeof claim_page.stack)
					 : (void *)(forced_stack + sizeof forced_stack));
	}
	errno = saved_errno;
	if (cancel_set)
		(void)pthread_setcancelstate(cancel_state, &cancel_state);
	signals_restore(blocked, &saved_mask);
	STEP("decision: done");
	return claimed;
}

bool gate_decide_if_due(clockid_t clock, bool force)
{
	if (gate_decided())
		return true;
	if (!settings_loaded())
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
	STEP("decision: due (the program's own time before it)");
	/* A write, not a load, is the first touch of the claim's page (it changes nothing):
	 * a page first read and then written faults twice. */
	uint64_t held = atomic_fetch_add_explicit(&claim_page.claim, 0, memory_order_acquire);
	if (held != 0 || !claim_and_decide(read_number, &held))
		return claimed_elsewhere(held);
	return true;
}

/* ---- at exit: the verbose line of a process that never decided ---- */

static __attribute__((noinline)) void say_never_decided(void)
{
	char text[160];
	struct text t = text_start(text, sizeof text);
	text_add(&t, "never decided: ");
	/* This thread's reads not yet shared count too; other threads' (fewer than a batch
	 * each) do not: "at least". */
	text_add_u64(&t, atomic_load_explicit(&reads_before_decision, memory_order_relaxed) + reads_not_yet_shared);
	text_add(&t, " reads of a served clock, the decision due at read ");
	text_add_u64(&t, setting_before_decision(OPT_DECIDE_AFTER));
	text_add(&t, " (TSCSHIM_DECIDE_AFTER); every call went to the kernel's clock: ");
	say(text, settings_never_decided_why(atomic_load_explicit(&claim_page.claim, memory_order_relaxed) != 0),
	    NULL);
}

/* Every process runs it at exit; only one whose TSCSHIM_VERBOSE was set at load does
 * anything (one flag on the load page): the line a process that never decided owes. */
LOAD_PATH __attribute__((destructor)) static void gate_at_exit(void)
{
	if (settings_say_at_exit() && !gate_decided()) {
		say_at_exit();
		say_never_decided();
	}
}
