/* Samples of a measurement (samples.h): sorting, nearest-rank quantiles, the median. */
#include "samples.h"

#include <stdlib.h>

int samples_compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void samples_sort(double *v, size_t n)
{
	qsort(v, n, sizeof *v, samples_compare);
}

double samples_quantile(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	/* The rank is ceil(p * n), less a hair: p * n carries rounding error (0.1 * 30 is
	 * 3.0000000000000004), which must not move the rank up by one. */
	size_t rank = (size_t)(p * (double)n + 0.999999999);
	if (rank > 0)
		rank--;
	return sorted[rank < n ? rank : n - 1];
}

double samples_median(const double *sorted, size_t n)
{
	if (n == 0)
		return 0;
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

uint64_t samples_median_ticks(uint64_t *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return v[n / 2];
}
