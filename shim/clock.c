/* The served clocks' writer side: anchoring on the kernel's clocks, publishing lines,
 * the kernel reads past a line's hard end, and the fork child's re-anchoring. The hot path
 * and the reader helpers are in shim/line.h; the maths of each plan in calib/segment.c.
 *
 * Why no reader ever waits on, or is held back by, another thread:
 *  - A reader never takes a lock. Up to the line's hard end it computes from the line;
 *    past it, it may re-synchronize itself (if no other writer has the turn), and
 *    otherwise it reads the kernel's clock and hands out that value, held at or above
 *    everything the line and earlier kernel reads handed out (kernel_read()).
 *  - The writer's turn (writer_token) is a deadline, not a lock: a writer that is
 *    preempted, cancelled or jumped out of holds it for one life at most.
 *
 * Why no writer can block the others or corrupt what they publish:
 *  - A writer computes its whole line in private, then claims a free slot by
 *    compare-and-swap, fills it, and publishes it by a 16-byte compare-and-swap of
 *    {state, floor} that fails if anything was published or a kernel read raised the floor
 *    in the meantime. A writer that lost is dropped; two writers never fill one slot.
 *  - From the claim to the release of the superseded slot (well under a microsecond)
 *    every signal is blocked, so no handler can run there, jump out, or cancel the
 *    thread, and no slot is ever leaked. A writer preempted there holds at most two of
 *    the fifteen slots; the others keep publishing.
 *  - A slot is freed only by the writer whose publication superseded it, and never
 *    while the state names it.
 *
 * Why time never goes back, in fenced mode across threads too:
 *  - Every line is non-decreasing in the counter and pointwise at or above the line
 *    before it (calib/segment.h).
 *  - A kernel read's value is committed to the floor half of the pair before it is handed
 *    out. A writer that read an older floor fails its compare-and-swap, reads the new
 *    floor and holds its line above it (line_apply_floor), or re-plans.
 *
 * Fork: the state, the claims and the writer token sit on a page the kernel wipes in a
 * fork child (MADV_WIPEONFORK; pthread_atfork where the kernel lacks it). A child's
 * first read finds no line and re-anchors (recover()): continuing its parent's line when
 * the kernel's clocks agree with it, from scratch when a time namespace moved them. */
#define _GNU_SOURCE
#include "clock.h"

#include "export.h"
#include "line.h"
#include "load_page.h"
#include "real.h"
#include "say.h"
#include "signals.h"
#include "test_points.h"

#include "libc_kind.h"
#include "raw_syscall.h"
#include "refclock.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The writer's small state is on the load page (load_page.h): the first read publishes
 * the first line without a fresh page for it. */
static struct plan_config plan_cfg ON_LOAD_PAGE;
static struct cpu_mask covered ON_LOAD_PAGE; /* the CPUs the verdict compared */
static bool covers_every_cpu ON_LOAD_PAGE; /* covered holds every possible CPU: never left */
static bool started ON_LOAD_PAGE; /* a first line was published and not closed (a fork child inherits it) */
static uint64_t kernel_read_step_ns ON_LOAD_PAGE; /* a kernel read raises the floor by at least this much */
static uint32_t served_at_start ON_LOAD_PAGE; /* bit per track the first line opened */
/* Per stopped track, the most its kernel clock read while its reads were held (0: none):
 * a kernel below that by more than the bound went back itself, and passes through. */
static _Atomic uint64_t held_kernel_most[TRACKS];
/* Bit per served clock that passes through, stopped, its kernel past all it handed out:
 * until pass_until[clock] (the counter value its next try to serve again is due), its
 * reads pass at the slow path's first test, with no copy of the line. */
static _Atomic uint32_t passing;
static _Atomic uint64_t pass_until[TRACKS];
/* Writes in a row that found no good reading (a first line, a re-synchronization): each
 * back-off doubles (retry_after_failure). */
static _Atomic uint32_t failures_in_a_row;

/* In memory a fork child keeps: what its parent last published, for continuity. Each
 * only grows. The slot shadow_state names is not free: its superseding writer frees it
 * only after announcing the newer state here. */
static _Atomic uint64_t shadow_state ON_LOAD_PAGE, shadow_floor ON_LOAD_PAGE;

/* What happened, counted (clock.h). */
struct clock_tally clock_tally ON_LOAD_PAGE;

#ifdef TSCSHIM_TEST_HOOKS
SHIM_EXPORT void (*tscshim_test_hook)(int point);
#define TEST_POINT(p)                                                                  \
	do {                                                                           \
		void (*hook_)(int) = tscshim_test_hook;                                \
		if (hook_)                                                             \
			hook_(p);                                                      \
	} while (0)
#else
#define TEST_POINT(p) ((void)0)
#endif

static unsigned slot_of(uint64_t state)
{
	return (unsigned)(state & (LINE_SLOTS - 1));
}

static void atomic_max(_Atomic uint64_t *word, uint64_t value)
{
	uint64_t seen = atomic_load_explicit(word, memory_order_relaxed);
	while (seen < value &&
	       !atomic_compare_exchange_weak_explicit(word, &seen, value, memory_order_release,
						      memory_order_relaxed))
		;
}

/* ---- fork ---- */

static void wiped_reset_in_child(void)
{
	/* The state, the claims and the token; not the decision's scratch, which every
	 * decision writes before it reads, and whose second page the child would otherwise
	 * fault in for nothing. */
	memset(&wiped, 0, offsetof(struct fork_wiped, decision_scratch));
}

