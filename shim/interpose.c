/* The exported entry points, and the constructor.
 *
 * Each entry point has one shape, as the kernel's vDSO has one routine per clock: the
 * served read inline (shim/line.h), its rare cases finished out of line (*_slow), and
 * every call the counter does not serve handed on through one pointer, the entry
 * point's pass target (a tail jump, or for clock_gettime a call and a test of the
 * result). The pointers replace themselves (as musl's clock_gettime does):
 *
 *   undecided  (from load)   counts the read, asks the gate whether the decision is due,
 *                            and calls the real function; once the decision is made, by
 *                            any trigger (a read, load, a status query), the entry point's
 *                            first call through it sets its own decided target and
 *                            dispatches again. A clock the counter never serves asks
 *                            nothing: it goes where the decided target would send it.
 *   decided                  the real function itself, or, where it only wraps the
 *                            kernel's vDSO function (glibc's clock_gettime and
 *                            timespec_get), the vDSO's own; with TSCSHIM_STATS, a counting
 *                            wrapper.
 *
 * So once decided a call the counter does not serve (every call of a process that passes
 * through, or an unserved clock such as CLOCK_MONOTONIC_COARSE beside served ones) runs
 * the served test (a compare, a byte load, one branch) and then what the C library's
 * function runs, less a GOT load (test/check-hot-path.sh holds the entry points' shape).
 *
 * A target is written by whichever thread first sees the decision made; every writer
 * writes the same value, so the race is benign, and a reader that finds an old value
 * only takes the undecided path once more. */
#define _GNU_SOURCE
#include "clock.h"
#include "load_page.h"
#include "steps.h"
#include "export.h"
#include "gate.h"
#include "line.h"
#include "real.h"
#include "settings.h"
#include "stats.h"
#include "vdso.h"

#include "refclock.h"

#include <errno.h>

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

/* A served call counted (TSCSHIM_STATS), out of line: the served path only tests
 * stats_enabled and jumps here, so that counting keeps no register of its alive. */
static __attribute__((noinline)) int count_served(unsigned slot, int result)
{
	stats_count(slot, true);
	return result;
}

/* clock_gettime's pass target answers as the kernel's vDSO function does: 0, or a
 * negated errno, which the entry point turns into -1 and errno as glibc's own
 * clock_gettime does (the same two instructions). So where glibc's clock_gettime is the
 * next definition, the target is the vDSO function itself, and a call the counter does
 * not serve costs what glibc's does: its wrapper is ours, a load shorter. */
typedef int negated_errno_clock_gettime_fn(clockid_t, struct timespec *);

static int clock_gettime_undecided(clockid_t clock, struct timespec *ts);
static int gettimeofday_undecided(struct timeval *tv, void *tz);
static int timespec_get_undecided(struct timespec *ts, int base);

/* Where each entry point sends a call the counter does not serve: one table, a cache line
 * of its own, read by every such call, written only when the decision is seen made. */
static struct pass_targets {
	_Alignas(64) negated_errno_clock_gettime_fn *clock_gettime;
	gettimeofday_fn *gettimeofday;
	timespec_get_fn *timespec_get;
	/* Before the decision, where clock_gettime_undecided sends a clock the counter never
	 * serves: clock_gettime's decided target, chosen at the first such call (NULL until
	 * then). The decision does not change it: nothing it finds bears on those clocks. */
	negated_errno_clock_gettime_fn *never_served;
	/* The served clocks (bit i: enum served_clock i) whose reads count toward the
	 * decision: TSCSHIM_CLOCKS, set by the constructor. Every other clock, and every clock
	 * with TSCSHIM_CLOCKS=none, is never served, so its reads never decide. */
	uint8_t counted_clocks;
} pass_to ON_LOAD_PAGE = {
	.clock_gettime = clock_gettime_undecided,
	.gettimeofday = gettimeofday_undecided,
	.timespec_get = timespec_get_undecided,
	.counted_clocks = OPTION_CLOCKS_DEFAULT_SET,
};

