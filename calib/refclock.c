#include "refclock.h"

#include <sys/syscall.h>
#include <unistd.h>

/* The system call, not the vDSO: always correct, and never our own interposer. */
static int syscall_clock_gettime(clockid_t clock, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, clock, ts);
}

int (*refclock_gettime)(clockid_t clock, struct timespec *ts) = syscall_clock_gettime;
