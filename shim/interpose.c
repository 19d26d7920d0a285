/* The exported entry points, and the constructor. Each entry point serves its clock from
 * the counter when the gate opened the path, and otherwise calls the real function with
 * its return value and errno untouched.
 *
 * Each has the same shape: the common case inline, served (counted inline when counting
 * is on), and tail calls out of line for the others: *_pass calls the real function (two
 * loads and a tail call once the decision is made and nothing is counted; *_pass_rare
 * otherwise), *_slow finishes what the inline read could not (READ_SLOW). The plain pass
 * needs no stack frame: pass-through, the default where the counter does not pay, costs
 * a jump and two loads more than the real function.
 *
 * The decision is made at the first read of a served clock, not at load: until then
 * every call takes *_pass_rare (pass_direct is false), which asks the gate to decide and,
 * once it has, dispatches the call again. A program that never reads such a clock never
 * decides. */
#define _GNU_SOURCE
#include "clock.h"
#include "load_page.h"
#include "export.h"
#include "gate.h"
#include "line.h"
#include "real.h"
#include "stats.h"

#include "refclock.h"
#include "kernel_clock.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/* True once the decision is made and nothing is counted: a pass-through call may go
 * straight to the real function. Written once, by the first thread that sees the
 * decision made; read relaxed (a stale false only sends a call the long way). */
static bool pass_direct ON_LOAD_PAGE;

/* glibc declares these pointers nonnull, so the compiler would drop a NULL check; a
 * caller may still pass NULL, and must get what the real function does with it. */
static inline bool is_null(const void *p)
{
	__asm__("" : "+r"(p));
	return p == NULL;
}

static inline void count_call(unsigned slot, bool served)
{
	if (stats_enabled)
		stats_count(slot, served);
}

/* True when this call made the decision (or saw it just made): dispatch it again, now
 * that the path may be open. False when the decision was made before (no second
 * dispatch, so never a loop), is under way elsewhere, or this read does not decide. */
static bool decided_by_this_read(clockid_t clock)
{
	if (gate_decided() || !gate_first_read(clock, false))
		return false;
	__atomic_store_n(&pass_direct, !stats_enabled, __ATOMIC_RELAXED);
	return true;
}

/* ---- clock_gettime ---- */

static int serve_clock_gettime(clockid_t clock, struct timespec *ts);

static __attribute__((noinline)) int clock_gettime_pass_rare(clockid_t clock, struct timespec *ts)
{
	if (!is_null(ts) && decided_by_this_read(clock))
		return serve_clock_gettime(clock, ts);
	count_call(served_clock_slot(clock), false);
	return real_clock_gettime(clock, ts);
}

static __attribute__((noinline)) int clock_gettime_pass(clockid_t clock, struct timespec *ts)
{
	clock_gettime_fn *fn = (clock_gettime_fn *)real_if_known(REAL_CLOCK_GETTIME);
	if (__builtin_expect(fn != NULL && __atomic_load_n(&pass_direct, __ATOMIC_RELAXED), 1))
		return fn(clock, ts);
	return clock_gettime_pass_rare(clock, ts);
}

static __attribute__((noinline)) int clock_gettime_slow(struct timespec *ts, struct pending_read pending)
{
	if (clock_read_slow(pending.clock, ts, pending.t)) {
		count_call(pending.clock, true);
		return 0;
	}
	return clock_gettime_pass(clock_table[pending.clock].id, ts);
}

static inline __attribute__((always_inline)) int serve(clockid_t clock, struct timespec *ts)
{
	struct pending_read pending = {0, 0};
	enum read_result r = is_null(ts) ? READ_PASS : clock_read(clock, ts, &pending);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		count_call(served_clock_slot(clock), true);
		return 0;
	}
	if (r == READ_SLOW)
		return clock_gettime_slow(ts, pending);
	return clock_gettime_pass(clock, ts);
}

static __attribute__((noinline)) int serve_clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

SHIM_EXPORT int clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

SHIM_EXPORT int __clock_gettime(clockid_t clock, struct timespec *ts)
{
	return serve(clock, ts);
}

/* ---- gettimeofday ---- */

static inline void timespec_to_timeval(const struct timespec *ts, struct timeval *tv)
{
	tv->tv_sec = ts->tv_sec;
	tv->tv_usec = ts->tv_nsec / 1000;
}

