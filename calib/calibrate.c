/* The counter's rate against CLOCK_MONOTONIC (calib/calibrate.h): sampling and the fit. */
#include "calibrate.h"

#include "counter.h"
#include "refclock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	SAMPLE_COUNT = 2048,
	TRIES_PER_SAMPLE = 4,
	MIN_SAMPLES = 8,
	/* A bracket up to twice the narrowest (plus a little for tiny brackets) is normal
	 * jitter; wider ones had something in between. */
	WIDTH_SLACK_TICKS = 32,
};
#define RESIDUAL_SIGMAS 4.0L

struct fit {
	long double slope, intercept, slope_stderr, residual_sigma;
	size_t n;
};

/* Least squares over the samples keep[] marks, centred to keep the sums small. */
static int fit_line(const struct rate_sample *s, size_t n, const bool *keep, struct fit *f)
{
	long double mx = 0, my = 0;
	size_t used = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i]) {
			mx += (long double)(s[i].ref_ns - s[0].ref_ns);
			my += (long double)(s[i].counter - s[0].counter);
			used++;
		}
	if (used < MIN_SAMPLES)
		return -1;
	mx /= used;
	my /= used;
	long double sxx = 0, sxy = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i]) {
			long double dx = (long double)(s[i].ref_ns - s[0].ref_ns) - mx;
			long double dy = (long double)(s[i].counter - s[0].counter) - my;
			sxx += dx * dx;
			sxy += dx * dy;
		}
	if (sxx <= 0)
		return -1;
	f->slope = sxy / sxx;
	f->intercept = my - f->slope * mx;
	long double sse = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i]) {
			long double r = (long double)(s[i].counter - s[0].counter) -
					(f->intercept + f->slope * (long double)(s[i].ref_ns - s[0].ref_ns));
			sse += r * r;
		}
	f->residual_sigma = __builtin_sqrtl(sse / (long double)(used - 2));
	f->slope_stderr = f->residual_sigma / __builtin_sqrtl(sxx);
	f->n = used;
	return 0;
}

int rate_fit(const struct rate_sample *s, size_t n, struct rate_estimate *out)
{
	memset(out, 0, sizeof *out);
	out->samples = (uint32_t)n;
	if (n < MIN_SAMPLES || s[n - 1].ref_ns <= s[0].ref_ns)
		return -1;

	bool *keep = malloc(n);
	if (!keep)
		return -1;
	uint64_t narrowest = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (s[i].width < narrowest)
			narrowest = s[i].width;
	for (size_t i = 0; i < n; i++)
		keep[i] = s[i].width <= 2 * narrowest + WIDTH_SLACK_TICKS;

	struct fit f;
	int rc = fit_line(s, n, keep, &f);
	if (rc == 0 && f.residual_sigma > 0) {
		for (size_t i = 0; i < n; i++) {
			long double r = (long double)(s[i].counter - s[0].counter) -
					(f.intercept + f.slope * (long double)(s[i].ref_ns - s[0].ref_ns));
			if (keep[i] && (r < 0 ? -r : r) > RESIDUAL_SIGMAS * f.residual_sigma)
				keep[i] = false;
		}
		rc = fit_line(s, n, keep, &f);
	}
	free(keep);
	if (rc != 0 || f.slope <= 0)
		return -1;

	out->rate_millihz = (uint64_t)(f.slope * 1e12L + 0.5L);
	out->precision_ppm = (double)(3 * f.slope_stderr / f.slope * 1e6L);
	out->used = (uint32_t)f.n;
	out->narrowest_ticks = narrowest;
	return 0;
}

static struct rate_sample take_sample(void)
{
	struct rate_sample best = {.width = UINT64_MAX};
	for (int i = 0; i < TRIES_PER_SAMPLE; i++) {
		uint64_t ref = 0;
		uint64_t before = counter_read_ordered();
		bool read = refclock_read_ns(CLOCK_MONOTONIC, &ref);
		uint64_t after = counter_read_ordered();
		/* A failed read is no sample: its timespec is whatever the call left. */
		if (read && after >= before && after - before < best.width)
			best = (struct rate_sample){
				.counter = before + (after - before) / 2,
				.width = after - before,
				.ref_ns = ref,
			};
	}
	return best;
}

static void wait_until(uint64_t target_ns)
{
	uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
	/* Sleep through long gaps (the command's 1 s mode); spin the last stretch so the
	 * sample is not taken by a thread still waking up. */
	if (target_ns > now + 300000) {
		uint64_t nap = target_ns - now - 200000;
		struct timespec ts = {.tv_sec = (time_t)(nap / 1000000000u),
				      .tv_nsec = (long)(nap % 1000000000u)};
		nanosleep(&ts, NULL);
	}
	while (refclock_now_ns(CLOCK_MONOTONIC) < target_ns)
		cpu_relax();
}

int calibrate_rate(uint64_t duration_ns, struct rate_estimate *out, char *err, size_t err_size)
{
	struct rate_sample *samples = malloc(sizeof *samples * SAMPLE_COUNT);
	if (!samples) {
		snprintf(err, err_size, "calibration: out of memory");
		return -1;
	}
	uint64_t start = refclock_now_ns(CLOCK_MONOTONIC);
	uint64_t step = duration_ns / (SAMPLE_COUNT - 1);
	size_t n = 0;
	for (size_t i = 0; i < SAMPLE_COUNT; i++) {
		wait_until(start + i * step);
		struct rate_sample s = take_sample();
		if (s.width != UINT64_MAX)
			samples[n++] = s;
	}
	int rc = rate_fit(samples, n, out);
	free(samples);
	out->elapsed_ns = refclock_now_ns(CLOCK_MONOTONIC) - start;
	if (rc != 0)
		snprintf(err, err_size, "calibration: too few usable samples (%zu) in %llu us", n,
			 (unsigned long long)(duration_ns / 1000));
	return rc;
}