/* Whether a read of this served clock (or SERVED_CLOCK_COUNT: any other) counts toward
 * the decision, or may be the one that makes it. */
static inline bool counts_toward_decision(unsigned slot)
{
	return (__atomic_load_n(&pass_to.counted_clocks, __ATOMIC_RELAXED) >> slot) & 1;
}

/* The kernel's vDSO clock_gettime, where timespec_get may call it directly. */
static clock_gettime_fn *vdso_clock_gettime ON_LOAD_PAGE;

/* Set when the constructor has finished: the real functions, which C library they are
 * and TSCSHIM_STATS are known from then on. A call that comes earlier (from a library
 * whose constructor runs before the shim's) must choose no target that lasts. */
static bool constructor_done ON_LOAD_PAGE;

/* A function that returns -1 and errno, as one that returns a negated errno. */
static inline int negated_errno(int rc)
{
	return rc == 0 ? 0 : -errno;
}

/* ---- the decided targets ---- */

/* Where the real function is not glibc's (musl's, another interposer's): itself. */
static int clock_gettime_real(clockid_t clock, struct timespec *ts)
{
	return negated_errno(real_clock_gettime(clock, ts));
}

static int timespec_get_vdso(struct timespec *ts, int base)
{
	/* Loaded atomically: each entry point's first call after the decision stores it
	 * again (the same value) while other threads call through it. A plain load on x86. */
	clock_gettime_fn *vdso = __atomic_load_n(&vdso_clock_gettime, __ATOMIC_RELAXED);
	if (__builtin_expect(base == TIME_UTC && vdso(CLOCK_REALTIME, ts) == 0, 1))
		return base;
	return real_timespec_get(ts, base);
}

/* With TSCSHIM_STATS: every call counted, served or not. */
static int clock_gettime_counted(clockid_t clock, struct timespec *ts)
{
	count_call(served_clock_slot(clock), false);
	return negated_errno(real_clock_gettime(clock, ts));
}

static int gettimeofday_counted(struct timeval *tv, void *tz)
{
	count_call(SERVED_REALTIME, false);
	return real_gettimeofday(tv, tz);
}

static int timespec_get_counted(struct timespec *ts, int base)
{
	count_call(SERVED_REALTIME, false);
	return real_timespec_get(ts, base);
}

/* The kernel's vDSO clock_gettime where glibc's is the next definition (glibc's
 * clock_gettime and timespec_get wrap it; its gettimeofday is the vDSO's own already,
 * through an IFUNC), else NULL. Kept for timespec_get_vdso. */
static clock_gettime_fn *vdso_where_glibc_wraps_it(void)
{
	clock_gettime_fn *vdso = real_is_c_library() ? (clock_gettime_fn *)vdso_function("__vdso_clock_gettime") : NULL;
	if (vdso)
		__atomic_store_n(&vdso_clock_gettime, vdso, __ATOMIC_RELAXED);
	return vdso;
}

/* Sets entry point f's decided target, and only its: the first call of each entry point
 * after the decision sets its own, so that a decision due in a signal handler looks up no
 * other real function there (gettimeofday's is resolved through glibc's IFUNC resolver,
 * deep frames on a caller's small stack). False while f's real function is not known yet
 * (a call before the constructor, or during its dlsym): the undecided target stays, and
 * takes the system call meanwhile. */
/* clock_gettime's decided target: the vDSO's own where glibc's wraps it, else the real
 * function; counted with TSCSHIM_STATS. NULL while the real function is not known. */
static negated_errno_clock_gettime_fn *clock_gettime_decided_target(void)
{
	if (stats_enabled)
		return clock_gettime_counted;
	negated_errno_clock_gettime_fn *vdso = vdso_where_glibc_wraps_it();
	return vdso ? vdso : real_function(REAL_CLOCK_GETTIME) ? clock_gettime_real : NULL;
}

