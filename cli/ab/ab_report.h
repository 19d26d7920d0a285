/* What `tscshim ab` reports from its summary: a table, JSON or Markdown, the warnings on
 * stderr that must not be missed, and the wall-time plot. Internal to the command. */
#ifndef CLI_AB_REPORT_H
#define CLI_AB_REPORT_H

#include "ab_config.h"
#include "ab_run.h"
#include "ab_summary.h"

#include <stdio.h>

void ab_print_table(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s);
void ab_print_json(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s);
void ab_print_markdown(FILE *out, const struct ab_config *c, const struct ab_summary *s);

/* On stderr: failed warmup runs, outliers, and variants in which the TSC served nothing. */
void ab_print_warnings(const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s,
		       int warmup_failed);

/* The wall time CDF of each variant into c->plot_file (gnuplot must be there). */
void ab_plot(const struct ab_config *c, const struct ab_run *runs);

#endif
