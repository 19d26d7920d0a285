/* Per-call cost of CLOCK_MONOTONIC, every variant in one run, for the README's ratios.
 * Run under the shim (make bench does both fenced and unfenced):
 *   LD_PRELOAD=build/libtscshim.so build/test/bench_clock [CALLS]
 * Variants, interleaved over rounds, median per variant:
 *   shim     clock_gettime as an unmodified program calls it (the shim when preloaded)
 *   vdso     the real libc clock_gettime (looked up in libc itself: RTLD_NEXT from the
 *            main program would find the preloaded shim)
 *   syscall  syscall(SYS_clock_gettime)
 *   floor    the bare counter read (fenced or not, as the shim is) + multiply-shift +
 *            timespec split: what the shim cannot go below */
#define _GNU_SOURCE
#include "convert.h"
#include "counter.h"
#include "tscshim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int clock_fn(clockid_t, struct timespec *);
static clock_fn *vdso;
static __thread volatile long sink; /* per thread: a shared one would contend */

static uint64_t now_ns(void)
{
	struct timespec ts;
	vdso(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct conversion conv;
static uint64_t floor_start, floor_base;
static int fenced = 1;

static __attribute__((noinline)) int floor_read(struct timespec *ts)
{
	uint64_t t = fenced ? counter_read_ordered() : counter_read_unfenced();
	uint64_t ns = floor_base + conversion_apply(&conv, t - floor_start);
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
	return 0;
}

static __attribute__((noinline)) int syscall_read(struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts);
}

enum { SHIM, VDSO, SYSCALL, FLOOR, VARIANTS };
static const char *names[VARIANTS] = {"shim", "vdso", "syscall", "floor"};

static double run(int variant, long calls)
{
	struct timespec ts;
	uint64_t start = now_ns();
	for (long i = 0; i < calls; i++) {
		switch (variant) {
		case SHIM: clock_gettime(CLOCK_MONOTONIC, &ts); break;
		case VDSO: vdso(CLOCK_MONOTONIC, &ts); break;
		case SYSCALL: syscall_read(&ts); break;
		case FLOOR: floor_read(&ts); break;
		}
		sink += ts.tv_nsec;
	}
	return (double)(now_ns() - start) / (double)calls;
}

struct thread_run {
	long calls;
	double ns_per_call;
};

static void *thread_main(void *p)
{
	struct thread_run *r = p;
	r->ns_per_call = run(SHIM, r->calls);
	return NULL;
}

/* The shim's cost per call in each of `threads` threads calling at once. */
static double concurrent(int threads, long calls)
{
	pthread_t t[16];
	struct thread_run r[16];
	double worst = 0;
	for (int i = 0; i < threads; i++) {
		r[i].calls = calls;
		pthread_create(&t[i], NULL, thread_main, &r[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		if (r[i].ns_per_call > worst)
			worst = r[i].ns_per_call;
	}
	return worst;
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000000;
	enum { ROUNDS = 11 };
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	vdso = libc ? (clock_fn *)dlsym(libc, "clock_gettime") : NULL;
	if (!vdso || (void *)vdso == dlsym(RTLD_DEFAULT, "tscshim_status")) {
		fprintf(stderr, "bench_clock: cannot find libc's clock_gettime\n");
		return 2;
	}
	Dl_info where;
	if (dladdr((void *)vdso, &where) == 0 || !where.dli_fname || !strstr(where.dli_fname, "libc")) {
		fprintf(stderr, "bench_clock: clock_gettime resolved outside libc\n");
		return 2;
	}
	int (*status)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	struct tscshim_status st = {0};
	if (status)
		status(&st);
	fenced = status ? st.fenced : 1;
	conversion_from_rate(&conv, st.rate_millihz ? st.rate_millihz : 2000000000000ull);
	floor_start = counter_read_ordered();
	floor_base = now_ns();

	double results[VARIANTS][ROUNDS];
	for (int r = 0; r < ROUNDS; r++)
		for (int v = 0; v < VARIANTS; v++)
			results[v][r] = run(v, v == SYSCALL ? calls / 20 : calls);
	double median[VARIANTS];
	for (int v = 0; v < VARIANTS; v++) {
		qsort(results[v], ROUNDS, sizeof(double), compare);
		median[v] = results[v][ROUNDS / 2];
	}
	printf("shim loaded=%d active=%d %s\n", status != NULL, st.active, fenced ? "fenced" : "unfenced");
	for (int v = 0; v < VARIANTS; v++)
		printf("%-8s %8.2f ns/call  (min %.2f, max %.2f over %d rounds)\n", names[v], median[v],
		       results[v][0], results[v][ROUNDS - 1], ROUNDS);
	double together[ROUNDS];
	for (int r = 0; r < ROUNDS; r++)
		together[r] = concurrent(2, calls);
	qsort(together, ROUNDS, sizeof(double), compare);
	printf("shim, 2 threads at once: %.2f ns/call in the slower thread (median of %d rounds), %.3f x one thread\n",
	       together[ROUNDS / 2], ROUNDS, together[ROUNDS / 2] / median[SHIM]);
	printf("ratio shim/floor %.3f  shim/vdso %.3f  vdso/shim %.2f  syscall/shim %.1f\n",
	       median[SHIM] / median[FLOOR], median[SHIM] / median[VDSO],
	       median[VDSO] / median[SHIM], median[SYSCALL] / median[SHIM]);
	return 0;
}
