/* A kernel clock that fails for a while, then recovers (review39). Preloaded after the
 * shim and build/test/librefclock.so (LD_PRELOAD="libtscshim.so librefclock.so
 * librefwindow.so"), it is the definition librefclock's reads reach: a call it fails
 * returns -1 with EINVAL and leaves the timespec untouched, which librefclock passes on.
 *
 *   TSCTEST_WINDOW_FROM_MS=T    the window opens T ms after load (default 0)
 *   TSCTEST_WINDOW_FOR_MS=D     and lasts D ms (default 0: no window)
 *   TSCTEST_WINDOW_EVERY_MS=P   and opens again every P ms (default: once)
 *   TSCTEST_WINDOW_FAIL_ONE_IN=N  inside it one call in N fails (default 1: every call)
 *   TSCTEST_WINDOW_PASS_ONE_IN=N  inside it only one call in N succeeds (N-1 in N fail:
 *                               an anchor of 8 readings often has none, while a probe's
 *                               reference retried 20 times gets one)
 *   TSCTEST_WINDOW_CLOCKS=LIST  the clocks that fail (monotonic, monotonic_raw, boottime,
 *                               realtime; default all four)
 *   TSCTEST_WINDOW_FIRST_CALLS=N  instead of a window in time: the first N calls of each
 *                               clock listed fail (in the process, whichever thread)
 *   TSCTEST_WINDOW_FORK_ONLY=1  the window is counted from the first call in a fork child
 *                               (a parent never fails): a child whose MONOTONIC fails
 *                               while it re-anchors
 * For the probes: tsctest_window_open() says whether the window is open now. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int clock_gettime_fn(clockid_t, struct timespec *);

static struct {
	int64_t from_ns, for_ns, every_ns;
	uint64_t one_in, pass_one_in;
	unsigned clocks;
	bool fork_only;
	long first_calls;
} w;
static _Atomic long calls_of[16];
static int64_t loaded_at_ns;
static pid_t loaded_pid;
static clock_gettime_fn *next_fn;

static int64_t true_mono(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t env_int(const char *name, int64_t fallback)
{
	const char *s = getenv(name);
	return s && *s ? atoll(s) : fallback;
}

__attribute__((constructor(102))) static void setup(void)
{
	loaded_at_ns = true_mono();
	loaded_pid = getpid();
	w.from_ns = env_int("TSCTEST_WINDOW_FROM_MS", 0) * 1000000;
	w.for_ns = env_int("TSCTEST_WINDOW_FOR_MS", 0) * 1000000;
	w.every_ns = env_int("TSCTEST_WINDOW_EVERY_MS", 0) * 1000000;
	w.one_in = (uint64_t)env_int("TSCTEST_WINDOW_FAIL_ONE_IN", 1);
	w.pass_one_in = (uint64_t)env_int("TSCTEST_WINDOW_PASS_ONE_IN", 0);
	w.fork_only = env_int("TSCTEST_WINDOW_FORK_ONLY", 0) == 1;
	w.first_calls = (long)env_int("TSCTEST_WINDOW_FIRST_CALLS", 0);
	static const struct {
		const char *name;
		clockid_t id;
	} names[] = {{"monotonic", CLOCK_MONOTONIC},
		     {"monotonic_raw", CLOCK_MONOTONIC_RAW},
		     {"boottime", CLOCK_BOOTTIME},
		     {"realtime", CLOCK_REALTIME}};
	const char *list = getenv("TSCTEST_WINDOW_CLOCKS");
	for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
		size_t len = strlen(names[i].name);
		bool named = !list;
		for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',')
			named |= strncmp(p, names[i].name, len) == 0 && (p[len] == ',' || p[len] == 0);
		if (named)
			w.clocks |= 1u << names[i].id;
	}
}

static uint64_t next_random(void)
{
	static __thread uint64_t x;
	if (!x)
		x = ((uint64_t)(uintptr_t)&x ^ (uint64_t)true_mono()) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

EXPORT bool tsctest_window_open(void)
{
	if (w.for_ns <= 0)
		return false;
	if (w.fork_only) {
		static pid_t child;
		static int64_t child_start;
		if (getpid() == loaded_pid)
			return false;
		if (child != getpid()) {
			child = getpid();
			child_start = true_mono();
		}
		int64_t since = true_mono() - child_start - w.from_ns;
		return since >= 0 && since < w.for_ns;
	}
	int64_t since = true_mono() - loaded_at_ns - w.from_ns;
	if (since < 0)
		return false;
	if (w.every_ns > 0)
		since %= w.every_ns;
	return since < w.for_ns;
}

EXPORT int clock_gettime(clockid_t c, struct timespec *ts)
{
	if (w.first_calls && (unsigned)c < 16 && (w.clocks & (1u << c)) &&
	    __atomic_fetch_add(&calls_of[c], 1, __ATOMIC_RELAXED) < w.first_calls) {
		errno = EINVAL;
		return -1;
	}
	if ((unsigned)c < 32 && (w.clocks & (1u << c)) && tsctest_window_open() &&
	    (w.pass_one_in > 1 ? next_random() % w.pass_one_in != 0 : w.one_in <= 1 || next_random() % w.one_in == 0)) {
		errno = EINVAL;
		return -1;
	}
	if (!next_fn)
		next_fn = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
	return next_fn ? next_fn(c, ts) : (int)syscall(SYS_clock_gettime, c, ts);
}
