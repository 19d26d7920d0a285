/* A test program the bats suite runs with and without the shim.
 *   probe_clock status [read|thread]   the shim's query API, found with dlsym (after one
 *                                      read of CLOCK_MONOTONIC with "read": the decision
 *                                      then comes from that read, not from the query; with
 *                                      "thread", after a thread was created and joined)
 *   probe_clock compare N BOUND_NS     N bracketed reads per served clock against the
 *                                      clock_gettime system call; fails beyond BOUND_NS
 *   probe_clock monotonic MS THREADS   threads read MONOTONIC/RAW/BOOTTIME for MS ms;
 *                                      fails on any step back
 *   probe_clock passthrough            unserved and invalid clocks behave as the kernel's
 *   probe_clock loop N                 N calls to clock_gettime(CLOCK_MONOTONIC)
 *   probe_clock mixed U S              U calls to clock_gettime(CLOCK_REALTIME), then S
 *                                      to CLOCK_MONOTONIC
 *   probe_clock dlopen LIB             dlopens LIB (whose constructor reads the clock),
 *                                      calls its early_read_ns() and checks it against
 *                                      the kernel's CLOCK_MONOTONIC
 *   probe_clock condwait MS            pthread_cond_timedwait on a CLOCK_MONOTONIC
 *                                      condition, deadline from the (served) clock;
 *                                      prints the kernel-measured wait in ms */
#define _GNU_SOURCE
#include "tscshim.h"

#include "kernel_ns.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int status(void)
{
	int (*fn)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	if (!fn) {
		printf("loaded=0\n");
		return 0;
	}
	struct tscshim_status s;
	fn(&s);
	printf("loaded=1\nactive=%d\nreason=%s\nrate_millihz=%llu\nfenced=%d\nfrom_cache=%d\nserved=%u\n",
	       s.active, s.reason, (unsigned long long)s.rate_millihz, s.fenced, s.from_cache,
	       s.served_clocks);
	return 0;
}

static int compare(long n, int64_t bound)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
	static const char *names[] = {"monotonic", "monotonic_raw", "boottime", "realtime"};
	int failed = 0;
	for (int c = 0; c < 4; c++) {
		int64_t worst = 0;
		for (long i = 0; i < n; i++) {
			struct timespec ts;
			int64_t before = kernel_ns(clocks[c]);
			clock_gettime(clocks[c], &ts);
			int64_t after = kernel_ns(clocks[c]);
			if (ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
				printf("%s: tv_nsec %ld not normalized\n", names[c], ts.tv_nsec);
				failed = 1;
			}
			int64_t v = ns_of(&ts);
			int64_t err = v < before ? before - v : v > after ? v - after : 0;
			if (err > worst)
				worst = err;
			/* Dense calls, then sparse ones (lines expire between calls, and each
			 * clock is anchored again), then dense again. */
			if (i >= n / 3 && i < n / 3 + 300)
				usleep(700);
		}
		printf("%s: worst error outside the system-call bracket %lld ns\n", names[c], (long long)worst);
		if (worst > bound)
			failed = 1;
	}
	struct timeval tv;
	int64_t before = kernel_ns(CLOCK_REALTIME);
	gettimeofday(&tv, NULL);
	int64_t after = kernel_ns(CLOCK_REALTIME);
	int64_t v = (int64_t)tv.tv_sec * 1000000000 + tv.tv_usec * 1000;
	if (v < before - 1000 - bound || v > after + bound) {
		printf("gettimeofday out of bracket\n");
		failed = 1;
	}
	return failed;
}

struct mono_arg {
	long ms;
	long violations, calls;
};

static void *mono_thread(void *p)
{
	struct mono_arg *a = p;
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME};
	int64_t last[3] = {0, 0, 0};
	int64_t end = kernel_ns(CLOCK_MONOTONIC) + a->ms * 1000000;
	for (;;) {
		for (int c = 0; c < 3; c++) {
			struct timespec ts;
			clock_gettime(clocks[c], &ts);
			int64_t v = ns_of(&ts);
			if (v < last[c])
				a->violations++;
			last[c] = v;
			a->calls++;
		}
		if ((a->calls & 1023) == 0 && kernel_ns(CLOCK_MONOTONIC) > end)
			break;
	}
	return NULL;
}

