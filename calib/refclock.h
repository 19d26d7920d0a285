/* The kernel's clock as the calibration core reads it, checked.
 *
 * Inside the shim, clock_gettime resolves to our own interposer; the shim points
 * refclock_gettime at the real function once it has found it, so the core never
 * measures the kernel's clock through itself.
 *
 * Nothing unchecked becomes time: a call that failed leaves its timespec as it was
 * (whatever was on the stack), and a second interposer or a broken kernel may return
 * one that is not a time at all. Every read here says whether it got a time, and the
 * compiler holds every caller to looking (warn_unused_result, with -Werror). */
#ifndef CALIB_REFCLOCK_H
#define CALIB_REFCLOCK_H

#include "kernel_clock.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

extern int (*refclock_gettime)(clockid_t clock, struct timespec *ts);

static inline uint64_t timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Whether a timespec holds a time the shim can serve: 0 <= tv_nsec < 1e9, and a second
 * count whose nanoseconds fit in 63 bits (until 2262). */
static inline bool timespec_is_time(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000 && ts->tv_sec >= 0 &&
	       (uint64_t)ts->tv_sec < (uint64_t)INT64_MAX / 1000000000u;
}

/* One read of clock in ns: true with *ns set when the call returned 0 with a time;
 * false otherwise, *ns untouched. */
MUST_CHECK static inline bool refclock_read_ns(clockid_t clock, uint64_t *ns)
{
	struct timespec ts;
	if (refclock_gettime(clock, &ts) != 0 || !timespec_is_time(&ts))
		return false;
	*ns = timespec_to_ns(&ts);
	return true;
}

/* For deadlines and elapsed times only, never a value served or kept as time: the clock
 * in ns, retried past a few failed calls, then read by the system call itself (which no
 * interposer stands in front of); REFCLOCK_NONE where even that fails (a seccomp filter
 * that refuses it): every deadline computed from it has passed (it wraps), every wait
 * ends, an elapsed time from it is 0. */
#define REFCLOCK_NONE UINT64_MAX
MUST_CHECK static inline uint64_t refclock_now_ns(clockid_t clock)
{
	uint64_t ns;
	for (int i = 0; i < 4; i++)
		if (refclock_read_ns(clock, &ns))
			return ns;
	struct timespec ts;
	if (kernel_clock_gettime(clock, &ts) == 0 && timespec_is_time(&ts))
		return timespec_to_ns(&ts);
	return REFCLOCK_NONE;
}

/* The boot's wall-clock time: REALTIME less BOOTTIME, constant through a boot but for
 * steps of the wall clock (calib/cache.h: CACHE_BOOT_WALL_SLACK_NS); 0 when either clock
 * could not be read (no record's time agrees with 0: the boot is then told otherwise). */
MUST_CHECK static inline uint64_t refclock_boot_wall_ns(void)
{
	uint64_t boot, wall;
	if (!refclock_read_ns(CLOCK_BOOTTIME, &boot) || !refclock_read_ns(CLOCK_REALTIME, &wall) || wall < boot)
		return 0;
	return wall - boot;
}

#endif
