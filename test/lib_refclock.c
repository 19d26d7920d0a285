/* A hostile double of the kernel's clock as the shim sees it. Preloaded after the shim
 * (LD_PRELOAD="libtscshim.so librefclock.so"), it is what the shim's real_clock_gettime
 * finds, so calibration, anchors, re-synchronizations and kernel reads all read it, as
 * on a host whose clock misbehaves, or behind a second interposer; programs check against
 * the system call, which nothing preloaded reaches, or against the double's own
 * tsctest_reference, which misbehaves alike with draws of its own.
 *
 * Each misbehaviour is a mode, set by a variable (any number at once):
 *   TSCTEST_SYSCALL=1            every read is the system call (a host with no vDSO clock:
 *                                Xen, HPET, acpi_pm)
 *   TSCTEST_JITTER_NS=J          every reading moved by a uniform amount in [-J, J]
 *   TSCTEST_FAIL_ONE_IN=N        one call in N returns -1 with EINVAL and leaves the
 *                                timespec as it was (a seccomp filter, a broken interposer)
 *   TSCTEST_BACK_ONE_IN=N        one reading in N is TSCTEST_BACK_NS (default 5000) older
 *                                than the clock: readings out of order
 *   TSCTEST_FREEZE_EVERY_MS=P    every P ms the clock stands still for TSCTEST_FREEZE_MS
 *                                (default 1), then reads true time again
 *   TSCTEST_STEP_EVERY_MS=P      every P ms the clock moves TSCTEST_STEP_NS more (negative:
 *                                back), for good
 *   TSCTEST_SLOW_ONE_IN=N        one call in N spins TSCTEST_SLOW_NS (default 20000) before
 *                                or after it reads (the reading thread preempted between
 *                                the shim's counter reads and the kernel's)
 *   TSCTEST_RATE_PPM=P           the clock runs P ppm fast against the counter (negative:
 *                                slow), as a guest's clock does after a live migration to
 *                                a host whose TSC runs at another rate, or under a hard slew
 *   TSCTEST_WOBBLE_MS=W          ...and its rate changes every W ms, +P then -P in turn
 *   TSCTEST_WOBBLE_FOR_MS=D      ...for D ms, then stays at +P (default: for good)
 *   TSCTEST_COST_NS=C            every call costs at least C ns, misbehaving clock or not,
 *                                from load (a kernel clock that is a system call trapping
 *                                to a hypervisor: 1-5 us)
 * and where:
 *   TSCTEST_CLOCKS=LIST          the clocks that misbehave (monotonic, monotonic_raw,
 *                                boottime, realtime; default all four)
 *   TSCTEST_AFTER_MS=T           misbehave only from T ms after load (the decision made
 *                                on a good clock; default 0: from the first read)
 *   tsctest_set_jump(ns)         from then on the clocks read ns ahead (a paused VM)
 *   tsctest_set_rate_ppm(p)      from then on the four clocks run p ppm fast (negative:
 *                                slow) against the counter, on top of any other mode (a
 *                                live migration to a host whose TSC runs at another rate);
 *                                once per process
 *   tsctest_arm_rate_ppm(p)      the same from the double's next call, in any thread (the
 *                                first clock read of a guest resumed after its move)
 *
 * For the probes (found with dlsym):
 *   tsctest_reference(c, ts)     the clock as the shim sees it, with draws of its own,
 *                                not counted as the shim's calls
 *   tsctest_last(c, &ns)         how many calls this thread made through the double (the
 *                                shim's), and in *ns the value the last one returned for c
 *   tsctest_settled_ns(c)        how long ago (ns of true time) clock c last changed
 *                                course (a freeze began or ended, a step, a jump); 0 while
 *                                frozen: the shim may lag it by up to two re-
 *                                synchronization intervals */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

#define EXPORT __attribute__((visibility("default")))

