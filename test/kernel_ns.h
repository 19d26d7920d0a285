/* For programs run under the shim: the kernel's clock in ns through the system call, which
 * no preload reaches, as the reference they check the shim against (kernel_ns). Named apart
 * from calib/kernel_clock.h, the library's own wrapper, which -Icalib also finds. */
#ifndef TEST_KERNEL_NS_H
#define TEST_KERNEL_NS_H

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static inline int64_t kernel_ns(clockid_t c)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, c, &ts);
	return ns_of(&ts);
}

#endif