static bool set_decided_target(enum real_function f)
{
	void *target = NULL;
	switch (f) {
	case REAL_CLOCK_GETTIME:
		target = (void *)clock_gettime_decided_target();
		break;
	case REAL_GETTIMEOFDAY:
		target = stats_enabled ? (void *)gettimeofday_counted : real_function(REAL_GETTIMEOFDAY);
		break;
	case REAL_TIMESPEC_GET:
		target = stats_enabled ? (void *)timespec_get_counted
			 : vdso_where_glibc_wraps_it() ? (void *)timespec_get_vdso : real_function(REAL_TIMESPEC_GET);
		break;
	default:
		break;
	}
	if (!target)
		return false;
	/* Release: a thread that loads timespec_get_vdso sees vdso_clock_gettime. */
	void **slot = f == REAL_CLOCK_GETTIME ? (void **)&pass_to.clock_gettime
		      : f == REAL_GETTIMEOFDAY ? (void **)&pass_to.gettimeofday : (void **)&pass_to.timespec_get;
	__atomic_store_n(slot, target, __ATOMIC_RELEASE);
	return true;
}

#ifdef TSCSHIM_TEST_HOOKS
/* The test build only: where clock_gettime sends a call the counter does not serve now,
 * 0 undecided, 1 the vDSO's own, 2 the real function through its wrapper, 3 counted; and
 * the same for a clock the counter never serves before the decision (0: none chosen yet),
 * and how many clock_gettime calls took the undecided path that asks the gate. */
static negated_errno_clock_gettime_fn clock_gettime_undecided_counted;
static _Atomic uint64_t test_gate_asked;

static int test_target_code(negated_errno_clock_gettime_fn *t)
{
	if (t == NULL || t == clock_gettime_undecided)
		return 0;
	return t == clock_gettime_real ? 2 : t == clock_gettime_counted ? 3 : 1;
}

SHIM_EXPORT int tscshim_test_pass_target(void)
{
	return test_target_code(__atomic_load_n(&pass_to.clock_gettime, __ATOMIC_ACQUIRE));
}

SHIM_EXPORT int tscshim_test_never_served_target(void)
{
	return test_target_code(__atomic_load_n(&pass_to.never_served, __ATOMIC_ACQUIRE));
}

SHIM_EXPORT uint64_t tscshim_test_gate_asked(void)
{
	return atomic_load(&test_gate_asked);
}
#define COUNT_GATE_ASKED() atomic_fetch_add(&test_gate_asked, 1)
#else
#define COUNT_GATE_ASKED() ((void)0)
#endif

/* ---- the undecided targets ---- */

/* True when the decision is made, by this read or before, and the targets are set:
 * dispatch the call again (it now finds its clock served, or the decided target, so
 * never comes back here). False before the decision is due, while it is under way in
 * another thread, or before a real function is known: pass this call through. */
static bool decided_at_or_before(clockid_t clock, enum real_function entry)
{
	if (!gate_decided() && !gate_decide_if_due(clock, false))
		return false;
	/* Setting it may ask getauxval for the vDSO, which sets errno where there is none:
	 * a call that then succeeds leaves errno as it found it, as the C library's does. */
	int saved = errno;
	bool set = set_decided_target(entry);
	errno = saved;
	return set;
}

/* A clock the counter never serves (CLOCK_MONOTONIC_COARSE, the CPU-time clocks, TAI),
 * before the decision: straight to what the decided target would be. Such a read neither
 * counts toward the decision nor makes it, so a process that reads only such clocks never
 * decides, and would otherwise pay the gate's questions and glibc's wrapper at every call
 * for life (72 cycles against glibc's 23 for MONOTONIC_COARSE on AMD EPYC Zen 3).
 * NULL (pass the call on as before the decision) while the real function is unknown. */
