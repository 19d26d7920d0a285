/* The statistics behind ab's verdict, as pure functions: the median and its
 * distribution-free confidence interval, outliers by median absolute deviation, and the
 * wording of the verdict. */
#include "ab_stats.h"
#include "absdiff.h"
#include "samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ab_outcome_names[] = {"undecided", "none", "better", "worse"};

static double *sorted_copy(const double *v, size_t n)
{
	double *s = malloc((n ? n : 1) * sizeof *s);
	if (!s)
		return NULL;
	memcpy(s, v, n * sizeof *s);
	samples_sort(s, n);
	return s;
}

double ab_median(const double *v, size_t n)
{
	double *s = sorted_copy(v, n);
	double m = s ? samples_median(s, n) : 0;
	free(s);
	return m;
}

double ab_mad(const double *v, size_t n, double median)
{
	double *d = malloc((n ? n : 1) * sizeof *d);
	if (!d)
		return 0;
	for (size_t i = 0; i < n; i++)
		d[i] = abs_diff_double(v[i], median);
	double mad = ab_median(d, n);
	free(d);
	return 1.4826 * mad;
}

size_t ab_outliers(const double *v, size_t n, bool *flag)
{
	double m = ab_median(v, n), mad = ab_mad(v, n, m);
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		double d = abs_diff_double(v[i], m);
		flag[i] = mad > 0 ? d > 3 * mad : d > 0;
		count += flag[i];
	}
	return count;
}

/* The largest k such that P(X <= k - 1) <= 0.025 for X ~ Binomial(n, 1/2): [x(k), x(n+1-k)]
 * then holds the median with probability 1 - 2 P(X <= k - 1) >= 95 %. Exact up to n = 1000
 * (2^-1000 is still a normal double), the normal approximation beyond. 0: no such k. */
static size_t order_statistic(size_t n, double *coverage)
{
	if (n > 1000) {
		double k = (double)n / 2 + 0.5 - 0.979982 * __builtin_sqrt((double)n);
		*coverage = 0.95;
		return k >= 1 ? (size_t)k : 0;
	}
	double pmf = 1;
	for (size_t i = 0; i < n; i++)
		pmf /= 2; /* P(X = 0) */
	double cdf = 0;
	size_t k = 0;
	for (size_t i = 0; i <= n; i++) {
		if (cdf + pmf > 0.025)
			break;
		cdf += pmf; /* P(X <= i) */
		k = i + 1;
		pmf = pmf * (double)(n - i) / (double)(i + 1);
	}
	*coverage = 1 - 2 * cdf;
	return k;
}

struct ab_interval ab_median_interval(const double *v, size_t n)
{
	struct ab_interval r = {.n = n};
	if (n == 0)
		return r;
	double *s = sorted_copy(v, n);
	if (!s)
		return r;
	r.median = samples_median(s, n);
	r.p10 = samples_quantile(s, n, 0.10);
	r.p90 = samples_quantile(s, n, 0.90);
	size_t k = order_statistic(n, &r.coverage);
	if (k >= 1) {
		r.has_interval = true;
		r.low = s[k - 1];
		r.high = s[n - k];
	} else {
		r.coverage = 0;
	}
	free(s);
	return r;
}

/* Small factors need a third decimal to say anything. */
static int decimals(double factor)
{
	return factor < 1.1 ? 3 : 2;
}

enum ab_outcome ab_verdict(const struct ab_interval *ratio, bool higher_is_better, bool is_time,
			   const char *variant, const char *baseline, char *buf, size_t size)
{
	if (!ratio->has_interval) {
		snprintf(buf, size, "too few pairs for a 95%% interval (%zu, 6 needed): %s/%s median %.3f", ratio->n,
			 variant, baseline, ratio->median);
		return AB_UNDECIDED;
	}
	if (ratio->low <= 1 && ratio->high >= 1) {
		snprintf(buf, size, "no difference detected (%.3f-%.3f)", ratio->low, ratio->high);
		return AB_NO_DIFFERENCE;
	}
	bool above = ratio->low > 1; /* the variant's value is larger than the baseline's */
	bool better = above == higher_is_better;
	/* Told as a factor >= 1 in the direction of the difference. */
	double factor = above ? ratio->median : 1 / ratio->median;
	double lo = above ? ratio->low : 1 / ratio->high, hi = above ? ratio->high : 1 / ratio->low;
	const char *word = is_time ? (better ? "faster" : "slower") : (better ? "better" : "worse");
	int d = decimals(lo);
	snprintf(buf, size, "%s is %.*fx %s than %s (%.*f-%.*f, 95%%)", variant, d, factor, word, baseline, d, lo, d,
		 hi);
	return better ? AB_BETTER : AB_WORSE;
}
