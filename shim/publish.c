/* The published line and its slots, writer side: claiming a free slot, storing a line
 * and its read forms in it, publishing it by one compare-and-swap of {state, floor}, and
 * freeing the slot it superseded. Owns the slot claims and the publication's state
 * change. May not take anchors or plan lines (a writer brings its line planned, from
 * shim/resync.c) and never reads the kernel's clocks.
 *
 * The publication protocol. Its rules, and why each holds, are stated here once; the
 * line's layout is in shim/line.h, the reads past a line's hard end in shim/slow_path.c,
 * the writer's turn in shim/resync.c.
 *
 *  - Lines live in LINE_SLOTS slots. One 64-bit state word names the current slot and a
 *    version: (version << STATE_SLOT_BITS) | slot. Slot 0 never holds a line: it stays
 *    all zero, so a state of 0 (before the first line, and in a fork child, whose state
 *    page the kernel wipes) sends every read to the slow path at no extra cost.
 *
 * Why no reader ever waits on, or is held back by, another thread:
 *  - A reader never takes a lock, and the hot path never writes. Up to the line's hard
 *    end it computes from the line; past it, it may re-synchronize itself (if no other
 *    writer has the turn), and otherwise it reads the kernel's clock and hands out that
 *    value, held at or above everything the line and earlier kernel reads handed out
 *    (kernel_read(), shim/slow_path.c).
 *  - The writer's turn (writer_token) is a deadline, not a lock: a writer that is
 *    preempted, cancelled or jumped out of holds it for one life at most.
 *  - A published slot is never modified until the state names another slot; a reader
 *    validates its copy by reading the state again (line_read_retry), so a slot that was
 *    freed and refilled while it read is never used.
 *
 * Why no writer can block the others or corrupt what they publish:
 *  - A writer computes its whole line in private, then claims a free slot by
 *    compare-and-swap (never the current one), fills it, and publishes it by a 16-byte
 *    compare-and-swap of {state, floor} that fails if anything was published or a kernel
 *    read raised the floor in the meantime. A writer that lost is dropped; two writers
 *    never fill one slot.
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
 * fork child (MADV_WIPEONFORK, shim/clock.c; pthread_atfork where the kernel lacks it).
 * A child's first read finds no line and re-anchors (recover(), shim/resync.c). */
#include "publish.h"

#include "clock_state.h"
#include "signals.h"
#include "test_points.h"

#include <stdatomic.h>

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

/* Publishes `next`, planned from the line that state `expected[0]` names with floor
 * `expected[1]`. A floor raised meanwhile is applied and the publication tried again; a
 * floor beyond the plan, or any other publication, drops it (WRITE_LOST). */
enum write_result publish(uint64_t expected[2], struct line *next, uint32_t floor_exempt,
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
	for (int attempt = 0; attempt < plan_cfg.publish_attempts; attempt++) {
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
