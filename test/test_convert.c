/* Conversion: our multiply-shift against exact arithmetic, and the published figures of
 * fio's and wtmlib's schemes, reproduced by reference implementations written here. */
#include "convert.h"
#include "unit.h"
#include "rng.h"

#include <stdlib.h>

/* ---- fio 3.32 (gettime.c), as its documentation describes it ---- */
struct fio_params {
	uint64_t mult, shift, max_cycles_shift, max_cycles_mask, nsecs_for_max_cycles;
};

static struct fio_params fio_setup(uint64_t cycles_per_msec)
{
	struct fio_params p = {0};
	uint64_t max_ticks = 60ull * 60 * 1000 * cycles_per_msec; /* MAX_CLOCK_SEC = 1 h */
	uint64_t max_mult = UINT64_MAX / max_ticks;
	/* largest power of two FACTOR with FACTOR / ticks_per_ns <= max_mult */
	uint64_t tmp = max_mult * cycles_per_msec / 1000000;
	while (tmp > 1) {
		tmp >>= 1;
		p.shift++;
	}
	p.mult = (1ull << p.shift) * 1000000 / cycles_per_msec;
	tmp = max_ticks;
	while (tmp > 1) {
		tmp >>= 1;
		p.max_cycles_shift++;
	}
	p.max_cycles_mask = (1ull << p.max_cycles_shift) - 1;
	p.nsecs_for_max_cycles = ((1ull << p.max_cycles_shift) * p.mult) >> p.shift;
	return p;
}

static uint64_t fio_convert(const struct fio_params *p, uint64_t t)
{
	uint64_t ns = (t >> p->max_cycles_shift) * p->nsecs_for_max_cycles;
	return ns + (((t & p->max_cycles_mask) * p->mult) >> p->shift);
}

/* ---- wtmlib's one-year and one-hour formulas at 3.333 ticks/ns ---- */
static uint64_t wtmlib_year(uint64_t ticks)
{
	return (uint64_t)((unsigned __int128)ticks * 153 / 512);
}
static uint64_t wtmlib_hour(uint64_t ticks)
{
	return (uint64_t)((unsigned __int128)ticks * 1258417 / 4194304);
}

static uint64_t exact(uint64_t ticks, uint64_t ns, uint64_t per_ticks)
{
	return (uint64_t)((unsigned __int128)ticks * ns / per_ticks);
}

static void fio_published_figures(void)
{
	struct fio_params p = fio_setup(2600001);
	CHECK_EQ_U64(p.shift, 22);
	CHECK_EQ_U64(p.mult, 1613193);
	CHECK_EQ_U64(p.max_cycles_shift, 43);
	CHECK_EQ_U64(p.max_cycles_mask, 0x000007ffffffffffull);
	CHECK_EQ_U64(p.nsecs_for_max_cycles, 3383110926336ull);
	uint64_t hour = 9360003600000ull;
	CHECK_EQ_U64(fio_convert(&p, hour), 3599999496339ull);
	CHECK_EQ_U64(3600000000000ull - fio_convert(&p, hour), 503661);
}

static void ours_at_fio_rate(void)
{
	struct conversion c;
	CHECK(conversion_from_rate(&c, 2600001000000ull) == 0); /* 2,600,001 ticks/ms */
	uint64_t hour = 9360003600000ull;
	CHECK_EQ_U64(conversion_apply(&c, hour), 3600000000000ull);
	CHECK(conversion_max_delta(&c) == UINT64_MAX);
}

static void wtmlib_published_figures(void)
{
	uint64_t year = 105109488000000000ull; /* 365 days at 3.333 ticks/ns */
	CHECK_EQ_U64(wtmlib_year(year), 31409671218750000ull);
	uint64_t hour = 11998800000000ull;     /* one hour at 3.333 ticks/ns */
	CHECK_EQ_U64(3600000000000ull - wtmlib_hour(hour), 119305);
}

static void ours_at_wtmlib_rate(void)
{
	struct conversion c;
	CHECK(conversion_from_ratio(&c, 1000, 3333) == 0); /* 3.333 ticks/ns */
	uint64_t year = 105109488000000000ull;
	CHECK_EQ_U64(conversion_apply(&c, year), 31536000000000000ull);
	uint64_t hour = 11998800000000ull;
	CHECK_EQ_U64(conversion_apply(&c, hour), 3600000000000ull);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
	return xorshift64(&rng_state);
}

/* Over random rates (1 MHz..10 GHz, and odd rationals) and deltas across the whole
 * allowed range, the result is floor(exact) or, within 2^-63 of the next integer, one more. */
static void within_one_ns_everywhere(void)
{
	uint64_t worst = 0;
	for (int r = 0; r < 2000; r++) {
		uint64_t rate_mhz = 1000000000ull + rng() % 10000000000000ull;
		struct conversion c;
		CHECK(conversion_from_rate(&c, rate_mhz) == 0);
		CHECK(c.mult >= (1ull << 63) || c.shift == 127);
		uint64_t max = conversion_max_delta(&c);
		for (int k = 0; k < 200; k++) {
			uint64_t delta = rng() >> (rng() % 64);
			if (delta > max)
				delta = max;
			uint64_t want = exact(delta, 1000000000000ull, rate_mhz);
			uint64_t got = conversion_apply(&c, delta);
			CHECK(got >= want);
			if (got - want > worst)
				worst = got - want;
		}
		/* the edge of the range too */
		CHECK(conversion_apply(&c, max) - exact(max, 1000000000000ull, rate_mhz) <= 1);
		CHECK(conversion_apply(&c, max) < (1ull << 63) || max == UINT64_MAX);
	}
	CHECK(worst <= 1);
}