/* The page is .bss past the file's end: private and anonymous, so the kernel can wipe it
 * in a fork child. pthread_atfork, the alternative, would allocate: the first malloc of many
 * processes (0.1-0.2 ms), and it misses children made by a raw clone or _Fork. */
static void setup_fork_wiped(void)
{
	/* The system call itself (raw_syscall.h): libc's madvise is a page of libc few
	 * programs touch. */
	if (raw_syscall4(SYS_madvise, (long)&wiped, sizeof wiped, MADV_WIPEONFORK, 0) != 0)
		libc_atfork_child(wiped_reset_in_child);
}

/* ---- anchors ---- */

/* Nothing unmeasured is served: every reading of the kernel's clocks is checked (the
 * call's result, a time in the timespec, the counter reads around it in order and close
 * enough, its agreement with the other readings), and a line is planned only from the
 * tracks whose readings passed (calib/segment.h). */

/* One reading of kernel clock `id` between two ordered counter reads. */
static struct clock_reading read_clock(clockid_t id)
{
	struct timespec ts;
	struct clock_reading r = {.before = counter_read_ordered()};
	int rc = real_clock_gettime(id, &ts);
	r.after = counter_read_ordered();
	r.ok = rc == 0 && timespec_is_time(&ts);
	r.ns = r.ok ? timespec_to_ns(&ts) : 0;
	return r;
}

enum { READINGS_MOST = 8 };

/* How far below a stopped clock's hold a fork child's kernel clock may be, and the child
 * still hold it (recover). */
#define HOLD_ACROSS_FORK_NS 1000000000ull

/* Every served clock at one counter value, each from readings of its own bracketed by
 * the counter: at least `want` good ones, one of them narrow, in at most `tries` (a
 * clock that fails, reads out of order or slowly takes more). Each reading is brought to
 * the anchor's counter value on the rate of its clock's family as `line` last measured it
 * (the calibrated rate without a line). A clock with no good reading is left out of
 * a->valid. */
static void take_anchor(struct anchor *a, int tries, int want, const struct line *line)
{
	const double tick = plan_cfg.calibrated_ns_per_tick;
	uint64_t narrow_ticks = (uint64_t)((double)plan_cfg.narrow_ns / tick);
	/* A reading slower than twice the bound cannot place the clock within it. One
	 * brought back to the anchor from further than 1/16 of the bound at the largest rate
	 * error allowed (max_rate_deviation: 62 us at the default bound; a reading after a
	 * preemption) could look like noise. */
	const struct reading_limits limits = {
		.widest_ticks = (uint64_t)((double)(2 * plan_cfg.bound_ns) / tick),
		.farthest_ticks = (uint64_t)((double)plan_cfg.bound_ns / 16 / plan_cfg.max_rate_deviation / tick),
	};
	*a = (struct anchor){0};
	for (int k = 0; k < TRACKS; k++) {
		struct reading_limits own = limits;
		own.ns_per_tick = line ? line_rate(line, clock_table[k].family) : tick;
		struct clock_reading r[READINGS_MOST];
		int n = 0, good = 0, calls = 0;
		uint64_t first_good = 0;
		bool narrow = false;
		while (n < tries && n < READINGS_MOST && (good < want || !narrow)) {
			r[n] = read_clock(clock_table[k].id);
			calls++;
			if (good && calls <= 2 * tries && reading_is_good(&r[n], 0, &own) &&
			    !reading_is_good(&r[n], first_good, &own)) {
				/* The thread was away between two readings (preempted, or a call
				 * that spun): the readings before the gap are dropped, not the ones
				 * after it, so that a preemption never leaves one reading to stand
				 * alone, unable to out-vote being out of order. */
				r[0] = r[n];
				n = 0;
				good = 0;
				first_good = 0;
				narrow = false;
			}
			if (reading_is_good(&r[n], first_good, &own)) {
				if (!good++)
					first_good = r[n].before + (r[n].after - r[n].before) / 2;
				narrow |= r[n].after - r[n].before <= narrow_ticks;
			}
			n++;
		}
		if (!anchor_track_from(a, k, r, n, &own))
			atomic_fetch_add_explicit(&clock_tally.unreadable_anchors, 1, memory_order_relaxed);
	}
	/* The anchor's moment: MONOTONIC's reading (without one, nothing is planned). */
	a->counter = a->at[SERVED_MONOTONIC];
}

/* Whether the anchor has a good reading of every clock line l serves. */
static bool anchor_reads_served(const struct anchor *a, const struct line *l)
{
	for (int k = 0; k < TRACKS; k++)
		if (track_serves(l, k) && !(a->valid & (1u << k)))
			return false;
	return true;
}

/* Whether every clock has a good reading in the anchor. (Not whether its readings are
 * quiet: taking a noisy clock's anchor again until one happens to be quiet would start
 * its line on the luckiest.) */
static bool anchor_complete(const struct anchor *a)
{
	return a->valid == (1u << TRACKS) - 1;
}

/* ---- lines in slots ---- */