static struct {
	bool syscall;
	int64_t jitter_ns;
	uint64_t fail_one_in, back_one_in, slow_one_in;
	int64_t back_ns, slow_ns;
	int64_t freeze_every_ns, freeze_ns;
	int64_t step_every_ns, step_ns;
	int64_t after_ns;
	int64_t rate_ppm, wobble_ns, wobble_for_ns;
	int64_t cost_ns;
	unsigned clocks; /* bit per clock id that misbehaves */
} mode;

static int64_t loaded_at_ns; /* true MONOTONIC at load */
static int64_t origin_ns[16]; /* each misbehaving clock's own value at load */
static _Atomic int64_t jump_ns;
static _Atomic int64_t jumped_at_ns; /* true MONOTONIC of the last tsctest_set_jump */
static clock_gettime_fn *next_clock_gettime;
static _Atomic int64_t set_rate_ppm;
static int64_t set_rate_from_ns[16]; /* each own clock's true value when it was set */

static __thread uint64_t shim_calls;
static __thread int64_t last_value[16];

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* The kernel's clock as it is: the next definition (the vDSO's, through libc), else the
 * system call. */
static int64_t true_ns(clockid_t c)
{
	struct timespec ts;
	if (!next_clock_gettime)
		next_clock_gettime = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
	if (!next_clock_gettime || next_clock_gettime(c, &ts) != 0)
		syscall(SYS_clock_gettime, c, &ts);
	return ns_of(&ts);
}

/* Whether a mode needs to know the time since load. */
static bool timed_modes(void)
{
	return mode.after_ns || mode.freeze_every_ns || mode.step_every_ns || mode.rate_ppm;
}

EXPORT void tsctest_set_jump(int64_t ns)
{
	atomic_store(&jumped_at_ns, true_ns(CLOCK_MONOTONIC));
	atomic_store(&jump_ns, ns);
}

EXPORT void tsctest_set_rate_ppm(int64_t ppm)
{
	static const clockid_t own[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
	for (unsigned i = 0; i < sizeof own / sizeof *own; i++)
		set_rate_from_ns[own[i]] = true_ns(own[i]);
	atomic_store_explicit(&set_rate_ppm, ppm, memory_order_release);
}

static _Atomic int rate_armed;
static _Atomic int64_t armed_ppm;

EXPORT void tsctest_arm_rate_ppm(int64_t ppm)
{
	atomic_store(&armed_ppm, ppm);
	atomic_store(&rate_armed, 1);
}

static int64_t env_int(const char *name, int64_t fallback)
{
	const char *s = getenv(name);
	return s && *s ? atoll(s) : fallback;
}

__attribute__((constructor(101))) static void setup(void)
{
	loaded_at_ns = true_ns(CLOCK_MONOTONIC);
	static const clockid_t own[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
	for (unsigned i = 0; i < sizeof own / sizeof *own; i++)
		origin_ns[own[i]] = true_ns(own[i]);
	mode.syscall = env_int("TSCTEST_SYSCALL", 0) == 1;
	mode.jitter_ns = env_int("TSCTEST_JITTER_NS", 0);
	mode.fail_one_in = (uint64_t)env_int("TSCTEST_FAIL_ONE_IN", 0);
	mode.back_one_in = (uint64_t)env_int("TSCTEST_BACK_ONE_IN", 0);
	mode.back_ns = env_int("TSCTEST_BACK_NS", 5000);
	mode.slow_one_in = (uint64_t)env_int("TSCTEST_SLOW_ONE_IN", 0);
	mode.slow_ns = env_int("TSCTEST_SLOW_NS", 20000);
	mode.freeze_every_ns = env_int("TSCTEST_FREEZE_EVERY_MS", 0) * 1000000;
	mode.freeze_ns = env_int("TSCTEST_FREEZE_MS", 1) * 1000000;
	mode.step_every_ns = env_int("TSCTEST_STEP_EVERY_MS", 0) * 1000000;
	mode.step_ns = env_int("TSCTEST_STEP_NS", 0);
	mode.after_ns = env_int("TSCTEST_AFTER_MS", 0) * 1000000;
	mode.rate_ppm = env_int("TSCTEST_RATE_PPM", 0);
	mode.wobble_ns = env_int("TSCTEST_WOBBLE_MS", 0) * 1000000;
	mode.wobble_for_ns = env_int("TSCTEST_WOBBLE_FOR_MS", 0) * 1000000;
	mode.cost_ns = env_int("TSCTEST_COST_NS", 0);
	static const struct {
		const char *name;
		clockid_t id;
	} names[] = {{"monotonic", CLOCK_MONOTONIC},
		     {"monotonic_raw", CLOCK_MONOTONIC_RAW},
		     {"boottime", CLOCK_BOOTTIME},
		     {"realtime", CLOCK_REALTIME}};
	const char *list = getenv("TSCTEST_CLOCKS");
	for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
		size_t len = strlen(names[i].name);
		bool named = !list;
		for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',')
			named |= strncmp(p, names[i].name, len) == 0 && (p[len] == ',' || p[len] == 0);
		if (named)
			mode.clocks |= 1u << names[i].id;
	}
}