static __attribute__((noinline)) negated_errno_clock_gettime_fn *never_served_target_chosen(void)
{
	if (!__atomic_load_n(&constructor_done, __ATOMIC_ACQUIRE))
		return NULL;
	/* Finding the vDSO may ask getauxval, which sets errno where there is none. */
	int saved = errno;
	negated_errno_clock_gettime_fn *t = clock_gettime_decided_target();
	errno = saved;
	/* Every thread that gets here chooses the same target: a benign race. */
	if (t)
		__atomic_store_n(&pass_to.never_served, t, __ATOMIC_RELAXED);
	return t;
}

/* Every call of a served clock, or of any clock once decided (the first sets clock_gettime's
 * decided target), or before the real function is known. */
static __attribute__((noinline)) int clock_gettime_undecided_counted(clockid_t clock, struct timespec *ts)
{
	COUNT_GATE_ASKED();
	if (!is_null(ts) && decided_at_or_before(clock, REAL_CLOCK_GETTIME))
		return negated_errno(clock_gettime(clock, ts));
	count_call(served_clock_slot(clock), false);
	return negated_errno(real_clock_gettime(clock, ts));
}

/* No frame of its own: the common case is three loads, four tests and a tail call. A
 * NULL goes to the real function, as before the decision it always did. */
static int clock_gettime_undecided(clockid_t clock, struct timespec *ts)
{
	if (!counts_toward_decision(served_clock_slot(clock)) && !gate_decided() && !is_null(ts)) {
		negated_errno_clock_gettime_fn *t = __atomic_load_n(&pass_to.never_served, __ATOMIC_RELAXED);
		if (__builtin_expect(t == NULL, 0))
			t = never_served_target_chosen();
		if (t)
			return t(clock, ts);
	}
	return clock_gettime_undecided_counted(clock, ts);
}

static int gettimeofday_undecided(struct timeval *tv, void *tz)
{
	/* A timezone request is obsolete but must still reach the real function. */
	if (!is_null(tv) && !tz && (counts_toward_decision(SERVED_REALTIME) || gate_decided()) &&
	    decided_at_or_before(CLOCK_REALTIME, REAL_GETTIMEOFDAY))
		return gettimeofday(tv, tz);
	count_call(SERVED_REALTIME, false);
	return real_gettimeofday(tv, tz);
}

static int timespec_get_undecided(struct timespec *ts, int base)
{
	if (base == TIME_UTC && !is_null(ts) && (counts_toward_decision(SERVED_REALTIME) || gate_decided()) &&
	    decided_at_or_before(CLOCK_REALTIME, REAL_TIMESPEC_GET))
		return timespec_get(ts, base);
	count_call(SERVED_REALTIME, false);
	return real_timespec_get(ts, base);
}

/* ---- the entry points ---- */

/* The rare part of a served read (READ_SLOW): 1 with *ts filled; 0: pass the call
 * through; -1: the kernel's clock failed the read, errno as it set it (the caller returns
 * that, never a second call's answer, which a stopped clock's hold would not cover).
 * Counted as served when it serves. */
static __attribute__((noinline)) int served_slow(struct timespec *ts, unsigned served)
{
	int r = clock_read_slow(served, ts);
	if (r > 0)
		count_call(served, true);
	return r;
}

/* A clock_gettime the counter does not serve: its target, and a failure said as glibc
 * says the vDSO's (errno, -1). */
static __attribute__((noinline, cold)) int failed_with(int negated)
{
	errno = -negated;
	return -1;
}

static inline __attribute__((always_inline)) int clock_gettime_pass(clockid_t clock, struct timespec *ts)
{
	int rc = __atomic_load_n(&pass_to.clock_gettime, __ATOMIC_ACQUIRE)(clock, ts);
	return __builtin_expect(rc == 0, 1) ? 0 : failed_with(rc);
}

/* The clock id from the served clock, not kept from the call: one register fewer live
 * across the counter read. */