static int monotonic(long ms, int threads)
{
	pthread_t t[64];
	struct mono_arg a[64];
	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++) {
		a[i] = (struct mono_arg){.ms = ms};
		pthread_create(&t[i], NULL, mono_thread, &a[i]);
	}
	long violations = 0, calls = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		violations += a[i].violations;
		calls += a[i].calls;
	}
	printf("threads=%d calls=%ld violations=%ld\n", threads, calls, violations);
	return violations != 0;
}

static int passthrough(void)
{
	int failed = 0;
	struct timespec ts;
	errno = 0;
	int rc = clock_gettime((clockid_t)12345, &ts);
	if (rc != -1 || errno != EINVAL) {
		printf("invalid clock: rc=%d errno=%d\n", rc, errno);
		failed = 1;
	}
	static const clockid_t others[] = {CLOCK_MONOTONIC_COARSE, CLOCK_REALTIME_COARSE,
					   CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_TAI};
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		errno = 0;
		rc = clock_gettime(others[i], &ts);
		if (rc != 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
			printf("clock %d: rc=%d errno=%d\n", (int)others[i], rc, errno);
			failed = 1;
		}
	}
	struct timespec t2;
	if (timespec_get(&t2, TIME_UTC) != TIME_UTC || timespec_get(&t2, 0) != 0) {
		printf("timespec_get\n");
		failed = 1;
	}
	printf("passthrough %s\n", failed ? "FAILED" : "ok");
	return failed;
}

static int condwait(long ms)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_t cond;
	pthread_cond_init(&cond, &attr);
	pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	int64_t d = ns_of(&deadline) + ms * 1000000;
	deadline.tv_sec = (time_t)(d / 1000000000);
	deadline.tv_nsec = (long)(d % 1000000000);
	int64_t start = kernel_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&mutex);
	int rc;
	do
		rc = pthread_cond_timedwait(&cond, &mutex, &deadline);
	while (rc == 0);
	pthread_mutex_unlock(&mutex);
	printf("%lld\n", (long long)((kernel_ns(CLOCK_MONOTONIC) - start) / 1000000));
	return rc == ETIMEDOUT ? 0 : 1;
}

static int dlopened(const char *path)
{
	void *lib = dlopen(path, RTLD_NOW);
	if (!lib) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	long long (*read_ns)(void) = (long long (*)(void))dlsym(lib, "early_read_ns");
	if (!read_ns) {
		printf("dlsym: %s\n", dlerror());
		return 1;
	}
	int64_t before = kernel_ns(CLOCK_MONOTONIC);
	long long v = read_ns();
	int64_t after = kernel_ns(CLOCK_MONOTONIC);
	int ok = v >= before - 1000 && v <= after + 1000;
	printf("dlopen read %s\n", ok ? "ok" : "FAILED");
	dlclose(lib);
	return !ok;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "dlopen") == 0)
		return dlopened(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "condwait") == 0)
		return condwait(atol(argv[2]));
	if (argc >= 2 && strcmp(argv[1], "status") == 0) {
		struct timespec ts;
		if (argc >= 3 && strcmp(argv[2], "read") == 0)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		if (argc >= 3 && strcmp(argv[2], "thread") == 0) {
			/* No longer the only thread: the decision marks its page wiped on fork. */
			pthread_t t;
			if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0)
				return 2;
		}
		return status();
	}
	if (argc >= 4 && strcmp(argv[1], "compare") == 0)
		return compare(atol(argv[2]), atoll(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "monotonic") == 0)
		return monotonic(atol(argv[2]), atoi(argv[3]));
	if (argc >= 2 && strcmp(argv[1], "passthrough") == 0)
		return passthrough();
	if (argc >= 3 && strcmp(argv[1], "loop") == 0) {
		struct timespec ts;
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "mixed") == 0) {
		struct timespec ts;
		for (long i = atol(argv[2]); i > 0; i--)
			clock_gettime(CLOCK_REALTIME, &ts);
		for (long i = atol(argv[3]); i > 0; i--)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		return 0;
	}
	fprintf(stderr, "usage: probe_clock status [read]|compare N BOUND|monotonic MS THREADS|passthrough|loop N|mixed U S\n");
	return 2;
}
