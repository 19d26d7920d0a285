/* The writer side's shared state (defined in shim/clock_state.c), and two small helpers
 * on it, private to the rooms of the clock's writer side: shim/anchor.c, shim/publish.c,
 * shim/resync.c, shim/slow_path.c and shim/clock.c. Nothing else in the shim includes
 * it: what the rest may read of the clock is in shim/clock.h (and the published line in
 * shim/line.h). Every name here is hidden: reached without the GOT, as a static was. */
#ifndef SHIM_CLOCK_STATE_H
#define SHIM_CLOCK_STATE_H

#include "clock_tally.h"
#include "line.h"

#include "segment.h"
#include "system.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)
/* Every tunable of the line, derived from the bound once at the start (calib/segment.c). */
extern struct plan_config plan_cfg;
extern struct cpu_mask covered;        /* the CPUs the verdict compared */
extern bool covers_every_cpu;          /* covered holds every possible CPU: never left */
extern bool started;                   /* a first line was published and not closed */
extern uint32_t served_at_start;       /* bit per track the first line opened */
extern _Atomic uint64_t held_kernel_most[TRACKS]; /* per stopped track, its kernel's most while held: below it by more than the bound, it went back itself */
extern _Atomic uint32_t passing;       /* bit per stopped clock passing at the slow path's first test */
extern _Atomic uint64_t pass_until[TRACKS]; /* until when it passes */
extern _Atomic uint32_t failures_in_a_row; /* writes in a row that found no good reading */
/* What a fork child keeps of its parent's publications: the newest state and floor. */
extern _Atomic uint64_t shadow_state, shadow_floor;
#pragma GCC visibility pop

/* The slot a state word names. */
static inline unsigned slot_of(uint64_t state)
{
	return (unsigned)(state & (LINE_SLOTS - 1));
}

/* Raises *word to value (never lowers it). */
static inline void atomic_max(_Atomic uint64_t *word, uint64_t value)
{
	uint64_t seen = atomic_load_explicit(word, memory_order_relaxed);
	while (seen < value &&
	       !atomic_compare_exchange_weak_explicit(word, &seen, value, memory_order_release,
						      memory_order_relaxed))
		;
}

#endif
