/* A test double of the kernel's clock as the shim sees it. Preloaded after the shim
 * (LD_PRELOAD="libtscshim.so librefclock.so"), it is what the shim's real_clock_gettime
 * finds, so calibration, anchors and fallbacks all read it, as on a host whose clock
 * misbehaves; programs check against the system call, which nothing preloaded reaches.
 *
 *   TSCTEST_SYSCALL=1       every read is the system call (a host with no vDSO clock:
 *                           Xen, HPET, acpi_pm)
 *   TSCTEST_JITTER_NS=J     every reading moved by a uniform amount in [-J, J]
 *   tsctest_set_jump(ns)    from then on MONOTONIC, BOOTTIME, REALTIME and MONOTONIC_RAW
 *                           read ns ahead (a paused VM); found with dlsym */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

static int use_syscall;
static int64_t jitter_ns;
static _Atomic int64_t jump_ns;
static clock_gettime_fn *next_clock_gettime;

__attribute__((visibility("default"))) void tsctest_set_jump(int64_t ns)
{
	atomic_store(&jump_ns, ns);
}

__attribute__((constructor(101))) static void setup(void)
{
	const char *s = getenv("TSCTEST_SYSCALL");
	use_syscall = s && *s == '1';
	s = getenv("TSCTEST_JITTER_NS");
	jitter_ns = s ? atoll(s) : 0;
}

static uint64_t next_random(void)
{
	static __thread uint64_t x;
	if (!x)
		x = (uint64_t)(uintptr_t)&x ^ 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t c, struct timespec *ts)
{
	int r;
	if (use_syscall) {
		r = (int)syscall(SYS_clock_gettime, c, ts);
	} else {
		if (!next_clock_gettime)
			next_clock_gettime = (clock_gettime_fn *)dlsym(RTLD_NEXT, "clock_gettime");
		r = next_clock_gettime ? next_clock_gettime(c, ts) : (int)syscall(SYS_clock_gettime, c, ts);
	}
	if (r != 0)
		return r;
	if (c != CLOCK_MONOTONIC && c != CLOCK_BOOTTIME && c != CLOCK_REALTIME && c != CLOCK_MONOTONIC_RAW)
		return r;
	int64_t add = atomic_load_explicit(&jump_ns, memory_order_relaxed);
	if (jitter_ns > 0)
		add += (int64_t)(next_random() % (uint64_t)(2 * jitter_ns + 1)) - jitter_ns;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + add;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return r;
}