static void slow_counter_range_is_stated(void)
{
	struct conversion c;
	CHECK(conversion_from_rate(&c, 25000000000ull) == 0); /* 25 MHz: 40 ns per tick */
	uint64_t max = conversion_max_delta(&c);
	CHECK(max < (1ull << 63) / 39 && max > (1ull << 63) / 41);
	CHECK(conversion_apply(&c, 1000) == 40000);
}

static void rejects_zero(void)
{
	struct conversion c;
	CHECK(conversion_from_ratio(&c, 0, 5) == -1);
	CHECK(conversion_from_ratio(&c, 5, 0) == -1);
	CHECK(conversion_from_rate(&c, 0) == -1);
}

/* The re-synchronization's slopes: the same parameters as the exact rational
 * construction (to the last unit of mult), and the slope read back. */
static void slopes_match_exact_ratios(void)
{
	static const uint64_t rates[] = {2096008000123ull, 1000000000000ull, 3333000000000ull,
					 25000000000ull, 999999999999ull};
	for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
		struct conversion exact_c, slope_c;
		CHECK(conversion_from_rate(&exact_c, rates[i]) == 0);
		CHECK(conversion_from_slope(&slope_c, 1e12L / (long double)rates[i]) == 0);
		CHECK_EQ_U64(slope_c.shift, exact_c.shift);
		uint64_t d = slope_c.mult > exact_c.mult ? slope_c.mult - exact_c.mult
							 : exact_c.mult - slope_c.mult;
		CHECK(d <= 1);
		long double back = conversion_slope(&slope_c);
		long double want = 1e12L / (long double)rates[i];
		CHECK(back >= want && (back - want) / want < 1e-18L);
	}
}

static void bad_slopes_are_refused(void)
{
	struct conversion c;
	CHECK(conversion_from_slope(&c, 0) == -1);
	CHECK(conversion_from_slope(&c, -1) == -1);
	CHECK(conversion_from_slope(&c, 1e40L) == -1);
	CHECK(conversion_from_slope(&c, 0.0L / 0.0L) == -1);
}

/* The hot path's split form is the same map, to the nanosecond: over rates from 1 MHz
 * (a delta shifted up first) to 10 GHz (the product's high half shifted down), bases
 * anywhere in their second, and deltas up to the range's end (many seconds on, where the
 * rare normalisation runs). */
static void split_form_is_the_same_map(void)
{
	for (int r = 0; r < 2000; r++) {
		uint64_t rate_millihz = 1000000000ull + rng() % 10000000000000ull;
		struct conversion c;
		CHECK(conversion_from_rate(&c, rate_millihz) == 0);
		uint64_t base = rng() >> (rng() % 8);
		uint64_t max = conversion_max_delta(&c) / (1 + rng() % 1000);
		struct split_conversion s;
		CHECK(split_conversion_from(&s, base, &c, max) == 0);
		CHECK(s.base_nsec < NSEC_PER_SEC && s.pre_shift < 64 && s.post_shift < 64);
		CHECK(s.pre_shift == 0 || s.post_shift == 0);
		for (int k = 0; k < 200; k++) {
			uint64_t delta = k == 0 ? max : rng() >> (rng() % 64);
			if (delta > max)
				delta = max;
			uint64_t ns = base + conversion_apply(&c, delta);
			if (ns < base)
				continue; /* past 2^64 ns: no clock gets there */
			struct timespec want, got;
			ns_to_timespec(ns, &want);
			split_conversion_apply(&s, delta, &got);
			CHECK_EQ_U64((uint64_t)got.tv_sec, (uint64_t)want.tv_sec);
			CHECK_EQ_U64((uint64_t)got.tv_nsec, (uint64_t)want.tv_nsec);
		}
	}
}

/* A range whose values pass 2^63 ns has no split form: the caller must not serve it. */
static void split_form_refuses_what_it_cannot_cover(void)
{
	struct conversion c;
	struct split_conversion s;
	CHECK(conversion_from_rate(&c, 25000000000ull) == 0); /* 25 MHz: delta shifted up */
	uint64_t max = conversion_max_delta(&c);
	CHECK(split_conversion_from(&s, 0, &c, max) == 0);
	CHECK(s.pre_shift > 0);
	CHECK(split_conversion_from(&s, 0, &c, max + 1) == -1);
	CHECK(conversion_from_rate(&c, 3000000000000ull) == 0); /* 3 GHz: every delta */
	CHECK(split_conversion_from(&s, 0, &c, UINT64_MAX) == 0);
	CHECK(s.pre_shift == 0 && s.post_shift > 0);
}

int main(void)
{
	RUN(fio_published_figures);
	RUN(ours_at_fio_rate);
	RUN(wtmlib_published_figures);
	RUN(ours_at_wtmlib_rate);
	RUN(within_one_ns_everywhere);
	RUN(slow_counter_range_is_stated);
	RUN(rejects_zero);
	RUN(slopes_match_exact_ratios);
	RUN(bad_slopes_are_refused);
	RUN(split_form_is_the_same_map);
	RUN(split_form_refuses_what_it_cannot_cover);
	return unit_finish();
}
