/* The statistics of a whole `tscshim ab`: per variant the min, median and max of wall
 * time, user and sys time and each metric, outliers, the ratio to the first variant pair
 * by pair with its verdict, and the TSC's counts. Internal to the command. */
#ifndef CLI_AB_SUMMARY_H
#define CLI_AB_SUMMARY_H

#include "ab_config.h"
#include "ab_run.h"
#include "ab_stats.h"
#include "ab_tsc.h"

#include <stdbool.h>
#include <stddef.h>

enum { AB_QUANTITIES = 1 + AB_MAX_METRICS }; /* wall time, then each metric */

/* Of the runs of one variant that are kept (n). */
struct ab_spread {
	double min, median, max;
	size_t n;
};

struct ab_summary {
	int quantities;
	struct ab_spread q[AB_QUANTITIES][AB_MAX_VARIANTS], user[AB_MAX_VARIANTS], sys[AB_MAX_VARIANTS];
	bool *outlier[AB_QUANTITIES];        /* per run */
	size_t outliers[AB_QUANTITIES][AB_MAX_VARIANTS];
	struct ab_interval ratio[AB_QUANTITIES][AB_MAX_VARIANTS]; /* variant / the first, pair by pair */
	enum ab_outcome outcome[AB_QUANTITIES][AB_MAX_VARIANTS];
	char verdict[AB_QUANTITIES][AB_MAX_VARIANTS][256];
	struct ab_tsc tsc[AB_MAX_VARIANTS], server_tsc[AB_MAX_VARIANTS];
	int failed;
};

/* Returns 0 or -1 (out of memory). Free with ab_summary_free either way. */
int ab_summarize(const struct ab_config *c, const struct ab_run *runs, struct ab_summary *s);
void ab_summary_free(struct ab_summary *s);

/* Quantity q: 0 wall time, then each metric. */
const char *ab_quantity_name(const struct ab_config *c, int q);
bool ab_higher_is_better(const struct ab_config *c, int q);
/* Runs of every variant: c->runs of each. */
long ab_run_count(const struct ab_config *c);

/* The TSC counts that tell whether variant v measured the shim: the server's when there
 * is one (the driver runs without the shim), else the command's. */
const struct ab_tsc *ab_measured_tsc(const struct ab_config *c, const struct ab_summary *s, int v);

#endif
