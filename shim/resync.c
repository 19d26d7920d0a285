/* Re-synchronization and its kin, the writers of lines: a re-synchronization of a line
 * near its expiry or past its hard end (resync, write_turn), the first line of a process
 * or of a fork child (recover, continue_parent), a stopped line's try to serve again
 * (resume_line), the writer's turn (shim/resync.h) and the back-off after a failed write
 * (retry_after_failure), and the stop after a disruption the hypervisor reported
 * (stop_for_disruption). Each takes an anchor (shim/anchor.c), plans from it
 * (calib/segment.c), publishes (shim/publish.c) and counts what the publication changed
 * (clock_tally). May not touch the slots or the state word except through publish(), and
 * reads no clock for a caller: the reads past a line's end are shim/slow_path.c's. */
#define _GNU_SOURCE
#include "resync.h"
#include "absdiff.h"

#include "anchor.h"
#include "disruption.h"
#include "say.h"
#include "test_points.h"

#include "system.h"

#include <stdatomic.h>
#include <string.h>

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
		uint64_t magnitude = magnitude_i64(p->error_ns);
		atomic_max(&clock_tally.largest_error_ns, magnitude);
	}
	if (p->outcome == PLAN_REANCHOR)
		atomic_fetch_add_explicit(&clock_tally.reanchors, 1, memory_order_relaxed);
	if (p->next.stopped_now)
		atomic_fetch_add_explicit(&clock_tally.stops, 1, memory_order_relaxed);
	if (p->outcome != PLAN_STOP && p->outcome != PLAN_STILL)
		atomic_fetch_add_explicit(&clock_tally.resyncs, 1, memory_order_relaxed);
	if ((p->rate_changed || p->rate_pending) && p->outcome != PLAN_REANCHOR)
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

/* Anchor a counted into a try of the stopped clocks that are due, if any (tries_due,
 * anchor_count_quiet_try): more anchors, quiet_anchors in all at most, while one of them
 * reads quiet; a is then the last, each such clock at the largest spread any showed. A
 * noisy clock's try mostly ends at its first anchor. */
static void prove_quiet(struct anchor *a, const struct line *old, uint64_t now)
{
	uint32_t due = tries_due(old, now);
	if (!due)
		return;
	bool more = anchor_count_quiet_try(a, NULL, due, &plan_cfg);
	for (int taken = 1; more && taken < plan_cfg.quiet_anchors; taken++) {
		uint64_t earlier[TRACKS];
		memcpy(earlier, a->spread_ns, sizeof earlier);
		take_anchor(a, plan_cfg.readings_most, plan_cfg.full_readings, old);
		more = anchor_count_quiet_try(a, earlier, due, &plan_cfg);
	}
}

/* A try to serve again with the line `old` (state w) that stopped whole for a cause that
 * passes: a fresh line if its kernel clock holds the bound once more (segment_resume),
 * else the stopped line with its next try put off. */
