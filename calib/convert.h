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

/* The counter's period at rate_millihz (mHz), in ns: how every timer and figure turns
 * ticks into time. rate_millihz must not be 0. */
static inline long double ns_per_tick_at(uint64_t rate_millihz)
{
	return 1e12L / (long double)rate_millihz;
}

/* Largest delta whose converted value is below 2^63 ns, where the bound above holds. */
uint64_t conversion_max_delta(const struct conversion *c);

static inline uint64_t conversion_apply(const struct conversion *c, uint64_t delta)
{
	return (uint64_t)(((unsigned __int128)delta * c->mult) >> c->shift);
}

#define NSEC_PER_SEC 1000000000u

/* ns split into a timespec (the slow path's and the planning's form). */
static inline void ns_to_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / NSEC_PER_SEC);
	ts->tv_nsec = (long)(ns % NSEC_PER_SEC);
}

/* The same map as (base, conversion), in the form a clock read takes at the floor, as the
 * kernel's vDSO does: the base split into seconds and nanoseconds, so that a read needs
 * no 64-bit division (a compare, and rarely one subtraction), and the shift split around
 * the product's high half, so that it needs no 128-bit shift (the high half of one
 * multiply, one 64-bit shift). On this path those two cost about 4 ns of a 29 ns read.
 *
 * pre_shift is 0 for every counter at or above 1 GHz (shift >= 64); slower counters
 * shift the delta up first, which is exact while the delta stays under 2^shift, that is
 * while its value stays under 2^63 ns: split_conversion_from() takes the largest delta
 * that will be converted and refuses a range beyond that. All fields are 64-bit words. */
struct split_conversion {
	uint64_t base_sec;
	uint64_t base_nsec;  /* < NSEC_PER_SEC */
	uint64_t mult;
	uint64_t pre_shift;  /* 0..63, applied to the delta */
	uint64_t post_shift; /* 0..63, applied to the product's high half */
};

/* For deltas 0..max_delta: afterwards split_conversion_apply(out, delta) is exactly
 * ns_to_timespec(base + conversion_apply(c, delta)). Returns 0, or -1 when some delta in
 * the range converts to 2^63 ns or more (conversion_max_delta()). */
int split_conversion_from(struct split_conversion *out, uint64_t base, const struct conversion *c,
			  uint64_t max_delta);

/* The last step of split_conversion_apply: a base's seconds and nanoseconds plus what
 * the multiply-shift gave, normalized into *ts (the shim's hot path computes the parts
 * itself, each as late as it can). */
static inline void split_conversion_store(uint64_t sec, uint64_t nsec, struct timespec *ts)
{
	/* Rare: a base near the end of its second, or a long segment. */
	if (__builtin_expect(nsec >= NSEC_PER_SEC, 0)) {
		sec += nsec / NSEC_PER_SEC;
		nsec %= NSEC_PER_SEC;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)nsec;
}

static inline void split_conversion_apply(const struct split_conversion *s, uint64_t delta,
					  struct timespec *ts)
{
	if (__builtin_expect(s->pre_shift != 0, 0)) {
		/* Opaque, so that the compiler keeps a branch (predicted, off the value's
		 * dependency chain) instead of shifting every delta by zero. */
		__asm__("" : "+r"(delta));
		delta <<= s->pre_shift;
	}
	uint64_t high = (uint64_t)(((unsigned __int128)delta * s->mult) >> 64);
	split_conversion_store(s->base_sec, s->base_nsec + (high >> s->post_shift), ts);
}

#endif
