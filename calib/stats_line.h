/* The line TSCSHIM_STATS writes at exit, one per process:
 *   tscshim stats pid=N active=A monotonic=SERVED/TOTAL ... other=SERVED/TOTAL resyncs=N ...
 * The shim writes it (shim/stats.c) and `tscshim ab` sums it (cli/ab/ab_tsc.c); both spell
 * the prefix and the clocks' fields from here, so that a clock added to clock_table is
 * written and read alike. */
#ifndef CALIB_STATS_LINE_H
#define CALIB_STATS_LINE_H

#include "clocks.h"

#define STATS_LINE_PREFIX "tscshim stats "

/* A count per served clock (enum served_clock), and one slot for every other clock. */
enum { STAT_OTHER = SERVED_CLOCK_COUNT, STAT_CLOCKS };

/* The field name of slot (0..STAT_CLOCKS-1): clock_table's name, or "other". */
const char *stats_clock_name(int slot);

#endif
