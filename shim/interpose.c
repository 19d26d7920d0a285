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

/* The real function once looked up, else NULL. */
static inline void *real_if_known(struct real_symbol *sym)
{
	return atomic_load_explicit(&sym->address, memory_order_acquire);
}

/* The first lookup, out of line. */
static __attribute__((noinline)) void *look_up(struct real_symbol *sym)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&sym->state, &expected, 1))
		return atomic_load_explicit(&sym->address, memory_order_acquire);
	atomic_store_explicit(&sym->address, dlsym(RTLD_NEXT, sym->name), memory_order_release);
	atomic_store(&sym->state, 2);
	return atomic_load(&sym->address);
}

/* The real function, or NULL while its lookup is under way (possibly in this very thread:
 * dlsym may allocate, and an allocator may read the clock). One load once it is known. */
static inline void *real(struct real_symbol *sym)
{
	void *address = real_if_known(sym);
	return __builtin_expect(address != NULL, 1) ? address : look_up(sym);
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


/* Each entry point has the same shape: the common case inline, served (counted inline
 * when counting is on), and tail calls out of line for the others: *_pass calls the real
 * function (two loads and a tail call once it is known and nothing is counted;
 * *_pass_rare otherwise: the count, then the real function, itself one load once known),
 * *_slow finishes what the inline read could not (READ_SLOW, whose clock is in the
 * pending read). The plain pass needs no stack frame: pass-through, the default where the
 * counter does not pay, costs a jump and two loads more than the real function. */

static inline void count(unsigned slot, bool served)
{
	if (stats_enabled)
		stats_count(slot, served);
}

static __attribute__((noinline)) int clock_gettime_pass_rare(clockid_t clock, struct timespec *ts)
{
	count(stats_slot_of(clock), false);
	return real_clock_gettime(clock, ts);
}

static __attribute__((noinline)) int clock_gettime_pass(clockid_t clock, struct timespec *ts)
{
	clock_gettime_fn *fn = (clock_gettime_fn *)real_if_known(&real_cgt);
	if (__builtin_expect(fn != NULL && !stats_enabled, 1))
		return fn(clock, ts);
	return clock_gettime_pass_rare(clock, ts);
}

static __attribute__((noinline)) int clock_gettime_slow(struct timespec *ts, struct pending_read pending)
{
	if (clock_read_slow(pending.clock, ts, pending.t)) {
		count(pending.clock, true);
		return 0;
	}
	return clock_gettime_pass(clock_table[pending.clock].id, ts);
}

static inline __attribute__((always_inline)) int serve(clockid_t clock, struct timespec *ts)
{
	struct pending_read pending = {0, 0};
	enum read_result r = is_null(ts) ? READ_PASS : clock_read(clock, ts, &pending);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		count(stats_slot_of(clock), true);
		return 0;
	}
	if (r == READ_SLOW)
		return clock_gettime_slow(ts, pending);
	return clock_gettime_pass(clock, ts);
}

SHIM_EXPORT int clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

SHIM_EXPORT int __clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

static inline void timespec_to_timeval(const struct timespec *ts, struct timeval *tv)
{
	tv->tv_sec = ts->tv_sec;
	tv->tv_usec = ts->tv_nsec / 1000;
}

static __attribute__((noinline)) int gettimeofday_pass_rare(struct timeval *tv, void *tz)
{
	count(SERVED_REALTIME, false);
	gettimeofday_fn *fn = (gettimeofday_fn *)real(&real_gtod);
	if (fn)
		return fn(tv, tz);
	return (int)syscall(SYS_gettimeofday, tv, tz);
}

static __attribute__((noinline)) int gettimeofday_pass(struct timeval *tv, void *tz)
{
	gettimeofday_fn *fn = (gettimeofday_fn *)real_if_known(&real_gtod);
	if (__builtin_expect(fn != NULL && !stats_enabled, 1))
		return fn(tv, tz);
	return gettimeofday_pass_rare(tv, tz);
}

static __attribute__((noinline)) int gettimeofday_slow(struct timeval *tv, struct pending_read pending)
{
	struct timespec ts;
	if (clock_read_slow(pending.clock, &ts, pending.t)) {
		count(SERVED_REALTIME, true);
		timespec_to_timeval(&ts, tv);
		return 0;
	}
	return gettimeofday_pass(tv, NULL);
}

SHIM_EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;
	struct pending_read pending = {0, 0};
	/* A timezone request is obsolete but must still reach the real function. */
	enum read_result r = is_null(tv) || tz ? READ_PASS : clock_read(CLOCK_REALTIME, &ts, &pending);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		count(SERVED_REALTIME, true);
		timespec_to_timeval(&ts, tv);
		return 0;
	}
	if (r == READ_SLOW)
		return gettimeofday_slow(tv, pending);
	return gettimeofday_pass(tv, tz);
}

static __attribute__((noinline)) int timespec_get_pass_rare(struct timespec *ts, int base)
{
	count(SERVED_REALTIME, false);
	timespec_get_fn *fn = (timespec_get_fn *)real(&real_tsg);
	if (fn)
		return fn(ts, base);
	if (base != TIME_UTC || is_null(ts))
		return 0;
	return syscall_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

static __attribute__((noinline)) int timespec_get_pass(struct timespec *ts, int base)
{
	timespec_get_fn *fn = (timespec_get_fn *)real_if_known(&real_tsg);
	if (__builtin_expect(fn != NULL && !stats_enabled, 1))
		return fn(ts, base);
	return timespec_get_pass_rare(ts, base);
}

static __attribute__((noinline)) int timespec_get_slow(struct timespec *ts, struct pending_read pending)
{
	if (clock_read_slow(pending.clock, ts, pending.t)) {
		count(SERVED_REALTIME, true);
		return TIME_UTC;
	}
	return timespec_get_pass(ts, TIME_UTC);
}

SHIM_EXPORT int timespec_get(struct timespec *ts, int base)
{
	struct pending_read pending = {0, 0};
	enum read_result r = base != TIME_UTC || is_null(ts) ? READ_PASS
							     : clock_read(CLOCK_REALTIME, ts, &pending);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		count(SERVED_REALTIME, true);
		return base;
	}
	if (r == READ_SLOW)
		return timespec_get_slow(ts, pending);
	return timespec_get_pass(ts, base);
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
		static const char uncovered[] =
			"stopped serving: the process may now run on CPUs whose counters the verdict did not compare";
		_Static_assert(sizeof uncovered <= sizeof out->reason, "the reason fits");
		if (cc.stopped_uncovered)
			memcpy(out->reason, uncovered, sizeof uncovered);
		else
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
