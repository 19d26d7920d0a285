/* The statistics behind ab's verdict: medians, outliers by median absolute deviation,
 * the median's distribution-free confidence interval, and the verdict's words. Pure;
 * internal to the command. */
#ifndef CLI_AB_STATS_H
#define CLI_AB_STATS_H

#include <stdbool.h>
#include <stddef.h>

double ab_median(const double *v, size_t n);
/* Median absolute deviation from median, times 1.4826 so that it estimates the standard
 * deviation of normal noise. */
double ab_mad(const double *v, size_t n, double median);
/* Flags (and counts) the values more than 3 MADs from the median; with a MAD of 0, every
 * value that differs from the median. */
size_t ab_outliers(const double *v, size_t n, bool *flag);

/* The median of v and a distribution-free confidence interval for it: order statistics
 * [x(k), x(n+1-k)] with k from the binomial (sign test), so that the coverage is at least
 * 95 %. Needs 6 values; below that has_interval is false. */
struct ab_interval {
	size_t n;
	double median, low, high, p10, p90;
	bool has_interval;
	double coverage; /* the interval's exact (n <= 1000) or approximate coverage */
};
struct ab_interval ab_median_interval(const double *v, size_t n);

enum ab_outcome { AB_UNDECIDED, AB_NO_DIFFERENCE, AB_BETTER, AB_WORSE };
extern const char *const ab_outcome_names[];

/* The verdict on the ratio variant/baseline: "B is 1.82x faster than A (1.75-1.90, 95%)",
 * "no difference detected (0.97-1.04)" or "too few pairs ...". is_time words it in
 * faster/slower, else better/worse. */
enum ab_outcome ab_verdict(const struct ab_interval *ratio, bool higher_is_better, bool is_time,
			   const char *variant, const char *baseline, char *buf, size_t size);

#endif
