/* The table of the clocks the shim may serve (calib/clocks.h). */
#include "clocks.h"

#include "load_page.h"

_Static_assert(CLOCK_REALTIME < CLOCK_ID_LIMIT && CLOCK_MONOTONIC < CLOCK_ID_LIMIT &&
		       CLOCK_MONOTONIC_RAW < CLOCK_ID_LIMIT && CLOCK_BOOTTIME < CLOCK_ID_LIMIT,
	       "every served clock has a row in the tables by clock id");

const struct clock_desc clock_table[SERVED_CLOCK_COUNT] = {
	[SERVED_MONOTONIC] = {CLOCK_MONOTONIC, "monotonic", FAMILY_MONOTONIC, false},
	[SERVED_MONOTONIC_RAW] = {CLOCK_MONOTONIC_RAW, "monotonic_raw", FAMILY_RAW, false},
	[SERVED_BOOTTIME] = {CLOCK_BOOTTIME, "boottime", FAMILY_MONOTONIC, false},
	[SERVED_REALTIME] = {CLOCK_REALTIME, "realtime", FAMILY_MONOTONIC, true},
};

/* Every id "none", then the served ones: the later designators override on purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Winitializer-overrides"
#endif
/* On the load page (load_page.h), not among the constants: every read before the decision
 * looks it up, and a page of constants touched only for it would be a fault of its own. */
ON_LOAD_PAGE const unsigned char served_clock_by_id[CLOCK_ID_LIMIT] = {
	[0 ... CLOCK_ID_LIMIT - 1] = SERVED_CLOCK_COUNT,
	[CLOCK_MONOTONIC] = SERVED_MONOTONIC,
	[CLOCK_MONOTONIC_RAW] = SERVED_MONOTONIC_RAW,
	[CLOCK_BOOTTIME] = SERVED_BOOTTIME,
	[CLOCK_REALTIME] = SERVED_REALTIME,
};
#pragma GCC diagnostic pop
