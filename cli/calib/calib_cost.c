/* `tscshim calib`'s cost section: what one call costs through the kernel's clock as this
 * process reads it (libc's clock_gettime: the vDSO, or whatever a preloaded library puts
 * in its place), the clock_gettime system call, and the floor fenced and unfenced.
 *
 * The command is not preloaded, so the counter path here is the floor (floor.h): the
 * shim's read less its line, with the fenced plan the shim's own measurement kept. It is
 * timed as the shim's benefit gate times the shim's path (shim/cost.c), so that the two
 * figures calib prints side by side differ by the line alone: blocks of CALLS calls
 * through a function pointer, between two ordered counter reads, the timer's own cost
 * (an empty block) taken off, blocks of each kind interleaved round by round, and each
 * figure the median of its rounds. */
#define _GNU_SOURCE
#include "cli.h"
#include "samples.h"
#include "floor.h"

#include "benefit.h"
#include "convert.h"
#include "counter.h"
#include "kernel_clock.h"

#include <time.h>

enum {
	CALLS = 32,        /* per block, as the shim's gate */
	SYSCALL_CALLS = 4, /* the system call costs ~10x more */
	ROUNDS = 31,       /* more than the gate's 7: calib has the time */
};

typedef int read_fn(clockid_t, struct timespec *);

/* Out of line, so that the system call costs a call as the others do. */
static __attribute__((noinline)) int system_call(clockid_t clock, struct timespec *ts)
{
	return kernel_clock_gettime(clock, ts);
}

/* Ticks for n calls, the timer's two ordered reads included. */
static uint64_t block(read_fn *fn, int n)
{
	struct timespec ts;
	uint64_t before = counter_read_ordered();
	for (int i = 0; i < n; i++)
		fn(CLOCK_MONOTONIC, &ts);
	uint64_t after = counter_read_ordered();
	return after > before ? after - before : 0;
}



/* ns per call of the median block, the timer's median cost taken off. */
static double per_call_ns(uint64_t *ticks, uint64_t timer, int n, long double ns_per_tick)
{
	uint64_t m = samples_median_ticks(ticks, ROUNDS);
	return (double)((long double)(m > timer ? m - timer : 0) * ns_per_tick / n);
}

int calib_measure_cost(uint64_t rate_millihz, int shim_fenced_plan, struct cost *out)
{
	static uint64_t empty[ROUNDS], kernel[ROUNDS], sys[ROUNDS], fenced[ROUNDS], unfenced[ROUNDS];
	floor_setup(rate_millihz);
	int plan = floor_plan_for(true, shim_fenced_plan);
	floor_fn *fenced_read = floor_reader(plan), *unfenced_read = floor_reader(floor_plan_for(false, FLOOR_NO_PLAN));
	for (int r = -1; r < ROUNDS; r++) { /* round -1 warms up, uncounted */
		uint64_t e = floor_block(fenced_read, 0), k = block(clock_gettime, CALLS);
		uint64_t s = block(system_call, SYSCALL_CALLS);
		uint64_t f = floor_block(fenced_read, CALLS), u = floor_block(unfenced_read, CALLS);
		if (r < 0)
			continue;
		empty[r] = e, kernel[r] = k, sys[r] = s, fenced[r] = f, unfenced[r] = u;
	}
	long double ns_per_tick = ns_per_tick_at(rate_millihz);
	uint64_t timer = samples_median_ticks(empty, ROUNDS);
	out->kernel_ns = per_call_ns(kernel, timer, CALLS, ns_per_tick);
	out->syscall_ns = per_call_ns(sys, timer, SYSCALL_CALLS, ns_per_tick);
	out->fenced_ns = per_call_ns(fenced, timer, CALLS, ns_per_tick);
	out->unfenced_ns = per_call_ns(unfenced, timer, CALLS, ns_per_tick);
	return plan;
}
