/* What the shim shows to a reader outside the process (`tscshim ps`): the state block
 * (calib/state_block.h), which points at the counters the shim keeps anyway. Nothing on
 * the hot path: the served read counts nothing for it. At load it costs the loader's
 * relocation of a few addresses on the load page (written at load anyway); at the
 * decision, two stores on that page. */
#ifndef SHIM_VISIBLE_H
#define SHIM_VISIBLE_H

#include "decision.h"

#include "state_block.h"

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)
extern struct state_block visible_block;
/* Reads of served clocks while undecided, which gate.c counts (served_read_number): kept
 * here, beside the block that points at it. */
extern _Atomic uint64_t reads_before_decision;
#pragma GCC visibility pop

/* The decision `published` is whole and published (gate.c's publish, after its phase):
 * from now on a reader outside the process reads it. at_load: it was the cold start's.
 * Inline, so that the decision runs no function more (shim/decision_path.ld). */
static inline __attribute__((always_inline)) void visible_published(const struct decision_result *published,
								  bool at_load)
{
	visible_block.decided_at_load = at_load;
	__atomic_store_n(&visible_block.decision, (uint64_t)(uintptr_t)published, __ATOMIC_RELEASE);
}

#endif
