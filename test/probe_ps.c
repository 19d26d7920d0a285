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
 * Exit status 2 for a bad invocation, 3 where `held` has no test hook (or `stopped` no
 * tscshim_status), 5 where `stopped` read for a minute and serving never stopped. */
#define _GNU_SOURCE
#include "tscshim.h"

#include "test_points.h"

#include <dlfcn.h>
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
	} else if (argc == 2 && strcmp(argv[1], "stopped") == 0) {
		int rc = read_until_stopped();
		if (rc != 0)
			return rc;
	} else {
		fprintf(stderr, "usage: probe_ps reads N | status | held | fork N | stopped\n");
		return 2;
	}
	say_ready();
	wait_for_ever();
}