__attribute__((noinline)) enum write_result resume_line(uint64_t w, const struct line *old, uint64_t now)
{
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	struct anchor a;
	take_anchor(&a, plan_cfg.readings_most, plan_cfg.full_readings, old);
	prove_quiet(&a, old, now);
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

__attribute__((noinline)) enum write_result stop_for_disruption(uint64_t w, const struct line *old, uint64_t now)
{
	/* The marker before the anchor: a second disruption after it shows as a marker
	 * changed again, and stops the line again. */
	uint64_t marker;
	if (!disruption_marker_now(&marker))
		return WRITE_NO_ANCHOR; /* the hypervisor kept writing: the next read tries again */
	/* Held flat from the disruption's moment, where the reads meanwhile hold too. */
	uint64_t at = disruption_moment(marker, now);
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	struct anchor a;
	take_anchor(&a, plan_cfg.readings_most, plan_cfg.full_readings, old);
	TEST_POINT(TEST_POINT_ANCHORED);
	struct plan_inputs in = {.old = old, .anchor = &a, .now = at, .cfg = &plan_cfg};
	struct plan plan;
	segment_stop_disrupted(&in, &plan);
	enum write_result r = publish(expected, &plan.next, 0, 0, false);
	if (r == WRITE_PUBLISHED) {
		disruption_note_seen(marker);
		atomic_fetch_add_explicit(&clock_tally.disruptions, 1, memory_order_relaxed);
		count_plan(&plan);
	}
	return r;
}

/* One re-synchronization from the line `old` that state `w` names. */
static enum write_result resync(uint64_t w, const struct line *old, uint64_t now)
{
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	struct anchor a;
	/* resync_readings good readings of each clock (more if none was narrow): their median
	 * holds against one out of order. A lapsed line is re-anchored on the kernel's values
	 * outright, so it takes full_readings, as does a fault before it is acted on (below). */
	bool lapsed = now >= old->cur.until;
	take_anchor(&a, plan_cfg.readings_most, lapsed ? plan_cfg.full_readings : plan_cfg.resync_readings, old);
	/* A lapsed line cannot place a clock it has no reading of (it stops): taken again,
	 * anchor_retakes times at most, where a clock it serves has none. */
	for (int attempt = 0; lapsed && attempt < plan_cfg.anchor_retakes && !anchor_reads_served(&a, old); attempt++)
		take_anchor(&a, plan_cfg.readings_most, plan_cfg.full_readings, old);
	prove_quiet(&a, old, now);
	TEST_POINT(TEST_POINT_ANCHORED);
	struct plan_inputs in = {.old = old, .anchor = &a, .now = now, .cfg = &plan_cfg};
	struct plan plan;
	segment_plan(&in, &plan);
	if (!lapsed && (plan.next.stopped_now || plan.stepped || plan.outcome == PLAN_REANCHOR ||
			plan.largest_error_ns > plan_cfg.bound_ns / 2)) {
		/* A fault, or a correction of over half the bound, is acted on only when a
		 * second, larger set of readings shows it too: two readings of three out of
		 * order would otherwise step a clock, stop it, or pull it off by their age. */
		take_anchor(&a, plan_cfg.readings_most, plan_cfg.full_readings, old);
		prove_quiet(&a, old, now);
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
enum write_result recover(bool signals_blocked, enum track_stop *why, uint32_t *serving)
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
	/* A first line wants a narrow bracket and a view of the noise: full_readings a clock
	 * (a child's, on its parent's rates). A clock missing from it would never serve, so
	 * it is taken again, anchor_retakes times at most, where one has no good reading: a
	 * preemption at the wrong moment goes, a clock that fails stays. */
	for (int attempt = 0;; attempt++) {
		take_anchor(&a, plan_cfg.readings_most, plan_cfg.full_readings, have_parent ? &parent : NULL);
		if (anchor_complete(&a) || attempt >= plan_cfg.anchor_retakes)
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
	 * by more than hold_across_fork_ns (a second; a time namespace moved it back, or it
	 * was stepped back), holding would stand still for the whole way: that clock passes
	 * through in the child. (A kernel clock frozen for less is held, as in the parent; one that runs on
	 * below the hold passes through at its first reads anyway: stopped_read.) */
	for (int k = 0; have_parent && k < TRACKS; k++)
		if (!track_serves(next, k) && (a.valid & (1u << k)) &&
		    a.ns[k] + plan_cfg.hold_across_fork_ns < track_hold(next, k, a.at[k]))
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

/* When a write that found no good reading (from `began` to `now`) is tried again: after
 * twice what it cost, doubling with each failure in a row, at most the longest back-off
 * of a stopped clock. Sized from the attempt itself, so that where each kernel read is
 * dear (a system call trapping to a hypervisor, 1-5 us) a failing clock costs its readers
 * about one kernel call per read on average, as it would without the shim: the reads in
 * between pass through, one call each. */
uint64_t retry_after_failure(uint64_t began, uint64_t now)
{
	uint32_t failures = atomic_fetch_add_explicit(&failures_in_a_row, 1, memory_order_relaxed);
	uint64_t after = 2 * (now > began ? now - began : 1);
	for (uint32_t i = 0; i < failures && after < plan_cfg.retry_most_ticks; i++)
		after *= 2;
	return now + (after < plan_cfg.retry_most_ticks ? after : plan_cfg.retry_most_ticks);
}

/* A re-synchronization in the turn `mine` holds, and the turn's end: at once, or where it
 * found no good reading, after a back-off sized from what it cost. */
__attribute__((noinline)) enum write_result write_turn(uint64_t w, const struct line *l, uint64_t t, uint64_t mine)
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
