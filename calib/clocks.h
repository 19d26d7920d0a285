/* The clocks the shim may serve, in one table. Everything inside the library that maps a
 * clock to a name, a track of the published line or a stats slot indexes by enum
 * served_clock, so for those adding one (CLOCK_TAI, say) is one row here and one
 * enumerator. The public status is not: struct tscshim_status (include/tscshim.h) has
 * per-clock arrays of a fixed TSCSHIM_STAT_CLOCKS, "other" last, and a bit per clock in
 * served_clocks, which programs are built against. A new clock there is a new status
 * version with fields of its own appended (shim/stats.c's static assertion stops the
 * build until the counts agree) and its bit; served by default, it also joins
 * TSCSHIM_CLOCKS' default (calib/options.h, calib/options.c). */
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

/* How a clock relates to the others, for re-synchronization and kernel reads. */
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

/* Every clock id the shim may serve lies below this, so tables by clock id are small
 * arrays that the hot path indexes after one unsigned compare. */
enum { CLOCK_ID_LIMIT = 32 };

/* By clock id: its enum served_clock, or SERVED_CLOCK_COUNT for a clock never served. */
extern const unsigned char served_clock_by_id[CLOCK_ID_LIMIT];

/* The served clock for any clock id, or SERVED_CLOCK_COUNT: the one way "not a served
 * clock" is said by index (the stats count such calls in that slot, STAT_OTHER). The
 * published configuration says "not served now" as 0 in clock_config.served_index, whose
 * entries are served clock + 1 (shim/line.h). */
static inline unsigned served_clock_slot(clockid_t id)
{
	return (unsigned)id < CLOCK_ID_LIMIT ? served_clock_by_id[id] : SERVED_CLOCK_COUNT;
}

#endif