static void load_line(struct line *to, const struct line *from)
{
	const uint64_t *s = (const uint64_t *)from;
	uint64_t *d = (uint64_t *)to;
	for (size_t i = 0; i < sizeof *to / sizeof *d; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static void store_words(void *to, const void *from, size_t size)
{
	const uint64_t *s = from;
	uint64_t *d = to;
	for (size_t i = 0; i < size / sizeof *d; i++)
		__atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

/* Seals `next` and fills slot s with it and its read forms. */
static void store_slot(int s, struct line *next)
{
	struct line_forms forms;
	line_seal(next, &forms);
	store_words(&line_slots[s].line, next, sizeof *next);
	store_words(&line_slots[s].forms, &forms, sizeof forms);
}

/* A consistent copy of the current line; false if it was replaced while copied. */
static bool snapshot(uint64_t *state, struct line *out)
{
	const struct line *l;
	*state = line_read_begin(&l);
	load_line(out, l);
	return !line_read_retry(*state);
}

static int claim_slot(unsigned avoid_a, unsigned avoid_b)
{
	for (unsigned s = 1; s < LINE_SLOTS; s++) {
		uint32_t free_slot = 0;
		if (s != avoid_a && s != avoid_b &&
		    atomic_load_explicit(&wiped.claim[s], memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&wiped.claim[s], &free_slot, 1,
							    memory_order_acquire, memory_order_relaxed))
			return (int)s;
	}
	return -1;
}


enum write_result {
	WRITE_PUBLISHED,
	WRITE_LOST,      /* another publication (or a raised floor beyond the plan) came first */
	WRITE_NO_SLOT,
	WRITE_NO_ANCHOR, /* no good reading of MONOTONIC: nothing measured, nothing published */
};

/* Publishes `next`, planned from the line that state `expected[0]` names with floor
 * `expected[1]`. A floor raised meanwhile is applied and the publication tried again; a
 * floor beyond the plan, or any other publication, drops it (WRITE_LOST). */
static enum write_result publish(uint64_t expected[2], struct line *next, uint32_t floor_exempt,
				 unsigned avoid, bool signals_blocked)
{
	if (!line_apply_floor(next, expected[1], floor_exempt))
		return WRITE_LOST;
	uint64_t saved_mask;
	/* Every signal blocked (signals.h): nothing runs on this thread between a claim and
	 * its release. */
	bool blocked = !signals_blocked && signals_block_all(&saved_mask);
	int s = claim_slot(slot_of(expected[0]), avoid);
	if (s < 0) {
		signals_restore(blocked, &saved_mask);
		return WRITE_NO_SLOT;
	}
	TEST_POINT(TEST_POINT_CLAIMED);
	/* Ordered after the claim: a reader that sees any of these stores also sees the
	 * publication that superseded this slot, and discards its copy. */
	atomic_thread_fence(memory_order_release);
	enum write_result result = WRITE_LOST;
	for (int attempt = 0; attempt < 16; attempt++) {
		store_slot(s, next);
		uint64_t state = ((expected[0] & ~(uint64_t)(LINE_SLOTS - 1)) + STATE_VERSION_STEP) | (unsigned)s;
		uint64_t floor = expected[1];
		uint64_t before = expected[0];
		if (counter_cas_pair(&wiped.state, expected, state, floor)) {
			TEST_POINT(TEST_POINT_PUBLISHED);
			atomic_max(&shadow_state, state);
			if (slot_of(before))
				atomic_store_explicit(&wiped.claim[slot_of(before)], 0, memory_order_release);
			result = WRITE_PUBLISHED;
			break;
		}
		/* expected now holds the current pair. Only a raised floor can be absorbed. */
		if (expected[0] != before || !line_apply_floor(next, expected[1], floor_exempt))
			break;
	}
	if (result != WRITE_PUBLISHED)
		atomic_store_explicit(&wiped.claim[s], 0, memory_order_release);
	signals_restore(blocked, &saved_mask);
	return result;
}

/* Says, once, which clocks a publication stopped and why: in the counters that
 * tscshim_status reads, and in one verbose line. */
static void note_stops(const struct line *published)
{
	for (int k = 0; k < TRACKS; k++) {
		uint64_t bit = 1u << k;
		enum track_stop cause = (enum track_stop)published->health[k].stopped;
		if (cause == TRACK_SERVING ||
		    (atomic_load_explicit(&clock_tally.stopped_clocks, memory_order_relaxed) & bit))
			continue;
		/* The cause before the bit (the bit's store releases it): a reader outside the
		 * process (tscshim ps) that finds the bit finds its cause. A track's cause never
		 * changes once it stopped, so two writers that both get here store the same. */
		atomic_store_explicit(&clock_tally.stop_cause[k], cause, memory_order_relaxed);
		if (atomic_fetch_or(&clock_tally.stopped_clocks, bit) & bit)
			continue;
		/* Stopped with the line: MONOTONIC's kernel clock was the one at fault. */
		bool with_line = !published->active && k != SERVED_MONOTONIC &&
				 published->health[SERVED_MONOTONIC].stopped == cause;
		if (say_level >= 1 && (served_at_start & bit))
			say_brief("stopped serving ", clock_table[k].name,
				  with_line ? " with monotonic, every clock's reference: " : ": ", track_stop_text(cause),
				  "; it passes through from here on", NULL);
	}
}

/* Says which clocks a publication serves again (p->resumed, or every serving track of a
 * line that resumed whole): counted, their stopped bits and pass bits cleared, and one
 * verbose line each. */
static void note_resumes(const struct line *published, uint32_t resumed)
{
	for (int k = 0; k < TRACKS; k++) {
		uint32_t bit = 1u << k;
		if (!(resumed & bit) || !track_serves(published, k))
			continue;
		atomic_fetch_and(&passing, ~bit);
		atomic_store_explicit(&held_kernel_most[k], 0, memory_order_relaxed);
		if (!(atomic_fetch_and(&clock_tally.stopped_clocks, ~(uint64_t)bit) & bit))
			continue;
		atomic_store_explicit(&clock_tally.stop_cause[k], TRACK_SERVING, memory_order_relaxed);
		atomic_fetch_add_explicit(&clock_tally.resumes, 1, memory_order_relaxed);
		if (say_level >= 1 && (served_at_start & bit))
			say_brief("serving ", clock_table[k].name,
				  " again: its kernel clock holds the bound once more", NULL);
	}
}

static void count_plan(const struct plan *p)
{
	if (p->error_measured) {
		uint64_t magnitude = p->error_ns < 0 ? (uint64_t)-p->error_ns : (uint64_t)p->error_ns;
		atomic_max(&clock_tally.largest_error_ns, magnitude);
	}
	if (p->outcome == PLAN_REANCHOR)
		atomic_fetch_add_explicit(&clock_tally.reanchors, 1, memory_order_relaxed);
	if (p->next.stopped_now)
		atomic_fetch_add_explicit(&clock_tally.stops, 1, memory_order_relaxed);
	if (p->outcome != PLAN_STOP && p->outcome != PLAN_STILL)
		atomic_fetch_add_explicit(&clock_tally.resyncs, 1, memory_order_relaxed);
	if (p->rate_changed && p->outcome != PLAN_REANCHOR)
		atomic_fetch_add_explicit(&clock_tally.reanchors, 1, memory_order_relaxed);
	note_resumes(&p->next, p->resumed);
	note_stops(&p->next);
}

/* The verdict compared the counters of the CPUs allowed at the decision; a process whose
 * affinity has widened since may run where nothing was compared. One system call per
 * re-synchronization (~0.3 us, first-time dearer on a guest), never on the hot path, and
 * none where the verdict covered every CPU the boot can bring online. */
static bool affinity_uncovered(void)
{
	struct cpu_mask now_allowed;
	return !covers_every_cpu && !(cpu_mask_allowed(&now_allowed) > 0 && cpu_mask_is_subset(&now_allowed, &covered));
}

/* A try to serve again with the line `old` (state w) that stopped whole for a cause that
 * passes: a fresh line if its kernel clock holds the bound once more (segment_resume),
 * else the stopped line with its next try put off. */
static __attribute__((noinline)) enum write_result resume_line(uint64_t w, const struct line *old, uint64_t now)
{
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	struct anchor a;
	take_anchor(&a, READINGS_MOST, 7, old);
	struct plan_inputs in = {.old = old, .anchor = &a, .now = now, .cfg = &plan_cfg};
	struct plan plan;
	segment_resume(&in, &plan);
	if (plan.outcome == PLAN_RESUME && affinity_uncovered()) {
		/* Not where the verdict compared nothing: stopped for that, for good. */
		plan.next = *old;
		plan.next.stopped_now = 0;
		plan.next.health[SERVED_MONOTONIC].stopped = TRACK_UNCOVERED;
		plan.outcome = PLAN_STILL;
		plan.resumed = 0;
		atomic_store(&clock_tally.stopped_uncovered, true);
	}
	enum write_result r = publish(expected, &plan.next, 0, 0, false);
	if (r == WRITE_PUBLISHED)
		count_plan(&plan);
	return r;
}

/* One re-synchronization from the line `old` that state `w` names. */
static enum write_result resync(uint64_t w, const struct line *old, uint64_t now)
{
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	struct anchor a;
	/* Three good readings of each clock (more if none was narrow): their median holds
	 * against one out of order. A lapsed line is re-anchored on the kernel's values
	 * outright, so it takes seven, as does a fault before it is acted on (below). */
	bool lapsed = now >= old->cur.until;
	take_anchor(&a, READINGS_MOST, lapsed ? 7 : 3, old);
	/* A lapsed line cannot place a clock it has no reading of (it stops): taken again,
	 * twice at most, where a clock it serves has none. */
	for (int attempt = 0; lapsed && attempt < 2 && !anchor_reads_served(&a, old); attempt++)
		take_anchor(&a, READINGS_MOST, 7, old);
	TEST_POINT(TEST_POINT_ANCHORED);
	struct plan_inputs in = {.old = old, .anchor = &a, .now = now, .cfg = &plan_cfg};
	struct plan plan;
	segment_plan(&in, &plan);
	if (!lapsed && (plan.next.stopped_now || plan.stepped || plan.outcome == PLAN_REANCHOR ||
			plan.largest_error_ns > plan_cfg.bound_ns / 2)) {
		/* A fault, or a correction of over half the bound, is acted on only when a
		 * second, larger set of readings shows it too: two readings of three out of
		 * order would otherwise step a clock, stop it, or pull it off by their age. */
		take_anchor(&a, READINGS_MOST, 7, old);
		segment_plan(&in, &plan);
	}
	if (plan.outcome == PLAN_NO_ANCHOR)
		return WRITE_NO_ANCHOR; /* the line serves on to its hard end; retried soon */
	bool uncovered = plan.outcome != PLAN_STOP && affinity_uncovered();
	if (uncovered) {
		plan.next = *old;
		plan.next.stopped_now = 0;
		line_stop(&plan.next, TRACK_UNCOVERED);
		plan.outcome = PLAN_STOP;
	}
	enum write_result r = publish(expected, &plan.next, plan_floor_exempt(&plan), 0, false);
	if (r == WRITE_PUBLISHED && uncovered)
		atomic_store(&clock_tally.stopped_uncovered, true);
	if (r == WRITE_PUBLISHED)
		count_plan(&plan);
	else
		atomic_fetch_add_explicit(&clock_tally.lost_writes, 1, memory_order_relaxed);
	return r;
}

/* A fork child's line from its parent's, whose kernel's clocks agree with the anchor:
 * the parent's as it is while it still serves now, as it would in the parent (the child
 * re-synchronizes at its expiry like any thread), else planned on from it. Not planned
 * on while it serves: a re-synchronized line's current segment starts at its
 * predecessor's hard end, up to a life after it was published, and serves the counter
 * before that from its previous segment; a plan keeps only the current one
 * (segment_plan), so reads before its start were held at its start value: up to a life
 * ahead of the kernel. Out of line, so that its plan is on the stack only while it is
 * made. Returns the tracks the floor must not hold up. */
static __attribute__((noinline)) uint32_t continue_parent(const struct line *parent, const struct anchor *a,
							  struct plan *planned)
{
	if (a->counter < parent->expiry) {
		planned->next = *parent;
		return 0;
	}
	struct plan_inputs in = {.old = parent, .anchor = a, .now = a->counter, .cfg = &plan_cfg};
	segment_plan(&in, planned);
	return plan_floor_exempt(planned);
}

/* The first line of a process, or of a fork child (state 0). A child continues its
 * parent's line, so it never reads earlier than its parent did, unless the kernel's
 * clocks no longer agree with it: a time namespace moved them (or the parent's line had
 * lapsed), and the child anchors afresh, its parent's stopped clocks still stopped.
 * Without a good reading of MONOTONIC (or with readings too noisy for the bound, where
 * it anchors afresh) nothing is published: *why says which. */
static enum write_result recover(bool signals_blocked, enum track_stop *why, uint32_t *serving)
{
	uint64_t parent_state = atomic_load_explicit(&shadow_state, memory_order_acquire);
	unsigned parent_slot = slot_of(parent_state);
	struct line parent;
	bool have_parent = false;
	if (parent_slot) {
		/* While the state is 0 only recovering writers run, and they never claim the
		 * parent's slot: a copy taken while it is still 0 is whole. */
		load_line(&parent, &line_slots[parent_slot].line);
		atomic_thread_fence(memory_order_acquire);
		if (__atomic_load_n(&wiped.state, __ATOMIC_RELAXED) != 0)
			return WRITE_LOST;
		have_parent = true;
	}
	struct anchor a;
	/* A first line wants a narrow bracket and a view of the noise: seven readings a clock
	 * (a child's, on its parent's rates). A clock missing from it would never serve, so
	 * it is taken again, twice at most, where one has no good reading: a preemption at
	 * the wrong moment goes, a clock that fails stays. */
	for (int attempt = 0; attempt < 3; attempt++) {
		take_anchor(&a, READINGS_MOST, 7, have_parent ? &parent : NULL);
		if (anchor_complete(&a))
			break;
	}
	TEST_POINT(TEST_POINT_ANCHORED);
	*why = TRACK_UNREADABLE;
	if (!(a.valid & (1u << SERVED_MONOTONIC)))
		return WRITE_NO_ANCHOR;
	uint64_t expected[2] = {0, 0};
	/* The child's line, planned in place: a plan's own copy of a line would be one line
	 * more on a decision's small stack. */
	struct plan planned;
	struct line *next = &planned.next;
	uint32_t exempt = 0;
	if (have_parent && !parent.active) {
		*next = parent; /* the parent stopped serving: so does the child */
	} else if (have_parent && line_agrees(&parent, &a, plan_cfg.watchdog_ns)) {
		expected[1] = atomic_load_explicit(&shadow_floor, memory_order_acquire);
		exempt = continue_parent(&parent, &a, &planned);
	} else {
		if (!segment_first(next, &a, &plan_cfg)) {
			*why = (enum track_stop)next->health[SERVED_MONOTONIC].stopped;
			return WRITE_NO_ANCHOR;
		}
		/* In a moved time namespace nothing was handed out yet: no hold. */
		for (int k = 0; have_parent && k < TRACKS; k++)
			if (parent.health[k].stopped != TRACK_SERVING)
				next->health[k] = (struct track_health){.stopped = parent.health[k].stopped};
	}
	/* A stopped clock's hold is its parent's: where the child's kernel clock is below it
	 * by more than a second (a time namespace moved it back, or it was stepped back),
	 * holding would stand still for the whole way: that clock passes through in the
	 * child. (A kernel clock frozen for less is held, as in the parent; one that runs on
	 * below the hold passes through at its first reads anyway: stopped_read.) */
	for (int k = 0; have_parent && k < TRACKS; k++)
		if (!track_serves(next, k) && (a.valid & (1u << k)) &&
		    a.ns[k] + HOLD_ACROSS_FORK_NS < track_hold(next, k, a.at[k]))
			__atomic_store_n(&clock_config.served_index[clock_table[k].id], 0, __ATOMIC_RELEASE);
	/* The floor half of the pair is 0 here (wiped); a continued line carries its
	 * parent's floor in its bases instead. */
	if (!line_apply_floor(next, expected[1], exempt))
		return WRITE_LOST;
	expected[1] = 0;
	enum write_result r = publish(expected, next, exempt, parent_slot, signals_blocked);
	if (r == WRITE_PUBLISHED)
		note_stops(next);
	*serving = 0;
	for (int k = 0; k < TRACKS; k++)
		if (track_serves(next, k))
			*serving |= 1u << k;
	return r;
}

/* ---- the turn to write ---- */

static bool take_turn(uint64_t now, uint64_t *mine)
{
	uint64_t held = atomic_load_explicit(&wiped.writer_token, memory_order_relaxed);
	if (held > now)
		return false;
	*mine = now + plan_cfg.life_ticks;
	return atomic_compare_exchange_strong_explicit(&wiped.writer_token, &held, *mine,
						       memory_order_acquire, memory_order_relaxed);
}

/* Ends a turn: the next reader past expiry may write at once, or, after a
 * re-synchronization that found no good reading, from `retry_at` on (a short back-off,
 * so that a failing clock is not read by every reader in a crowd). */
static void end_turn(uint64_t mine, uint64_t retry_at)
{
	atomic_compare_exchange_strong_explicit(&wiped.writer_token, &mine, retry_at,
						memory_order_release, memory_order_relaxed);
}

/* When a write that found no good reading (from `began` to `now`) is tried again: after
 * twice what it cost, doubling with each failure in a row, at most the longest back-off
 * of a stopped clock. Sized from the attempt itself, so that where each kernel read is
 * dear (a system call trapping to a hypervisor, 1-5 us) a failing clock costs its readers
 * about one kernel call per read on average, as it would without the shim: the reads in
 * between pass through, one call each. */
static uint64_t retry_after_failure(uint64_t began, uint64_t now)
{
	uint32_t failures = atomic_fetch_add_explicit(&failures_in_a_row, 1, memory_order_relaxed);
	uint64_t after = 2 * (now > began ? now - began : 1);
	for (uint32_t i = 0; i < failures && after < plan_cfg.retry_most_ticks; i++)
		after *= 2;
	return now + (after < plan_cfg.retry_most_ticks ? after : plan_cfg.retry_most_ticks);
}

static void note_write_succeeded(void)
{
	if (atomic_load_explicit(&failures_in_a_row, memory_order_relaxed))
		atomic_store_explicit(&failures_in_a_row, 0, memory_order_relaxed);
}

/* ---- the slow path ---- */

enum kernel_read_result {
	KERNEL_READ_SERVED,
	KERNEL_READ_RETRY,  /* the state changed: read the new line */
	KERNEL_READ_PASS,   /* a wall clock: the caller's own call answers */
	KERNEL_READ_FAILED, /* the kernel's clock failed every reading: errno is its */
};

/* The kernel's MONOTONIC now, for a read past a line's hard end: the median of three
 * checked readings (the latest good one, where fewer are good), as an anchor takes them,
 * so that one reading out of order is not handed out. False when none was good, or the
 * first call failed (errno the kernel's). */
static bool kernel_monotonic_now(uint64_t *ns)
{
	uint64_t good[3];
	int n = 0;
	for (int i = 0; i < 3; i++) {
		struct timespec ts;
		int rc = real_clock_gettime(CLOCK_MONOTONIC, &ts);
		if (rc == 0 && timespec_is_time(&ts))
			good[n++] = timespec_to_ns(&ts);
		else if (rc != 0 && n == 0)
			return false; /* failing: one call is its price, not three */
	}
	if (n == 0)
		return false;
	if (n == 3) {
		uint64_t lo = good[0] < good[1] ? good[0] : good[1], hi = good[0] < good[1] ? good[1] : good[0];
		*ns = good[2] < lo ? lo : good[2] > hi ? hi : good[2];
	} else {
		*ns = good[n - 1]; /* the latest of fewer */
	}
	return true;
}

/* Past the hard end of line `l` (state w), with no turn to write: the kernel's clock,
 * never below the line's end or the floor (a wall clock: passed through). It moves the floor only by steps of at least
 * kernel_read_step_ns, so that a crowd of readers here does not keep a writer from
 * publishing; in between it stands still, for at most the line's lead on the kernel
 * plus one step. KERNEL_READ_RETRY: the state changed, read the new line;
 * KERNEL_READ_PASS: a wall clock (never held: past the hard end it is the kernel's own,
 * which may have stepped back); KERNEL_READ_FAILED: the kernel's clock gave no time. */
static enum kernel_read_result kernel_read(unsigned clock, uint64_t w, const struct line *l, struct timespec *ts)
{
	if (clock_table[clock].wall)
		return KERNEL_READ_PASS;
	uint64_t kernel;
	if (!kernel_monotonic_now(&kernel))
		return KERNEL_READ_FAILED;
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	uint64_t end = segment_value(&l->cur, SERVED_MONOTONIC, l->cur.until);
	uint64_t held = end > expected[1] ? end : expected[1];
	uint64_t value = held;
	if (kernel >= held + kernel_read_step_ns) {
		TEST_POINT(TEST_POINT_KERNEL_READ);
		/* Committed before it is handed out: a writer that read the older floor
		 * fails its compare-and-swap and takes this one into account. */
		if (!counter_cas_pair(&wiped.state, expected, w, kernel))
			return KERNEL_READ_RETRY;
		atomic_max(&shadow_floor, kernel);
		value = kernel;
	} else if (__atomic_load_n(&wiped.state, __ATOMIC_ACQUIRE) != w) {
		return KERNEL_READ_RETRY;
	}
	atomic_fetch_add_explicit(&clock_tally.kernel_reads, 1, memory_order_relaxed);
	ns_to_timespec(line_kernel_read_value(l, (int)clock, value), ts);
	return KERNEL_READ_SERVED;
}

/* A stopped clock whose kernel clock is past all it handed out passes through: for a
 * cause that passes, at the slow path's first test until its next try to serve again is
 * due (retry_at); for one that does not (another CPU set, a corrupt plan), and for a wall
 * clock of such a line, at the hot path's first test, for good. */
static void pass_through_stopped(unsigned clock, enum track_stop cause, uint64_t retry_at)
{
	if (!track_stop_passes(cause)) {
		__atomic_store_n(&clock_config.served_index[clock_table[clock].id], 0, __ATOMIC_RELEASE);
		return;
	}
	atomic_store_explicit(&pass_until[clock], retry_at, memory_order_relaxed);
	atomic_fetch_or_explicit(&passing, 1u << clock, memory_order_release);
}

/* A read of a clock whose track stopped (or whose whole line did): the kernel's own
 * value, never below what the track handed out up to now (track_hold: so a monotonic
 * clock does not step back where the kernel's own did not). Once the kernel is past the
 * most the track could ever have handed out (its line's flat end), the clock passes
 * through (pass_through_stopped): every kernel value from then on is above anything it
 * served, in every thread. So too where the kernel's clock went back itself (below its
 * own last reading at the anchor that stopped the clock, or below a value it gave a held
 * read): its own values went back, and holding would stand still for the whole step. A
 * kernel clock that stands still (frozen) or runs slower than the line (a change of rate
 * beyond what a re-synchronization follows) is held until it catches up. A wall clock is
 * never held. Returns 1 with *ts, or -1 when the kernel's call failed (errno its): the
 * caller returns that, not a second call's answer, which no hold would cover. */
static int stopped_read(unsigned clock, const struct line *l, uint64_t t, struct timespec *ts)
{
	struct timespec now;
	if (real_clock_gettime(clock_table[clock].id, &now) != 0)
		return -1; /* errno is the kernel's */
	if (!timespec_is_time(&now)) {
		/* A success that is no time: the hold, never what was on the stack. */
		ns_to_timespec(track_hold(l, (int)clock, t), ts);
		return 1;
	}
	/* A line stopped whole tries to serve again as one, on MONOTONIC's schedule. */
	const struct track_health *h = l->active ? &l->health[clock] : &l->health[SERVED_MONOTONIC];
	enum track_stop cause = (enum track_stop)h->stopped;
	uint64_t kernel = timespec_to_ns(&now);
	if (cause == TRACK_SERVING) {
		/* Serving again from a later counter value (track_serves_at): until then the
		 * kernel's value, never below the line's. */
		uint64_t hold = track_hold(l, (int)clock, t);
		if (clock_table[clock].wall || kernel >= hold)
			*ts = now;
		else
			ns_to_timespec(hold, ts);
		return 1;
	}
	if (clock_table[clock].wall || kernel >= track_hold(l, (int)clock, UINT64_MAX)) {
		pass_through_stopped(clock, cause, h->retry_at);
		*ts = now;
		return 1;
	}
	uint64_t hold = track_hold(l, (int)clock, t);
	if (kernel >= hold) {
		*ts = now;
		return 1;
	}
	if ((cause == TRACK_BEHIND && h->went_back) ||
	    kernel + plan_cfg.bound_ns < atomic_load_explicit(&held_kernel_most[clock], memory_order_relaxed)) {
		pass_through_stopped(clock, cause, h->retry_at);
		*ts = now;
		return 1;
	}
	atomic_max(&held_kernel_most[clock], kernel);
	atomic_fetch_add_explicit(&clock_tally.held_reads, 1, memory_order_relaxed);
	ns_to_timespec(hold, ts);
	return 1;
}

enum { WRITE_ATTEMPTS = 4 };

/* A re-synchronization in the turn `mine` holds, and the turn's end: at once, or where it
 * found no good reading, after a back-off sized from what it cost. */
static __attribute__((noinline)) enum write_result write_turn(uint64_t w, const struct line *l, uint64_t t, uint64_t mine)
{
	enum write_result r = resync(w, l, t);
	if (r == WRITE_NO_ANCHOR) {
		end_turn(mine, retry_after_failure(t, read_counter()));
		return r;
	}
	if (r == WRITE_PUBLISHED)
		note_write_succeeded();
	end_turn(mine, 0);
	return r;
}

int clock_read_slow(unsigned clock, struct timespec *ts)
{
	/* A stopped clock past its hold: through, until its next try is due. */
	if (__builtin_expect(atomic_load_explicit(&passing, memory_order_acquire) & (1u << clock), 0) &&
	    read_counter() < atomic_load_explicit(&pass_until[clock], memory_order_relaxed))
		return 0;
	for (int attempt = 0;; attempt++) {
		uint64_t w;
		struct line l;
		if (!snapshot(&w, &l))
			continue; /* replaced while copied: somebody made progress */
		/* The counter read after the line it is read against: a value read before a
		 * lapsed line's anchor would fall in the gap between the old line's hard end
		 * and the new one's start, where the line holds the old end (behind the kernel
		 * by the lapse). */
		uint64_t t = read_counter();
		if (w == 0) {
			/* No line: a fork child's first read (or one racing it). A recovery that
			 * found no good reading is not tried again for 1/8 of a life (the writer's
			 * token, unused before a first line): meanwhile reads pass through. */
			if (attempt >= WRITE_ATTEMPTS || atomic_load_explicit(&wiped.writer_token, memory_order_relaxed) > t)
				return 0;
			enum track_stop why;
			uint32_t serving;
			if (recover(false, &why, &serving) == WRITE_NO_ANCHOR) {
				uint64_t retry_at = retry_after_failure(t, read_counter());
				atomic_store_explicit(&wiped.writer_token, retry_at, memory_order_relaxed);
				return 0;
			}
			note_write_succeeded();
			continue;
		}
		uint64_t mine;
		if (!track_serves_at(&l, (int)clock, t)) {
			if (line_may_resume(&l) && t >= l.health[SERVED_MONOTONIC].retry_at && attempt == 0 &&
			    take_turn(t, &mine)) {
				enum write_result r = resume_line(w, &l, t);
				end_turn(mine, 0);
				if (r == WRITE_PUBLISHED)
					continue; /* the new line: serving again, or its next try put off */
			}
			return stopped_read(clock, &l, t, ts);
		}
		if (t < l.cur.until) {
			if (t >= l.expiry && attempt == 0 && take_turn(t, &mine))
				write_turn(w, &l, t, mine); /* the new line equals this one up to its hard end */
			ns_to_timespec(line_value(&l, (int)clock, t), ts);
			return 1;
		}
		if (attempt < WRITE_ATTEMPTS && take_turn(t, &mine)) {
			enum write_result r = write_turn(w, &l, t, mine);
			if (r == WRITE_PUBLISHED || r == WRITE_LOST)
				continue;
		}
		switch (kernel_read(clock, w, &l, ts)) {
		case KERNEL_READ_SERVED:
			return 1;
		case KERNEL_READ_PASS:
			return 0;
		case KERNEL_READ_FAILED:
			return -1;
		case KERNEL_READ_RETRY:
			break;
		}
	}
}

/* ---- start and counters ---- */

int clock_start(const struct line_setup *setup, const char **err)
{
	clock_set_read_plan(setup->read_plan);
	covered = setup->covered;
	covers_every_cpu = setup->covers_every_cpu;
	if (!setup->wiped_marked)
		setup_fork_wiped();
	/* Every tunable of the line from the bound, in one place (calib/segment.c). */
	const struct plan_bounds bounds = {
		.bound_ns = setup->max_error_ns,
		.resync_ms = setup->resync_ms,
		.ns_per_tick = (double)setup->ns_per_tick,
		.serves_realtime = setup->served & (1u << SERVED_REALTIME),
	};
	if (!plan_config_derive(&plan_cfg, &bounds)) {
		*err = "the re-synchronization interval rounds to zero ticks";
		return -1;
	}
	/* Kernel reads past a hard end raise the floor by steps of a sixteenth of the bound. */
	kernel_read_step_ns = setup->max_error_ns / 16;

	enum track_stop why;
	uint32_t serving;
	enum write_result r = recover(setup->signals_blocked, &why, &serving);
	if (r != WRITE_PUBLISHED) {
		*err = r != WRITE_NO_ANCHOR ? "could not publish the first line"
		       : why == TRACK_NOISY ? "the kernel's CLOCK_MONOTONIC is too noisy to hold the error bound"
					    : "the kernel's CLOCK_MONOTONIC gave no good reading (failed, out of order, "
					      "or slower than twice the error bound)";
		return -1;
	}
	started = true;
	/* Opened last, and only for the clocks whose first readings were good: until now
	 * every call went to the real function, and a clock that starts stopped never
	 * serves. */
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++) {
		if (!(setup->served & (1u << c)))
			continue;
		if (!(serving & (1u << c))) {
			if (say_level >= 1)
				say_brief("not serving ", clock_table[c].name, ": ",
					  track_stop_text((enum track_stop)atomic_load(&clock_tally.stop_cause[c])), NULL);
			continue;
		}
		served_at_start |= 1u << c;
		__atomic_store_n(&clock_config.served_index[clock_table[c].id], (uint8_t)(c + 1), __ATOMIC_RELEASE);
	}
	return 0;
}

void clock_set_read_plan(unsigned plan)
{
	/* Atomic: readers of a path opened before (a close, then a start) may load it. Any
	 * plan is correct for any line: only its cost differs. */
	__atomic_store_n(&clock_config.read_plan, (uint8_t)plan, __ATOMIC_RELAXED);
}

void clock_close(void)
{
	/* Every call goes to the real function again at the hot path's first test, which it
	 * makes anyway: passing through costs nothing more than before the clock started. */
	for (int id = 0; id < CLOCK_ID_LIMIT; id++)
		__atomic_store_n(&clock_config.served_index[id], 0, __ATOMIC_RELEASE);
	started = false;
}

void clock_counters(struct clock_counters *out)
{
	const struct line *l;
	uint64_t w = line_read_begin(&l);
	/* A fork child that has not read a clock yet has no line: it will take its parent's,
	 * which its own memory still holds (shadow_state names it), stopped or not. */
	if (w == 0)
		l = &line_slots[slot_of(atomic_load_explicit(&shadow_state, memory_order_acquire))].line;
	out->active = !started ? 0 : l == &line_slots[0].line ? 1 : (int)LOAD(l->active);
	out->mult = LOAD(l->cur.clk[SERVED_MONOTONIC].mult);
	out->shift = (uint32_t)LOAD(l->cur.clk[SERVED_MONOTONIC].shift);
	out->resyncs = atomic_load(&clock_tally.resyncs);
	out->reanchors = atomic_load(&clock_tally.reanchors);
	out->stops = atomic_load(&clock_tally.stops);
	out->kernel_reads = atomic_load(&clock_tally.kernel_reads);
	out->lost_writes = atomic_load(&clock_tally.lost_writes);
	out->largest_error_ns = atomic_load(&clock_tally.largest_error_ns);
	out->stopped_uncovered = atomic_load(&clock_tally.stopped_uncovered);
	out->served_at_start = served_at_start;
	out->stopped_clocks = (uint32_t)atomic_load(&clock_tally.stopped_clocks);
	for (int k = 0; k < TRACKS; k++)
		out->stop_cause[k] = (uint32_t)atomic_load(&clock_tally.stop_cause[k]);
	out->held_reads = atomic_load(&clock_tally.held_reads);
	out->unreadable_anchors = atomic_load(&clock_tally.unreadable_anchors);
	out->resumes = atomic_load(&clock_tally.resumes);
}
