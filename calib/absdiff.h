/* How far apart two values are, and how large a signed one is, as unsigned distances:
 * the one spelling of `a > b ? a - b : b - a` for the whole tree. Always inline, so a
 * caller on the load path or the hot path pays no call and touches no other page. */
#ifndef CALIB_ABSDIFF_H
#define CALIB_ABSDIFF_H

#include <stdint.h>

/* |a - b| without wrapping around. */
static inline __attribute__((always_inline)) uint64_t abs_diff_u64(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* |a - b| of two doubles (no NaN handling: a NaN compares false and gives b - a). */
static inline __attribute__((always_inline)) double abs_diff_double(double a, double b)
{
	return a > b ? a - b : b - a;
}

/* |x| as unsigned, defined for INT64_MIN too. */
static inline __attribute__((always_inline)) uint64_t magnitude_i64(int64_t x)
{
	return x < 0 ? -(uint64_t)x : (uint64_t)x;
}

#endif
