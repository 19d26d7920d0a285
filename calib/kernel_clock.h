/* The kernel's clock through the clock_gettime system call: the one wrapper the project
 * uses wherever a read must reach the kernel itself, never an interposer (ours or
 * another preloaded library's) nor the vDSO. Async-signal-safe; errno is not touched. */
#ifndef CALIB_KERNEL_CLOCK_H
#define CALIB_KERNEL_CLOCK_H

#include "raw_syscall.h"

#include <stdint.h>
#include <time.h>

/* 0, or -errno. */
MUST_CHECK static inline int kernel_clock_gettime(clockid_t clock, struct timespec *ts)
{
	return (int)raw_syscall4(SYS_clock_gettime, clock, (long)ts, 0, 0);
}

/* CLOCK_* in nanoseconds, 0 if the clock cannot be read. */
MUST_CHECK static inline uint64_t kernel_clock_ns(clockid_t clock)
{
	struct timespec ts;
	if (kernel_clock_gettime(clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
