/* The published line's storage (shim/line.h says what each holds and who may write it). */
#include "line.h"
#include "load_page.h"

#include <stddef.h>

struct line_slot line_slots[LINE_SLOTS];
AFTER_BSS struct fork_wiped wiped;
ON_LOAD_PAGE struct clock_config clock_config;

_Static_assert(sizeof(struct fork_wiped) == FORK_WIPED_PAGES * 4096,
	       "the fork-wiped state and the decision's scratch fill their pages, alone");
_Static_assert(offsetof(struct fork_wiped, decision_scratch) == 128,
	       "the scratch starts past the hot path's two cache lines");
_Static_assert(offsetof(struct fork_wiped, floor) == offsetof(struct fork_wiped, state) + 8,
	       "state and floor form one 16-byte pair");
