/* `tscshim calib`'s cost section: what one call costs through the kernel's clock as this
 * process reads it (libc's clock_gettime: the vDSO, or whatever a preloaded library puts
 * in its place), the clock_gettime system call, and the counter path fenced and unfenced.
 *
 * The command is not preloaded, so the counter path here is the shim's arithmetic on the
 * counter (read, subtract, multiply-shift, split into a timespec) without its line's
 * loads: a nanosecond or two under what the shim's constructor measures for its gate.
 * Blocks of each are interleaved round by round, timed by CLOCK_MONOTONIC over the whole
 * block (long enough that its own cost does not matter), and each figure is a median. */
#define _GNU_SOURCE
#include "cli.h"
#include "floor.h"
#include "samples.h"

#include "benefit.h"
#include "kernel_clock.h"

#include <time.h>

enum { CALLS = 256, ROUNDS = 31 };

typedef int read_fn(clockid_t, struct timespec *);

/* The floor, with the signature of clock_gettime so that every path is timed alike. */
static __attribute__((noinline)) int path_fenced(clockid_t clock, struct timespec *ts)
{
	(void)clock;
	return floor_read(ts, true);
}

static __attribute__((noinline)) int path_unfenced(clockid_t clock, struct timespec *ts)
{
	(void)clock;
	return floor_read(ts, false);
}

/* Out of line as the others, so that the system call costs a call too. */
static __attribute__((noinline)) int path_system_call(clockid_t clock, struct timespec *ts)
{
	return kernel_clock_gettime(clock, ts);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double block_ns(read_fn *fn)
{
	struct timespec ts;
	double before = now_ns();
	for (int i = 0; i < CALLS; i++)
		fn(CLOCK_MONOTONIC, &ts);
	return (now_ns() - before) / CALLS;
}

static double median(double *v)
{
	samples_sort(v, ROUNDS);
	return samples_median(v, ROUNDS);
}

void calib_measure_cost(uint64_t rate_millihz, struct cost *out)
{
	static double kernel[ROUNDS], sys[ROUNDS], fenced[ROUNDS], unfenced[ROUNDS];
	floor_setup(rate_millihz);
	for (int r = -1; r < ROUNDS; r++) { /* round -1 warms up, uncounted */
		double k = block_ns(clock_gettime), s = block_ns(path_system_call);
		double f = block_ns(path_fenced), u = block_ns(path_unfenced);
		if (r < 0)
			continue;
		kernel[r] = k, sys[r] = s, fenced[r] = f, unfenced[r] = u;
	}
	out->kernel_ns = median(kernel);
	out->syscall_ns = median(sys);
	out->fenced_ns = median(fenced);
	out->unfenced_ns = median(unfenced);
}