static __attribute__((noinline)) int clock_gettime_slow(struct timespec *ts, unsigned served)
{
	int r = served_slow(ts, served);
	return r > 0 ? 0 : r < 0 ? -1 : clock_gettime_pass(clock_table[served].id, ts);
}

SHIM_EXPORT int clock_gettime(clockid_t clock, struct timespec *ts)
{
	unsigned served;
	enum read_result r = clock_read(clock, ts, &served, ts);
	if (__builtin_expect(r == READ_SERVED, 1))
		return __builtin_expect(stats_enabled, 0) ? count_served(served, 0) : 0;
	if (r == READ_SLOW)
		return clock_gettime_slow(ts, served);
	return clock_gettime_pass(clock, ts);
}

/* Old programs bind this name; it is the same function. */
SHIM_EXPORT int __clock_gettime(clockid_t clock, struct timespec *ts)
	__attribute__((alias("clock_gettime"), copy(clock_gettime)));

static inline void timespec_to_timeval(const struct timespec *ts, struct timeval *tv)
{
	tv->tv_sec = ts->tv_sec;
	tv->tv_usec = ts->tv_nsec / 1000;
}

static __attribute__((noinline)) int gettimeofday_slow(struct timeval *tv, unsigned served)
{
	struct timespec ts;
	int r = served_slow(&ts, served);
	if (r < 0)
		return -1;
	if (r == 0)
		return __atomic_load_n(&pass_to.gettimeofday, __ATOMIC_ACQUIRE)(tv, NULL);
	timespec_to_timeval(&ts, tv);
	return 0;
}

SHIM_EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;
	unsigned served;
	enum read_result r = __builtin_expect(tz != NULL, 0) ? READ_PASS : clock_read(CLOCK_REALTIME, &ts, &served, tv);
	if (__builtin_expect(r == READ_SERVED, 1)) {
		timespec_to_timeval(&ts, tv);
		return __builtin_expect(stats_enabled, 0) ? count_served(served, 0) : 0;
	}
	if (r == READ_SLOW)
		return gettimeofday_slow(tv, served);
	return __atomic_load_n(&pass_to.gettimeofday, __ATOMIC_ACQUIRE)(tv, tz);
}

static __attribute__((noinline)) int timespec_get_slow(struct timespec *ts, unsigned served)
{
	int r = served_slow(ts, served);
	return r > 0 ? TIME_UTC : r < 0 ? 0 : __atomic_load_n(&pass_to.timespec_get, __ATOMIC_ACQUIRE)(ts, TIME_UTC);
}

SHIM_EXPORT int timespec_get(struct timespec *ts, int base)
{
	unsigned served;
	enum read_result r = __builtin_expect(base != TIME_UTC, 0) ? READ_PASS : clock_read(CLOCK_REALTIME, ts, &served, ts);
	if (__builtin_expect(r == READ_SERVED, 1))
		return __builtin_expect(stats_enabled, 0) ? count_served(served, base) : base;
	if (r == READ_SLOW)
		return timespec_get_slow(ts, served);
	return __atomic_load_n(&pass_to.timespec_get, __ATOMIC_ACQUIRE)(ts, base);
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
	STEP("load: begins");
	/* Where the real functions come from is settled here, not at a call: the decision
	 * reads the kernel through clock_gettime's, and a call may come in a signal handler,
	 * where dlsym must not run. Usually only the loader's list is read (shim/real.h). */
	real_find_all();
	STEP("load: the C library's functions found");
	refclock_gettime = real_clock_gettime;
	bool measure_now = settings_load();
	__atomic_store_n(&pass_to.counted_clocks, (uint8_t)settings_counted_clocks(), __ATOMIC_RELAXED);
	__atomic_store_n(&constructor_done, true, __ATOMIC_RELEASE);
	STEP("load: options read, the record looked for");
	if (measure_now)
		gate_decide_if_due(CLOCK_MONOTONIC, true);
	errno = saved;
}
