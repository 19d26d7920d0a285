/* The clocks the shim may serve, in one table: adding one (CLOCK_TAI, say) is one row
 * here and one enumerator. Everything that maps a clock to a name, a track of the
 * published line or a stats slot indexes by enum served_clock. */
#ifndef CALIB_CLOCKS_H
#define CALIB_CLOCKS_H

#include <stdbool.h>
#include <time.h>

enum served_clock {
	SERVED_MONOTONIC,
	SERVED_MONOTONIC_RAW,
	SERVED_BOOTTIME,
	SERVED_REALTIME,
	SERVED_CLOCK_COUNT
};

/* How a clock relates to the others, for re-synchronization and fallbacks. */
enum clock_family {
	FAMILY_MONOTONIC, /* MONOTONIC, and the clocks that are MONOTONIC plus an offset */
	FAMILY_RAW,       /* MONOTONIC_RAW: not slewed by NTP, its own rate */
};

struct clock_desc {
	clockid_t id;
	const char *name;             /* as TSCSHIM_CLOCKS and the stats line spell it */
	enum clock_family family;
	bool wall;                    /* may step either way with the kernel (REALTIME) */
};

extern const struct clock_desc clock_table[SERVED_CLOCK_COUNT];

/* The served clock for a clock id, or -1. */
int served_clock_of(clockid_t id);

#endif
