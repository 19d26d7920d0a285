/* The real functions the shim stands in front of: the next definition after ours in the
 * program's search order (another preloaded library's, or libc's), what
 * dlsym(RTLD_NEXT) returns, without ever recursing into ourselves.
 *
 * dlsym never runs at a call, which may be in a signal handler (it takes the loader's
 * lock and may allocate), nor in the common case at all: the constructor only checks in
 * the loader's list that the C library holds the next definitions (shim/next_symbol.h),
 * touching no page the loader did not; each address is then read from the C library's
 * symbol table on its first need, which takes no lock, allocates nothing and may run
 * anywhere. Where the list cannot answer (a wrapper preloaded after the shim, the other
 * C library, LD_DYNAMIC_WEAK or LD_AUDIT set, the musl build), the constructor asks
 * dlsym for all of them. A call that arrives before the constructor ran (from another
 * library's constructor) reads the list itself, which the loader completed before any
 * constructor; where the list cannot answer then, or while dlsym is under way (dlsym may
 * allocate, and an allocator may read the clock), it finds NULL and takes the system
 * call: always correct, never recursive, no lock. */
#ifndef SHIM_REAL_H
#define SHIM_REAL_H

#include "raw_syscall.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <sys/time.h>

enum real_function { REAL_CLOCK_GETTIME, REAL_GETTIMEOFDAY, REAL_TIMESPEC_GET, REAL_FUNCTIONS };

typedef int clock_gettime_fn(clockid_t, struct timespec *);
typedef int gettimeofday_fn(struct timeval *, void *);
typedef int timespec_get_fn(struct timespec *, int);

/* NULL until found; then written once (or the same value again by a racing first need). */
extern void *_Atomic real_addresses[REAL_FUNCTIONS];

/* Called once, by the constructor: where the real functions will come from. */
void real_find_all(void);

/* For TSCSHIM_VERBOSE=2: true when dlsym found them, with *why it was asked. */
bool real_found_by_dlsym(const char **why);

/* The first read of an address from the C library's table, out of line. */
void *real_look_up(enum real_function f);

/* The real function once known, else NULL: one load. */
static inline void *real_if_known(enum real_function f)
{
	return atomic_load_explicit(&real_addresses[f], memory_order_acquire);
}

/* The real function, read on first need; NULL where the loader's list cannot answer
 * before the constructor ran, while dlsym is under way, or if there is none. */
static inline void *real_function(enum real_function f)
{
	void *address = real_if_known(f);
	return __builtin_expect(address != NULL, 1) ? address : real_look_up(f);
}

/* True when the constructor found the next definitions in the C library itself (glibc,
 * by the loader's list), whose clock_gettime only wraps the kernel's vDSO function:
 * a pass-through call may then call the vDSO itself (shim/interpose.c). */
bool real_is_c_library(void);

/* The real functions, or while one is not known what it would do: the system call,
 * with -1 and errno on failure (one fallback per entry point, here). */
MUST_CHECK int real_clock_gettime(clockid_t clock, struct timespec *ts);
MUST_CHECK int real_gettimeofday(struct timeval *tv, void *tz);
MUST_CHECK int real_timespec_get(struct timespec *ts, int base);

#endif
