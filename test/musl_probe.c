/* A program bats/musl.bats runs under the shim, built against musl (make musl:
 * build-musl/test/musl_probe). What probe_clock does not cover there:
 *   musl_probe entry N BOUND_NS    N bracketed reads through each interposed entry point
 *                                  (clock_gettime for each served clock, gettimeofday,
 *                                  timespec_get) against the clock_gettime system call;
 *                                  fails beyond BOUND_NS (gettimeofday: 1 us more, its
 *                                  truncation)
 *   musl_probe time N              one clock_gettime(CLOCK_MONOTONIC) (the shim decides at
 *                                  a served clock's first read), then N calls to time():
 *                                  musl reads its clock inside libc, where no preload
 *                                  reaches (the stats show none)
 *   musl_probe threads             threads=<Threads: of /proc/self/status> active=...
 *                                  from_cache=... reason=...: what the shim left behind
 *                                  (probe_threads needs glibc's __libc_single_threaded)
 *   musl_probe fork CHILDREN BOUND_NS
 *                                  3 threads read the clock while the main thread forks
 *                                  CHILDREN children; each reads MONOTONIC at once, 20000
 *                                  times: never below what the parent read before the fork,
 *                                  never backwards, within BOUND_NS of the kernel */
#define _GNU_SOURCE
#include "tscshim.h"

#include "kernel_ns.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How far v lies outside [before, after]. */
static int64_t outside(int64_t v, int64_t before, int64_t after)
{
	return v < before ? before - v : v > after ? v - after : 0;
}

static int entry(long n, int64_t bound)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
	static const char *names[] = {"clock_gettime(MONOTONIC)", "clock_gettime(MONOTONIC_RAW)",
				      "clock_gettime(BOOTTIME)", "clock_gettime(REALTIME)",
				      "gettimeofday", "timespec_get(TIME_UTC)"};
	int failed = 0;
	for (int e = 0; e < 6; e++) {
		clockid_t ref = e < 4 ? clocks[e] : CLOCK_REALTIME;
		int64_t worst = 0;
		for (long i = 0; i < n; i++) {
			int64_t before = kernel_ns(ref), v;
			struct timespec ts = {0, 0};
			struct timeval tv = {0, 0};
			int rc = 0;
			if (e < 4) {
				rc = clock_gettime(clocks[e], &ts);
				v = ns_of(&ts);
			} else if (e == 4) {
				rc = gettimeofday(&tv, NULL);
				v = (int64_t)tv.tv_sec * 1000000000 + tv.tv_usec * 1000;
			} else {
				rc = timespec_get(&ts, TIME_UTC) == TIME_UTC ? 0 : -1;
				v = ns_of(&ts);
			}
			int64_t after = kernel_ns(ref);
			if (rc != 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000 || tv.tv_usec < 0 ||
			    tv.tv_usec >= 1000000) {
				printf("%s: rc=%d or not normalized\n", names[e], rc);
				failed = 1;
			}
			/* gettimeofday truncates to the microsecond: up to 999 ns below. */
			int64_t err = outside(v, before - (e == 4 ? 999 : 0), after);
			if (err > worst)
				worst = err;
			/* Sparse calls in the middle: lines expire between them. */
			if (i >= n / 3 && i < n / 3 + 100)
				usleep(700);
		}
		printf("%s: worst error outside the system-call bracket %lld ns\n", names[e], (long long)worst);
		if (worst > bound)
			failed = 1;
	}
	return failed;
}

static int call_time(long n)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	time_t last = 0;
	for (long i = 0; i < n; i++) {
		time_t t = time(NULL);
		if (t < last)
			return 1;
		last = t;
	}
	return 0;
}

static int threads(void)
{
	int count = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &count) == 1)
			break;
	if (f)
		fclose(f);
	struct tscshim_status st;
	memset(&st, 0, sizeof st);
	int (*status)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	if (status)
		status(&st);
	printf("threads=%d active=%d from_cache=%d\nreason=%s\n", count, st.active, st.from_cache, st.reason);
	return 0;
}

static atomic_bool stop;

static void *spin(void *arg)
{
	(void)arg;
	struct timespec ts;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return NULL;
}

static int child(int64_t parent_last, int64_t bound)
{
	int64_t last = parent_last;
	for (int i = 0; i < 20000; i++) {
		struct timespec ts;
		int64_t before = kernel_ns(CLOCK_MONOTONIC);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t after = kernel_ns(CLOCK_MONOTONIC);
		int64_t v = ns_of(&ts);
		if (v < last)
			return 1;
		if (outside(v, before, after) > bound)
			return 2;
		last = v;
	}
	return 0;
}

static int forks(int children, int64_t bound)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	int bad = 0;
	for (int i = 0; i < children; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		pid_t pid = fork();
		if (pid == 0)
			_exit(child(ns_of(&ts), bound));
		int status = -1;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("child %d: status %d\n", i, status);
			bad++;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("children=%d bad=%d\n", children, bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "entry") == 0)
		return entry(atol(argv[2]), atoll(argv[3]));
	if (argc == 3 && strcmp(argv[1], "time") == 0)
		return call_time(atol(argv[2]));
	if (argc == 2 && strcmp(argv[1], "threads") == 0)
		return threads();
	if (argc == 4 && strcmp(argv[1], "fork") == 0)
		return forks(atoi(argv[2]), atoll(argv[3]));
	fprintf(stderr, "usage: musl_probe entry N BOUND_NS | time N | threads | fork CHILDREN BOUND_NS\n");
	return 2;
}