static uint64_t next_random(void)
{
	static __thread uint64_t x;
	if (!x)
		x = ((uint64_t)(uintptr_t)&x ^ (uint64_t)true_ns(CLOCK_MONOTONIC)) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static bool one_in(uint64_t n)
{
	return n && next_random() % n == 0;
}

static bool misbehaves(clockid_t c, int64_t since_load)
{
	return (unsigned)c < 32 && (mode.clocks & (1u << c)) && since_load >= mode.after_ns;
}

/* The course of a clock at `since`, ns of its own since misbehaviour began: what the
 * freezes and steps add to its true value, and when that course last changed. Reckoned
 * on the clock's own reading, so that a frozen clock reads exactly one value and a clock
 * that steps forward never steps back. */
static int64_t course_offset(int64_t since, int64_t *changed_at)
{
	int64_t offset = 0, changed = 0;
	if (mode.step_every_ns > 0) {
		int64_t steps = since / mode.step_every_ns;
		offset += steps * mode.step_ns;
		if (steps)
			changed = steps * mode.step_every_ns;
	}
	if (mode.freeze_every_ns > 0 && since >= mode.freeze_every_ns) {
		int64_t phase = since % mode.freeze_every_ns;
		if (phase < mode.freeze_ns) {
			offset -= phase; /* standing still since the period began */
			changed = since; /* still changing */
		} else if (since - phase + mode.freeze_ns > changed) {
			changed = since - phase + mode.freeze_ns;
		}
	}
	if (mode.rate_ppm) {
		/* The time gained (or lost) at the rate: the whole time at one rate, or with a
		 * wobble, the last period's at +P or -P (whole periods in pairs cancel); after a
		 * wobble that ends, what it left and the time since at +P. */
		int64_t wobbling = since, steady = 0;
		if (mode.wobble_ns > 0 && mode.wobble_for_ns > 0 && since > mode.wobble_for_ns) {
			wobbling = mode.wobble_for_ns;
			steady = since - mode.wobble_for_ns;
		}
		int64_t periods = mode.wobble_ns > 0 ? wobbling / mode.wobble_ns : 0;
		int64_t in_period = mode.wobble_ns > 0 ? wobbling % mode.wobble_ns : wobbling;
		int64_t gained = (periods % 2 ? mode.wobble_ns - in_period : in_period) + steady;
		offset += (int64_t)((__int128)gained * mode.rate_ppm / 1000000);
		int64_t began = steady ? mode.wobble_for_ns : periods * (mode.wobble_ns > 0 ? mode.wobble_ns : 0);
		if (began > changed)
			changed = began;
	}
	if (changed_at)
		*changed_at = changed;
	return offset;
}

/* The clock as the double gives it: the kernel's reading, moved as the modes say.
 * Returns the call's result; on failure *ts is untouched. */
static int hostile_read(clockid_t c, struct timespec *ts)
{
	if (atomic_load_explicit(&rate_armed, memory_order_relaxed) && atomic_exchange(&rate_armed, 0))
		tsctest_set_rate_ppm(atomic_load(&armed_ppm));
	if (mode.cost_ns > 0)
		for (int64_t until = true_ns(CLOCK_MONOTONIC) + mode.cost_ns; true_ns(CLOCK_MONOTONIC) < until;)
			;
	bool slow_call = mode.slow_one_in && one_in(mode.slow_one_in);
	bool slow_before = slow_call && (next_random() & 1);
	int64_t since_load = timed_modes() ? true_ns(CLOCK_MONOTONIC) - loaded_at_ns : 0;
	bool bad = misbehaves(c, since_load);
	if (bad && slow_before)
		for (int64_t until = true_ns(CLOCK_MONOTONIC) + mode.slow_ns; true_ns(CLOCK_MONOTONIC) < until;)
			;
	if (bad && mode.fail_one_in && one_in(mode.fail_one_in)) {
		errno = EINVAL;
		return -1;
	}
	struct timespec got;
	int r;
	if (mode.syscall) {
		r = (int)syscall(SYS_clock_gettime, c, &got);
	} else {
		if (!next_clock_gettime)
			next_clock_gettime = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
		r = next_clock_gettime ? next_clock_gettime(c, &got) : (int)syscall(SYS_clock_gettime, c, &got);
	}
	if (r != 0)
		return r;
	if (c != CLOCK_MONOTONIC && c != CLOCK_BOOTTIME && c != CLOCK_REALTIME && c != CLOCK_MONOTONIC_RAW) {
		*ts = got;
		return r;
	}
	int64_t add = atomic_load_explicit(&jump_ns, memory_order_relaxed);
	int64_t ppm = atomic_load_explicit(&set_rate_ppm, memory_order_acquire);
	if (ppm && ns_of(&got) > set_rate_from_ns[c])
		add += (int64_t)((__int128)(ns_of(&got) - set_rate_from_ns[c]) * ppm / 1000000);
	int64_t own_since = ns_of(&got) - origin_ns[c] - mode.after_ns;
	if (bad && own_since >= 0) {
		add += course_offset(own_since, NULL);
		if (mode.jitter_ns > 0)
			add += (int64_t)(next_random() % (uint64_t)(2 * mode.jitter_ns + 1)) - mode.jitter_ns;
		if (mode.back_one_in && one_in(mode.back_one_in))
			add -= mode.back_ns;
	}
	int64_t ns = ns_of(&got) + add;
	if (bad && slow_call && !slow_before)
		for (int64_t until = true_ns(CLOCK_MONOTONIC) + mode.slow_ns; true_ns(CLOCK_MONOTONIC) < until;)
			;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return r;
}

EXPORT int clock_gettime(clockid_t c, struct timespec *ts)
{
	int r = hostile_read(c, ts);
	shim_calls++;
	if (r == 0 && (unsigned)c < 16)
		last_value[c] = ns_of(ts);
	return r;
}

EXPORT int tsctest_reference(clockid_t c, struct timespec *ts)
{
	return hostile_read(c, ts);
}

EXPORT uint64_t tsctest_last(clockid_t c, int64_t *ns)
{
	*ns = (unsigned)c < 16 ? last_value[c] : 0;
	return shim_calls;
}

EXPORT int64_t tsctest_settled_ns(clockid_t c)
{
	int64_t now = true_ns(CLOCK_MONOTONIC);
	int64_t since_load = now - loaded_at_ns;
	int64_t since_jump = atomic_load(&jumped_at_ns) ? now - atomic_load(&jumped_at_ns) : INT64_MAX;
	if (!misbehaves(c, since_load))
		return since_jump;
	int64_t since = since_load - mode.after_ns, changed_at;
	course_offset(since, &changed_at);
	int64_t settled = changed_at == since ? 0 : since - changed_at;
	return settled < since_jump ? settled : since_jump;
}
