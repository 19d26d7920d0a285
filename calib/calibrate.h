/* The counter's rate against CLOCK_MONOTONIC (the clock the shim must follow).
 *
 * Each sample brackets one kernel read between two ordered counter reads and keeps the
 * narrowest of a few tries; samples are spread evenly over the window. rate_fit() (pure)
 * drops samples whose bracket is much wider than the narrowest (an interrupt or a
 * preemption between the reads), fits counter = a + rate * time by least squares,
 * rejects residuals beyond 4 sigma, refits, and states the rate's precision as three
 * standard errors of the slope. */
#ifndef CALIB_CALIBRATE_H
#define CALIB_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

struct rate_sample {
	uint64_t counter;  /* midpoint of the bracket */
	uint64_t width;    /* bracket width, ticks */
	uint64_t ref_ns;   /* the kernel's reading */
};

struct rate_estimate {
	uint64_t rate_millihz;  /* ticks per second x 1000 */
	double precision_ppm;   /* 3 standard errors of the fitted rate */
	uint64_t elapsed_ns;    /* time the calibration took */
	uint32_t samples, used; /* taken, and kept by the filters */
	uint64_t narrowest_ticks;
};

/* Pure. Returns 0, or -1 when fewer than 8 usable samples or no time elapsed. */
int rate_fit(const struct rate_sample *samples, size_t n, struct rate_estimate *out);

/* Samples for duration_ns and fits. Returns 0, or -1 with err. */
int calibrate_rate(uint64_t duration_ns, struct rate_estimate *out, char *err, size_t err_size);

#endif
