/* The read a decision is due at, timed from the outside: probe_due N reads CLOCK_MONOTONIC
 * N times (default 2000), times each call with the counter (rdtscp on both sides), and
 * prints one line:
 *   due: read=K us=X plain_us=Y extra_us=Z before_extra_us=B faults=F
 * where K is the read TSCSHIM_DECIDE_AFTER names (default 1000), X that read's time, Y
 * the median of the other reads, Z = X - Y, B the dearest of the five reads before K
 * less Y, and F the page faults taken during the reads (getrusage; the probe's own pages,
 * the C library's clock_gettime and the vDSO's are touched before, so that a run without
 * the shim takes none). The counter's rate comes from the kernel's
 * clock (the system call, which no preload reaches) around the whole run. Exit 2 when K
 * is beyond N. Only measures: the assertions are the caller's. */
#define _GNU_SOURCE
#include "kernel_ns.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

enum { MAX_READS = 100000 };
static uint64_t took[MAX_READS];

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	const char *after = getenv("TSCSHIM_DECIDE_AFTER");
	long due = after ? atol(after) : 1000;
	if (n < 2 || n > MAX_READS || due < 1 || due > n)
		return 2;
	unsigned aux;
	for (long i = 0; i < n; i++) /* the buffer's own pages, before the count */
		took[i] = 0;
	/* The C library's clock_gettime and the vDSO's pages, before the count too, through a
	 * clock the shim does not serve (it counts no read of it). */
	struct timespec warm;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &warm) != 0)
		return 2;
	struct rusage u0, u1;
	if (getrusage(RUSAGE_SELF, &u0) != 0)
		return 2;
	int64_t k0 = kernel_ns(CLOCK_MONOTONIC);
	uint64_t t0 = __rdtscp(&aux);
	struct timespec ts;
	for (long i = 0; i < n; i++) {
		uint64_t a = __rdtscp(&aux);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		took[i] = __rdtscp(&aux) - a;
	}
	uint64_t t1 = __rdtscp(&aux);
	if (getrusage(RUSAGE_SELF, &u1) != 0)
		return 2;
	int64_t k1 = kernel_ns(CLOCK_MONOTONIC);
	double us_per_tick = (double)(k1 - k0) / 1e3 / (double)(t1 - t0);
	uint64_t at_due = took[due - 1];
	/* The reads just before it, which prepare the decision a part each: the dearest. */
	uint64_t before = 0;
	for (long i = due - 6 < 0 ? 0 : due - 6; i < due - 1; i++)
		before = took[i] > before ? took[i] : before;
	took[due - 1] = took[n - 1];
	qsort(took, (size_t)n - 1, sizeof took[0], by_value);
	double plain = (double)took[(n - 1) / 2] * us_per_tick, x = (double)at_due * us_per_tick;
	printf("due: read=%ld us=%.2f plain_us=%.3f extra_us=%.2f before_extra_us=%.2f faults=%ld\n", due, x, plain,
	       x - plain, (double)before * us_per_tick - plain,
	       (u1.ru_minflt - u0.ru_minflt) + (u1.ru_majflt - u0.ru_majflt));
	return 0;
}
