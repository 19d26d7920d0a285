/* A process for `tscshim ps` to look at (bats/ps.bats): it gets into a state, says
 * "ready" on stdout, and waits to be killed.
 *   probe_ps reads N    N reads of CLOCK_MONOTONIC (with the shim: undecided below
 *                       TSCSHIM_DECIDE_AFTER, decided from it on)
 *   probe_ps status     a status query (the shim decides at it)
 *   probe_ps held       with the test build of the shim (libtscshim-hooks.so): one read,
 *                       whose decision is held where the clock's first line is being
 *                       published, for good (mid-decision: the block says undecided)
 *   probe_ps fork N     N reads, then a fork child; says "ready CHILD_PID"
 *   probe_ps stopped    reads until the counter serves no clock (tscshim_status's active
 *                       0): with the hostile kernel-clock double preloaded after the shim
 *                       (test/lib_refclock.c), a line that stopped
 *   probe_ps thread     a thread that waits; says "ready TID" (the thread's id)
 *   probe_ps maps N FILE
 *                       maps FILE's first page N times, apart (each a line of its own in
 *                       /proc/PID/maps: with a long path, tens of megabytes of it)
 * Exit status 2 for a bad invocation, 3 where `held` has no test hook (or `stopped` no
 * tscshim_status), 5 where `stopped` read for a minute and serving never stopped. */
#define _GNU_SOURCE
#include "tscshim.h"

#include "test_points.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void say_ready(void)
{
	static const char ready[] = "ready\n";
	if (write(STDOUT_FILENO, ready, sizeof ready - 1) != (ssize_t)(sizeof ready - 1))
		_exit(4);
}

static void wait_for_ever(void)
{
	for (;;)
		pause();
}

static void reads(long n)
{
	struct timespec ts;
	for (long i = 0; i < n; i++)
		if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
			exit(4);
}

/* Reads (each one a chance for a re-synchronization, which is what stops a line) until
 * the status says nothing is served any more. The minute is a guard against a line that
 * never stops, not a measure: the test waits for "ready", however long this takes. */
static int read_until_stopped(void)
{
	int (*status)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	if (!status)
		return 3;
	struct timespec start, now;
	if (clock_gettime(CLOCK_MONOTONIC, &start) != 0)
		return 4;
	for (;;) {
		reads(1000);
		struct tscshim_status st;
		status(&st);
		if (!st.active)
			return 0;
		if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
			return 4;
		if (now.tv_sec - start.tv_sec > 60)
			return 5;
	}
}

/* In the decision, every signal blocked: only SIGKILL ends the process from here. */
static void hold_at_publication(int point)
{
	if (point != TEST_POINT_CLAIMED)
		return;
	say_ready();
	wait_for_ever();
}

static pthread_mutex_t thread_said = PTHREAD_MUTEX_INITIALIZER;
static long thread_id;

static void *waiting_thread(void *arg)
{
	(void)arg;
	thread_id = syscall(SYS_gettid);
	pthread_mutex_unlock(&thread_said);
	wait_for_ever();
	return NULL;
}

/* FILE's first page mapped n times, each with a page left unmapped after it so that no
 * two merge into one line. */
static int map_many(long n, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 4;
	char *area = mmap(NULL, (size_t)n * 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return 4;
	for (long i = 0; i < n; i++) {
		if (mmap(area + i * 2 * 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED ||
		    munmap(area + i * 2 * 4096 + 4096, 4096) != 0)
			return 4;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "reads") == 0) {
		reads(atol(argv[2]));
	} else if (argc == 2 && strcmp(argv[1], "status") == 0) {
		int (*status)(struct tscshim_status *) =
			(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
		struct tscshim_status st;
		if (status)
			status(&st);
	} else if (argc == 2 && strcmp(argv[1], "held") == 0) {
		void (**hook)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
		if (!hook)
			return 3;
		*hook = hold_at_publication;
		reads(1);
		return 3; /* the hook was never reached */
	} else if (argc == 3 && strcmp(argv[1], "fork") == 0) {
		reads(atol(argv[2]));
		pid_t child = fork();
		if (child < 0)
			return 4;
		if (child == 0)
			wait_for_ever();
		printf("ready %d\n", (int)child);
		fflush(stdout);
		wait_for_ever();
	} else if (argc == 2 && strcmp(argv[1], "thread") == 0) {
		pthread_t t;
		pthread_mutex_lock(&thread_said);
		if (pthread_create(&t, NULL, waiting_thread, NULL) != 0)
			return 4;
		pthread_mutex_lock(&thread_said);
		printf("ready %ld\n", thread_id);
		fflush(stdout);
		wait_for_ever();
	} else if (argc == 4 && strcmp(argv[1], "maps") == 0) {
		int rc = map_many(atol(argv[2]), argv[3]);
		if (rc != 0)
			return rc;
	} else if (argc == 2 && strcmp(argv[1], "stopped") == 0) {
		int rc = read_until_stopped();
		if (rc != 0)
			return rc;
	} else {
		fprintf(stderr, "usage: probe_ps reads N | status | held | fork N | stopped | thread | maps N FILE\n");
		return 2;
	}
	say_ready();
	wait_for_ever();
}
