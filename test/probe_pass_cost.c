/* What a call the counter does not serve costs under the preloaded shim, against the C
 * library's own clock_gettime and the vDSO's function it wraps: a measurement, never a
 * test's assertion (the figures are doc/BENEFIT.md's).
 *   LD_PRELOAD=build/libtscshim.so probe_pass_cost CLOCK_ID [DECIDE_FIRST_ID]
 * reads CLOCK_ID (6: CLOCK_MONOTONIC_COARSE) in batches of 64 calls through each of the
 * three, in turn, and prints each one's median per call in counter ticks, four rounds.
 * With DECIDE_FIRST_ID (1: CLOCK_MONOTONIC, and TSCSHIM_DECIDE_AFTER=1), that clock is read
 * once first, so that the process has decided; without it, a program that reads no served
 * clock never decides, and every call takes the undecided target. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

enum { BATCHES = 2000, CALLS_PER_BATCH = 64, ROUNDS = 4 };

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The median batch's ticks per call. */
static double median_ticks_per_call(clock_gettime_fn *fn, clockid_t clock)
{
	static uint64_t ticks[BATCHES];
	struct timespec ts;
	for (int b = 0; b < BATCHES; b++) {
		uint64_t start = __rdtsc();
		for (int i = 0; i < CALLS_PER_BATCH; i++) {
			fn(clock, &ts);
			__asm__ volatile("" : : "r"(&ts) : "memory");
		}
		ticks[b] = __rdtsc() - start;
	}
	qsort(ticks, BATCHES, sizeof ticks[0], by_value);
	return (double)ticks[BATCHES / 2] / CALLS_PER_BATCH;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: probe_pass_cost CLOCK_ID [DECIDE_FIRST_ID]\n");
		return 2;
	}
	clockid_t clock = (clockid_t)atoi(argv[1]);
	/* Through pointers, so that each call is an indirect call, as a program's through the GOT. */
	clock_gettime_fn *volatile preloaded = clock_gettime;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	clock_gettime_fn *volatile libc_own = libc ? (clock_gettime_fn *)dlsym(libc, "clock_gettime") : NULL;
	clock_gettime_fn *volatile vdso_own = vdso ? (clock_gettime_fn *)dlsym(vdso, "__vdso_clock_gettime") : NULL;
	if (!libc_own || !vdso_own) {
		fprintf(stderr, "probe_pass_cost: glibc's clock_gettime or the vDSO's not found\n");
		return 1;
	}
	struct timespec ts;
	if (argc >= 3)
		preloaded((clockid_t)atoi(argv[2]), &ts);
	for (int r = 0; r < ROUNDS; r++) {
		double shim = median_ticks_per_call(preloaded, clock);
		double own = median_ticks_per_call(libc_own, clock);
		double direct = median_ticks_per_call(vdso_own, clock);
		printf("preloaded %.1f libc %.1f vdso %.1f ticks per call; preloaded / libc %.2f\n", shim, own, direct,
		       shim / own);
	}
	return 0;
}
