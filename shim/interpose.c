/* The exported entry points. Each serves its clock from the counter when the gate is
 * open, and otherwise calls the real function with its return value and errno untouched.
 *
 * Calls that arrive before our constructor ran, or re-entrantly while the real symbol is
 * being looked up (dlsym may allocate, and an allocator may read the clock), are answered
 * by the clock_gettime system call: always correct, never recursive, no lock. */
#define _GNU_SOURCE
#include "shim.h"
#include "line.h"

#include "refclock.h"
#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);
typedef int gettimeofday_fn(struct timeval *, void *);
typedef int timespec_get_fn(struct timespec *, int);

/* Each real function is looked up on first need: at load only clock_gettime is (the
 * others serve pass-through calls, and each lookup costs ~10 us at start-up). */
struct real_symbol {
	const char *name;
	void *_Atomic address;
	_Atomic int state; /* 0 not looked up, 1 lookup under way, 2 done */
};

static struct real_symbol real_cgt = {.name = "clock_gettime"};
static struct real_symbol real_gtod = {.name = "gettimeofday"};
static struct real_symbol real_tsg = {.name = "timespec_get"};

/* The real function, or NULL while its lookup is under way (possibly in this very thread:
 * dlsym may allocate, and an allocator may read the clock). */
static void *real(struct real_symbol *sym)
{
	void *address = atomic_load_explicit(&sym->address, memory_order_acquire);
	if (__builtin_expect(address != NULL, 1))
		return address;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&sym->state, &expected, 1))
		return atomic_load_explicit(&sym->address, memory_order_acquire);
	atomic_store_explicit(&sym->address, dlsym(RTLD_NEXT, sym->name), memory_order_release);
	atomic_store(&sym->state, 2);
	return atomic_load(&sym->address);
}

/* glibc declares these pointers nonnull, so the compiler would drop a NULL check; a
 * caller may still pass NULL, and must get what the real function does with it. */
static inline bool is_null(const void *p)
{
	__asm__("" : "+r"(p));
	return p == NULL;
}

static int syscall_clock_gettime(clockid_t clock, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, clock, ts);
}

int real_clock_gettime(clockid_t clock, struct timespec *ts)
{
	clock_gettime_fn *fn = (clock_gettime_fn *)real(&real_cgt);
	if (__builtin_expect(!fn, 0))
		return syscall_clock_gettime(clock, ts);
	return fn(clock, ts);
}

static enum stat_clock stat_of(clockid_t clock)
{
	switch (clock) {
	case CLOCK_MONOTONIC: return STAT_MONOTONIC;
	case CLOCK_MONOTONIC_RAW: return STAT_MONOTONIC_RAW;
	case CLOCK_BOOTTIME: return STAT_BOOTTIME;
	case CLOCK_REALTIME: return STAT_REALTIME;
	default: return STAT_OTHER;
	}
}

static int serve(clockid_t clock, struct timespec *ts)
{
	if (__builtin_expect(!is_null(ts), 1) && clock_read(clock, ts)) {
		if (stats_enabled)
			stats_count(stat_of(clock), true);
		return 0;
	}
	if (stats_enabled)
		stats_count(stat_of(clock), false);
	return real_clock_gettime(clock, ts);
}

SHIM_EXPORT int clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

SHIM_EXPORT int __clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

SHIM_EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;
	/* A timezone request is obsolete but must still reach the real function. */
	if (!is_null(tv) && !tz && clock_read(CLOCK_REALTIME, &ts)) {
		if (stats_enabled)
			stats_count(STAT_REALTIME, true);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
		return 0;
	}
	if (stats_enabled)
		stats_count(STAT_REALTIME, false);
	gettimeofday_fn *fn = (gettimeofday_fn *)real(&real_gtod);
	if (fn)
		return fn(tv, tz);
	return (int)syscall(SYS_gettimeofday, tv, tz);
}

SHIM_EXPORT int timespec_get(struct timespec *ts, int base)
{
	if (base == TIME_UTC && !is_null(ts) && clock_read(CLOCK_REALTIME, ts)) {
		if (stats_enabled)
			stats_count(STAT_REALTIME, true);
		return base;
	}
	if (stats_enabled)
		stats_count(STAT_REALTIME, false);
	timespec_get_fn *fn = (timespec_get_fn *)real(&real_tsg);
	if (fn)
		return fn(ts, base);
	if (base != TIME_UTC || is_null(ts))
		return 0;
	return syscall_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

SHIM_EXPORT int tscshim_status(struct tscshim_status *out)
{
	struct clock_counters cc;
	clock_counters(&cc);
	memset(out, 0, sizeof *out);
	out->active = cc.active;
	if (gate.active && !cc.active) {
		static const char stopped[] =
			"the watchdog stopped serving: the counter and the kernel's clock disagreed";
		memcpy(out->reason, stopped, sizeof stopped);
	} else {
		memcpy(out->reason, gate.reason, sizeof out->reason);
		out->reason[sizeof out->reason - 1] = '\0';
	}
	out->rate_millihz = gate.rate_millihz;
	out->max_shift_ns = gate.max_shift_ns;
	out->mult = cc.mult;
	out->shift = cc.shift;
	out->served_clocks = gate.served;
	out->fenced = gate.fenced;
	out->from_cache = gate.from_cache;
	out->resyncs = cc.resyncs;
	out->fallbacks = cc.fallbacks + cc.reanchors;
	out->stats_write_failures = stats_write_failures();
	return 0;
}

/* Early, so that other libraries' constructors that run after ours find the TSC path. */
__attribute__((constructor(101))) static void shim_load(void)
{
	int saved = errno;
	real(&real_cgt);
	refclock_gettime = real_clock_gettime;
	gate_run();
	errno = saved;
}
