/* The clock's shared writer-side state, defined here and declared in shim/clock_state.h
 * for the rooms of the writer side (shim/anchor.c, shim/publish.c, shim/resync.c,
 * shim/slow_path.c, shim/clock.c) and for them only. Owns the storage and its placement
 * (ON_LOAD_PAGE, calib/load_page.h); holds no code, and touches neither the published
 * line (shim/line.h) nor the fork-wiped pages. */
#include "clock_state.h"

#include "load_page.h"

/* The writer's small state is on the load page (load_page.h): the first read publishes
 * the first line without a fresh page for it. */
struct plan_config plan_cfg ON_LOAD_PAGE;
struct cpu_mask covered ON_LOAD_PAGE; /* the CPUs the verdict compared */
bool covers_every_cpu ON_LOAD_PAGE; /* covered holds every possible CPU: never left */
bool started ON_LOAD_PAGE; /* a first line was published and not closed (a fork child inherits it) */
uint32_t served_at_start ON_LOAD_PAGE; /* bit per track the first line opened */
/* Per stopped track, the most its kernel clock read while its reads were held (0: none):
 * a kernel below that went back itself, and passes through. */
_Atomic uint64_t held_kernel_most[TRACKS];
/* Bit per served clock that passes through, stopped, its kernel past all it handed out:
 * until pass_until[clock] (the counter value its next try to serve again is due), its
 * reads pass at the slow path's first test, with no copy of the line. */
_Atomic uint32_t passing;
_Atomic uint64_t pass_until[TRACKS];
/* Writes in a row that found no good reading (a first line, a re-synchronization): each
 * back-off doubles (retry_after_failure). */
_Atomic uint32_t failures_in_a_row;

/* In memory a fork child keeps: what its parent last published, for continuity. Each
 * only grows. The slot shadow_state names is not free: its superseding writer frees it
 * only after announcing the newer state here. */
_Atomic uint64_t shadow_state ON_LOAD_PAGE, shadow_floor ON_LOAD_PAGE;

/* What happened, counted (clock.h). */
struct clock_tally clock_tally ON_LOAD_PAGE;
