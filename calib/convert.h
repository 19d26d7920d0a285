/* Tick deltas to nanoseconds by one 64x64->128-bit multiply and a shift.
 *
 * Parameters are built from an exact rational ns/ticks, with mult rounded up and
 * normalised into [2^63, 2^64). The result is never below the exact value and exceeds
 * it by less than result * 2^-63, so for every result below 2^63 ns (292 years) it is
 * floor(exact) or, when the exact value lies that close under the next integer, one
 * more: under 1 ns from the exact value. conversion_max_delta() is the largest delta in
 * that range: for counters at or above 1 GHz every 64-bit delta; at 2.1 GHz too. */
#ifndef CALIB_CONVERT_H
#define CALIB_CONVERT_H

#include <stdint.h>
#include <time.h>

struct conversion {
	uint64_t mult;
	uint32_t shift; /* 0..127 */
};

/* Parameters for ns_per_tick = ns / ticks. Returns 0, or -1 if ticks or ns is zero. */
int conversion_from_ratio(struct conversion *out, uint64_t ns, uint64_t ticks);

/* Parameters for a counter running at rate_millihz / 1000 ticks per second. */
int conversion_from_rate(struct conversion *out, uint64_t rate_millihz);

/* Parameters for a slope given in ns per tick (the shim's re-synchronized segments).
 * Returns 0, or -1 for a slope that is not positive and finite. */
int conversion_from_slope(struct conversion *out, long double ns_per_tick);

/* The slope the parameters stand for, ns per tick. */
long double conversion_slope(const struct conversion *c);

/* Largest delta whose converted value is below 2^63 ns, where the bound above holds. */
uint64_t conversion_max_delta(const struct conversion *c);

static inline uint64_t conversion_apply(const struct conversion *c, uint64_t delta)
{
	return (uint64_t)(((unsigned __int128)delta * c->mult) >> c->shift);
}

/* ns split into a timespec: what the shim hands out, and what the floor benchmarks pay. */
static inline void ns_to_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

#endif
