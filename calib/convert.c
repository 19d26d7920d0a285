/* Tick deltas to nanoseconds (calib/convert.h): building the multiply-and-shift parameters. */
#include "convert.h"

#define NS_PER_SEC_MILLI 1000000000000ull /* ns per second, times 1000 for millihertz */

/* Rounding mult up keeps results at or above the exact value (see convert.h). If it
 * carries out of 64 bits, one bit of precision goes. */
static void round_mult_up(uint64_t *mult, int *shift)
{
	if (*mult == UINT64_MAX) {
		*mult = 1ull << 63;
		(*shift)--;
	} else {
		(*mult)++;
	}
}

int conversion_from_ratio(struct conversion *out, uint64_t ns, uint64_t ticks)
{
	if (ns == 0 || ticks == 0)
		return -1;

	/* Long division, one binary digit at a time: the integer part first, then fraction
	 * bits until mult has its top bit set. Exact, and never needs more than 128 bits. */
	uint64_t mult = ns / ticks;
	unsigned __int128 rem = ns % ticks;
	int shift = 0;
	while (mult < (1ull << 63) && shift < 127) {
		rem <<= 1;
		mult <<= 1;
		if (rem >= ticks) {
			rem -= ticks;
			mult |= 1;
		}
		shift++;
	}
	if (rem != 0)
		round_mult_up(&mult, &shift);
	out->mult = mult;
	out->shift = (uint32_t)shift;
	return 0;
}

int conversion_from_rate(struct conversion *out, uint64_t rate_millihz)
{
	return conversion_from_ratio(out, NS_PER_SEC_MILLI, rate_millihz);
}

uint64_t conversion_max_delta(const struct conversion *c)
{
	if (c->mult == 0 || c->shift >= 65)
		return UINT64_MAX;
	/* (delta * mult) >> shift < 2^63  <=>  delta * mult < 2^(63+shift) */
	unsigned __int128 limit = ((unsigned __int128)1 << (63 + c->shift)) - 1;
	unsigned __int128 max = limit / c->mult;
	return max > UINT64_MAX ? UINT64_MAX : (uint64_t)max;
}

/* Scaling by powers of two is exact in long double; loops instead of libm's frexpl and
 * ldexpl keep libm out of the preloaded library (one more object to load per process). */
static long double scale2(long double x, int exponent)
{
	for (; exponent > 0; exponent--)
		x *= 2;
	for (; exponent < 0; exponent++)
		x /= 2;
	return x;
}

int conversion_from_slope(struct conversion *out, long double ns_per_tick)
{
	if (!(ns_per_tick > 0) || ns_per_tick > 1e30L)
		return -1;
	/* mult = ceil(slope * 2^shift) in [2^63, 2^64), shift in 0..127 */
	int shift = 0;
	long double scaled = ns_per_tick;
	const long double low = scale2(1.0L, 63), high = scale2(1.0L, 64);
	while (scaled < low && shift < 127) {
		scaled *= 2;
		shift++;
	}
	while (scaled >= high) {
		scaled /= 2;
		shift--;
	}
	if (shift < 0 || scaled < 1)
		return -1;
	uint64_t mult = (uint64_t)scaled; /* exact: a long double holds 64 significant bits */
	if ((long double)mult < scaled)
		round_mult_up(&mult, &shift);
	out->mult = mult;
	out->shift = (uint32_t)shift;
	return 0;
}

long double conversion_slope(const struct conversion *c)
{
	return scale2((long double)c->mult, -(int)c->shift);
}

int split_conversion_from(struct split_conversion *out, uint64_t base, const struct conversion *c,
			  uint64_t max_delta)
{
	if (c->shift > 127 || max_delta > conversion_max_delta(c))
		return -1;
	/* With mult normalised (>= 2^63) that bound already keeps delta < 2^shift, so that
	 * shifting it up by 64 - shift keeps every bit; checked for any mult. */
	if (c->shift < 64 && (max_delta >> c->shift) != 0)
		return -1;
	out->base_sec = base / NSEC_PER_SEC;
	out->base_nsec = base % NSEC_PER_SEC;
	out->mult = c->mult;
	out->pre_shift = c->shift < 64 ? 64 - c->shift : 0;
	out->post_shift = c->shift > 64 ? c->shift - 64 : 0;
	return 0;
}
