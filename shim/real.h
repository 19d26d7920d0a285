/* The real functions the shim stands in front of: the next definition after ours in the
 * program's search order (another preloaded library's, or libc's), found with
 * dlsym(RTLD_NEXT) without ever recursing into ourselves.
 *
 * clock_gettime's is looked up at load (the writer and the decision read the kernel's
 * clock through it); the others on their first pass-through call, since each look-up
 * costs start-up time and most programs never need them. A call that arrives while its
 * look-up is under way (dlsym may allocate, and an allocator may read the clock) is
 * answered by the system call: always correct, never recursive, no lock. */
#ifndef SHIM_REAL_H
#define SHIM_REAL_H

#include <stdatomic.h>
#include <time.h>
#include <sys/time.h>

enum real_function { REAL_CLOCK_GETTIME, REAL_GETTIMEOFDAY, REAL_TIMESPEC_GET, REAL_FUNCTIONS };

typedef int clock_gettime_fn(clockid_t, struct timespec *);
typedef int gettimeofday_fn(struct timeval *, void *);
typedef int timespec_get_fn(struct timespec *, int);

struct real_symbol {
	void *_Atomic address; /* NULL until looked up (or while the look-up is under way) */
	_Atomic int state;     /* 0 not looked up, 1 look-up under way, 2 done */
};
extern struct real_symbol real_symbols[REAL_FUNCTIONS];

/* The first look-up, out of line; NULL while another is under way (maybe in this very
 * thread) or when there is no next definition. */
void *real_look_up(enum real_function f);

/* The real function once looked up, else NULL: one load. */
static inline void *real_if_known(enum real_function f)
{
	return atomic_load_explicit(&real_symbols[f].address, memory_order_acquire);
}

/* The real function, looking it up on first need; NULL only while its look-up is under
 * way or if there is none. */
static inline void *real_function(enum real_function f)
{
	void *address = real_if_known(f);
	return __builtin_expect(address != NULL, 1) ? address : real_look_up(f);
}

/* The real clock_gettime, or the system call while it is not known. */
int real_clock_gettime(clockid_t clock, struct timespec *ts);

#endif
