/* The rate fit over synthetic bracketed samples: recovers the rate, rejects outliers,
 * and states a precision that covers its own error. */
#include "calibrate.h"
#include "unit.h"

#include <math.h>

#define N 2048
static struct rate_sample samples[N];

static uint64_t rng_state = 12345;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Counter at rate_hz; the kernel read lands anywhere in a bracket of 40..70 ticks. */
static void make(double rate_hz, uint64_t span_ns, size_t n, int outliers)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ns = 5000000000ull + i * (span_ns / (n - 1));
		uint64_t width = 40 + rng() % 30;
		double truth = 1e12 + (double)ns * rate_hz / 1e9;
		uint64_t before = (uint64_t)truth - rng() % width;
		samples[i] = (struct rate_sample){.counter = before + width / 2, .width = width, .ref_ns = ns};
	}
	for (int k = 0; k < outliers; k++) {
		size_t i = rng() % n;
		samples[i].width = 50000; /* preempted between the reads */
		samples[i].counter += 25000;
	}
}

static double ppm_error(uint64_t millihz, double rate_hz)
{
	return fabs((double)millihz / 1000.0 - rate_hz) / rate_hz * 1e6;
}

static void recovers_rate_over_one_second(void)
{
	struct rate_estimate e;
	make(2096008123.456, 1000000000ull, N, 0);
	CHECK(rate_fit(samples, N, &e) == 0);
	CHECK(ppm_error(e.rate_millihz, 2096008123.456) <= e.precision_ppm);
	CHECK(e.precision_ppm < 0.05);
	CHECK(e.used == N);
}

static void recovers_rate_over_two_ms(void)
{
	struct rate_estimate e;
	make(3000000000.0, 2000000ull, N, 0);
	CHECK(rate_fit(samples, N, &e) == 0);
	CHECK(ppm_error(e.rate_millihz, 3000000000.0) <= e.precision_ppm);
	CHECK(e.precision_ppm < 5);
}

static void rejects_wide_brackets(void)
{
	struct rate_estimate e;
	make(2500000000.0, 1000000000ull, N, 100);
	CHECK(rate_fit(samples, N, &e) == 0);
	CHECK(e.used <= N - 90);
	CHECK(ppm_error(e.rate_millihz, 2500000000.0) <= e.precision_ppm);
}

static void too_few_samples_fail(void)
{
	struct rate_estimate e;
	make(2500000000.0, 1000000ull, 5, 0);
	CHECK(rate_fit(samples, 5, &e) == -1);
}

static void no_elapsed_time_fails(void)
{
	struct rate_estimate e;
	make(2500000000.0, 1000000ull, 20, 0);
	for (size_t i = 0; i < 20; i++)
		samples[i].ref_ns = 42;
	CHECK(rate_fit(samples, 20, &e) == -1);
}

int main(void)
{
	RUN(recovers_rate_over_one_second);
	RUN(recovers_rate_over_two_ms);
	RUN(rejects_wide_brackets);
	RUN(too_few_samples_fail);
	RUN(no_elapsed_time_fails);
	return unit_finish();
}
