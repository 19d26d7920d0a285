/* Re-synchronization, a fork child's first line, resumption, and the writer's turn
 * (shim/resync.c). Private to the clock's writer side. */
#ifndef SHIM_RESYNC_H
#define SHIM_RESYNC_H

#include "clock_state.h"
#include "line.h"
#include "publish.h"

#include "segment.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)
enum write_result recover(bool signals_blocked, enum track_stop *why, uint32_t *serving);
enum write_result resume_line(uint64_t w, const struct line *old, uint64_t now);
/* The line `old` (state w) stopped whole because the hypervisor's marker changed (a
 * migration), in the caller's turn; published, the marker it stopped for is noted as
 * seen. */
enum write_result stop_for_disruption(uint64_t w, const struct line *old, uint64_t now);
enum write_result write_turn(uint64_t w, const struct line *l, uint64_t t, uint64_t mine);
uint64_t retry_after_failure(uint64_t began, uint64_t now);
#pragma GCC visibility pop

/* The turn to write. Inline, as they were before the writer side was split: a read past
 * a line's expiry (shim/slow_path.c) pays no call more than it did. */

/* Takes the writer's turn, until one life from `now` (*mine), if nobody holds it. */
static inline bool take_turn(uint64_t now, uint64_t *mine)
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
static inline void end_turn(uint64_t mine, uint64_t retry_at)
{
	atomic_compare_exchange_strong_explicit(&wiped.writer_token, &mine, retry_at,
						memory_order_release, memory_order_relaxed);
}

/* A write found a good reading: the next failure's back-off starts short again. */
static inline void note_write_succeeded(void)
{
	if (atomic_load_explicit(&failures_in_a_row, memory_order_relaxed))
		atomic_store_explicit(&failures_in_a_row, 0, memory_order_relaxed);
}

#endif
