/* System calls without libc's wrappers, for code on the load path (load_page.h): a libc
 * function the program itself never calls is one more page of libc's text to touch, in
 * every process. The result is the kernel's: a value >= 0, or -errno; errno is never
 * written (the callers are async-signal-safe code and a constructor that must leave it
 * as it found it).
 *
 * x86-64 issues the syscall instruction here (rcx and r11 are clobbered by it); any other
 * architecture goes through libc's syscall(), translating its -1/errno back. */
#ifndef CALIB_RAW_SYSCALL_H
#define CALIB_RAW_SYSCALL_H

#include "steps.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A result the caller must look at: a system call's, a clock read's. With -Werror an
 * ignored one fails the build; where a result truly changes nothing, the caller says so
 * by testing it (a (void) cast does not silence GCC). */
#define MUST_CHECK __attribute__((warn_unused_result))

MUST_CHECK static inline long raw_syscall4(long number, long a, long b, long c, long d)
{
#ifdef TSCTEST_STEPS_BUILD
	steps_syscall_begin(number);
#endif
#if defined(__x86_64__)
	long result;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall"
			 : "=a"(result)
			 : "0"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
#ifdef TSCTEST_STEPS_BUILD
	steps_syscall_end(number);
#endif
	return result;
#else
	int saved = errno;
	long result = syscall(number, a, b, c, d);
#ifdef TSCTEST_STEPS_BUILD
	steps_syscall_end(number);
#endif
	if (result == -1) {
		result = -errno;
		errno = saved;
	}
	return result;
#endif
}

/* stat(2) of a path: 0, or -errno. On x86-64 the kernel's struct stat is libc's. */
MUST_CHECK static inline int raw_stat(const char *path, struct stat *st)
{
#if defined(__x86_64__)
	return (int)raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)st, 0);
#else
	int saved = errno;
	int rc = stat(path, st) == 0 ? 0 : -errno;
	errno = saved;
	return rc;
#endif
}

#endif