static __attribute__((noinline)) int gettimeofday_pass_rare(struct timeval *tv, void *tz)
{
	/* A timezone request is obsolete but must still reach the real function. */
	if (!is_null(tv) && !tz && decided_by_this_read(CLOCK_REALTIME))
		return gettimeofday(tv, tz);
	count_call(SERVED_REALTIME, false);
	gettimeofday_fn *fn = (gettimeofday_fn *)real_function(REAL_GETTIMEOFDAY);
	if (fn)
		return fn(tv, tz);
	long rc = raw_syscall4(SYS_gettimeofday, (long)tv, (long)tz, 0, 0);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return 0;
}

static __attribute__((noinline)) int gettimeofday_pass(struct timeval *tv, void *tz)
{
	gettimeofday_fn *fn = (gettimeofday_fn *)real_if_known(REAL_GETTIMEOFDAY);
	if (__builtin_expect(fn != NULL && __atomic_load_n(&pass_direct, __ATOMIC_RELAXED), 1))
		return fn(tv, tz);
	return gettimeofday_pass_rare(tv, tz);
}

static __attribute__((noinline)) int gettimeofday_slow(struct timeval *tv, struct pending_read pending)
{
	struct timespec ts;
	if (clock_read_slow(pending.clock, &ts, pending.t)) {
		count_call(SERVED_REALTIME, true);
		timespec_to_timeval(&ts, tv);
		return 0;
	}
	return gettimeofday_pass(tv, NULL);
}

SHIM_EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;
	struct pending_read pending = {0, 0};
	enum read_result r = is_null(tv) || tz ? READ_PASS : clock_read(CLOCK_REALTIME, &ts, &pending);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		count_call(SERVED_REALTIME, true);
		timespec_to_timeval(&ts, tv);
		return 0;
	}
	if (r == READ_SLOW)
		return gettimeofday_slow(tv, pending);
	return gettimeofday_pass(tv, tz);
}

/* ---- timespec_get ---- */

static __attribute__((noinline)) int timespec_get_pass_rare(struct timespec *ts, int base)
{
	if (base == TIME_UTC && !is_null(ts) && decided_by_this_read(CLOCK_REALTIME))
		return timespec_get(ts, base);
	count_call(SERVED_REALTIME, false);
	timespec_get_fn *fn = (timespec_get_fn *)real_function(REAL_TIMESPEC_GET);
	if (fn)
		return fn(ts, base);
	if (base != TIME_UTC || is_null(ts))
		return 0;
	return kernel_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

static __attribute__((noinline)) int timespec_get_pass(struct timespec *ts, int base)
{
	timespec_get_fn *fn = (timespec_get_fn *)real_if_known(REAL_TIMESPEC_GET);
	if (__builtin_expect(fn != NULL && __atomic_load_n(&pass_direct, __ATOMIC_RELAXED), 1))
		return fn(ts, base);
	return timespec_get_pass_rare(ts, base);
}

static __attribute__((noinline)) int timespec_get_slow(struct timespec *ts, struct pending_read pending)
{
	if (clock_read_slow(pending.clock, ts, pending.t)) {
		count_call(SERVED_REALTIME, true);
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
		count_call(SERVED_REALTIME, true);
		return base;
	}
	if (r == READ_SLOW)
		return timespec_get_slow(ts, pending);
	return timespec_get_pass(ts, base);
}

/* ---- load ---- */

/* Early, so that other libraries' constructors that run after ours find the options.
 * It does as little as a preload into every process of a machine can afford: the real
 * functions' source found, the options read, and whether a record exists; nothing measured
 * or read, no CPUID, unless nothing is recorded yet (a cold start), which measures here as
 * it always did. It and everything it calls is on the load path (load_page.h): a page or
 * two of the shim's text, the load page, getauxval's page of libc. */
LOAD_PATH __attribute__((constructor(101))) static void shim_load(void)
{
	int saved = errno;
	/* Where the real functions come from is settled here, not at a call: the decision
	 * reads the kernel through clock_gettime's, and a call may come in a signal handler,
	 * where dlsym must not run. Usually only the loader's list is read (shim/real.h). */
	real_find_all();
	refclock_gettime = real_clock_gettime;
	if (gate_load())
		gate_first_read(CLOCK_MONOTONIC, true);
	errno = saved;
}
