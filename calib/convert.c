#include "convert.h"

#include <math.h>

#define NS_PER_SEC_MILLI 1000000000000ull /* ns per second, times 1000 for millihertz */

int conversion_from_ratio(struct conversion *out, uint64_t ns, uint64_t ticks)
{
	if (ns == 0 || ticks == 0)
		return -1;

	/* Long division, one binary digit at a time: the integer part first, then fraction
	 * bits until mult has its top bit set. Exact, and never needs more than 128 bits. */
	uint64_t mult = ns / ticks;
	unsigned __int128 rem = ns % ticks;
	uint32_t shift = 0;
	while (mult < (1ull << 63) && shift < 127) {
		rem <<= 1;
		mult <<= 1;
		if (rem >= ticks) {
			rem -= ticks;
			mult |= 1;
		}
		shift++;
	}
	/* Round up: then (delta * mult) >> shift is never below the exact value, exceeds it
	 * by under delta * 2^-shift (< 2^-63 of the result), so its floor errs by less than
	 * 1 ns and an exact integer converts exactly. If rounding carries out of 64 bits,
	 * give up one bit of precision. */
	if (rem != 0) {
		if (mult == UINT64_MAX) {
			mult = 1ull << 63;
			shift--;
		} else {
			mult++;
		}
	}
	out->mult = mult;
	out->shift = shift;
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

int conversion_from_slope(struct conversion *out, long double ns_per_tick)
{
	if (!(ns_per_tick > 0) || !isfinite(ns_per_tick))
		return -1;
	int exponent;
	long double fraction = frexpl(ns_per_tick, &exponent); /* [0.5, 1) x 2^exponent */
	int shift = 64 - exponent;
	if (shift < 0 || shift > 127)
		return -1;
	long double scaled = ceill(ldexpl(fraction, 64));
	if (scaled >= ldexpl(1.0L, 64)) { /* rounding carried out of 64 bits */
		scaled = ldexpl(1.0L, 63);
		shift--;
	}
	out->mult = (uint64_t)scaled;
	out->shift = (uint32_t)shift;
	return 0;
}

long double conversion_slope(const struct conversion *c)
{
	return ldexpl((long double)c->mult, -(int)c->shift);
}
