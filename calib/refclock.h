/* The kernel's clock as the calibration core reads it.
 *
 * Inside the shim, clock_gettime resolves to our own interposer; the shim points
 * refclock_gettime at the real function once it has found it, so the core never
 * measures the kernel's clock through itself. */
#ifndef CALIB_REFCLOCK_H
#define CALIB_REFCLOCK_H

#include <stdint.h>
#include <time.h>

extern int (*refclock_gettime)(clockid_t clock, struct timespec *ts);

static inline uint64_t timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static inline uint64_t refclock_now_ns(clockid_t clock)
{
	struct timespec ts;
	refclock_gettime(clock, &ts);
	return timespec_to_ns(&ts);
}

/* The boot's wall-clock time: REALTIME less BOOTTIME, constant through a boot but for
 * steps of the wall clock (calib/cache.h: CACHE_BOOT_WALL_SLACK_NS). */
static inline uint64_t refclock_boot_wall_ns(void)
{
	uint64_t boot = refclock_now_ns(CLOCK_BOOTTIME);
	uint64_t wall = refclock_now_ns(CLOCK_REALTIME);
	return wall - boot;
}

#endif
