/* Samples of a measurement (doubles): sorting, nearest-rank quantiles and the median, as
 * bench, calib's cost section and ab all use them. Pure; internal to the command. */
#ifndef CLI_SAMPLES_H
#define CLI_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

/* The qsort comparison of two doubles, ascending. */
int samples_compare(const void *a, const void *b);

/* Sorts v ascending, in place. */
void samples_sort(double *v, size_t n);

/* The p-quantile (0..1) of sorted values by nearest rank: the smallest value with at
 * least p of the values at or below it. 0 when n is 0. */
double samples_quantile(const double *sorted, size_t n, double p);

/* The median of sorted values: the middle one, or the mean of the middle two. 0 when n
 * is 0. */
double samples_median(const double *sorted, size_t n);

/* Sorts n counts in place (insertion sort: a handful of rounds) and returns the middle one
 * (the upper of the middle two): the cost measurements' median block. */
uint64_t samples_median_ticks(uint64_t *v, int n);

#endif
