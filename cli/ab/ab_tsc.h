/* How many clock calls the TSC served in a run: the TSCSHIM_STATS lines (stats_line.h)
 * its processes wrote, summed. Internal to the command. */
#ifndef CLI_AB_TSC_H
#define CLI_AB_TSC_H

#include "stats_line.h"

/* The clocks of the stats line, named by stats_clock_name(). */
enum { AB_CLOCKS = STAT_CLOCKS };

struct ab_tsc {
	int lines, active; /* processes that wrote stats; of them, those served by the TSC */
	unsigned long long served[AB_CLOCKS], total[AB_CLOCKS];
};

/* Sums every stats line of file (none if it is missing) into *t, zeroed first. */
void ab_read_stats(const char *file, struct ab_tsc *t);
/* Adds the counts of part into *sum. */
void ab_tsc_add(struct ab_tsc *sum, const struct ab_tsc *part);
/* Over every clock. */
unsigned long long ab_tsc_served(const struct ab_tsc *t);
unsigned long long ab_tsc_total(const struct ab_tsc *t);

#endif
