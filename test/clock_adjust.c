/* Opt-in (make test-clock-adjust, as root): changes the machine's clock, and restores it
 * on every exit path (normal exit, failure, SIGINT/SIGTERM/SIGHUP).
 *   1. Slews the kernel's frequency to +500 ppm, then -500 ppm (adjtimex ADJ_FREQUENCY),
 *      SECONDS each, while this process (run under the shim) compares every served clock
 *      with the clock_gettime system call: prints the largest error beyond the bracket.
 *   2. Steps the wall clock forward by 0.5 s and measures how long the shim's REALTIME
 *      takes to show the step; then steps it back by the same amount.
 * Exit status 1 if an error exceeds BOUND_NS or the step shows later than 10 ms. */
#define _GNU_SOURCE
#include "kernel_ns.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

static struct timex saved;
static volatile sig_atomic_t have_saved;

static void restore(void)
{
	if (!have_saved)
		return;
	struct timex tx = {.modes = ADJ_FREQUENCY, .freq = saved.freq};
	adjtimex(&tx);
}

static void on_signal(int sig)
{
	restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int64_t shim_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t worst_error(double seconds)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME};
	static const char *names[] = {"monotonic", "monotonic_raw", "boottime", "realtime"};
	int64_t worst[4] = {0}, end = kernel_ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);
	long samples = 0;
	while (kernel_ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 4; i++) {
			int64_t a = kernel_ns(clocks[i]), v = shim_ns(clocks[i]), b = kernel_ns(clocks[i]);
			int64_t e = v < a ? a - v : v > b ? v - b : 0;
			if (e > worst[i])
				worst[i] = e;
		}
		samples++;
		usleep(samples % 2 ? 20 : 700); /* dense and sparse callers both */
	}
	int64_t all = 0;
	printf("  ");
	for (int i = 0; i < 4; i++) {
		printf("%s %lld ns  ", names[i], (long long)worst[i]);
		if (worst[i] > all)
			all = worst[i];
	}
	printf("(%ld samples)\n", samples);
	return all;
}

static int step_wall_clock(int64_t delta_ns)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now); /* the shim's value would do; use the kernel's */
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &now);
	int64_t t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + delta_ns;
	struct timespec to = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
	return clock_settime(CLOCK_REALTIME, &to);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	int64_t bound = argc > 2 ? atoll(argv[2]) : 1000;
	if (adjtimex(&saved) < 0) {
		perror("adjtimex (needs CAP_SYS_TIME)");
		return 2;
	}
	have_saved = 1;
	atexit(restore);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);

	int failed = 0;
	int64_t before = worst_error(seconds);
	printf("no slew: worst error %lld ns\n", (long long)before);
	for (int sign = 1; sign >= -1; sign -= 2) {
		struct timex tx = {.modes = ADJ_FREQUENCY, .freq = sign * 500L * 65536};
		if (adjtimex(&tx) < 0) {
			perror("adjtimex ADJ_FREQUENCY");
			return 2;
		}
		int64_t w = worst_error(seconds);
		printf("slew %+d ppm for %.1f s: worst error %lld ns (bound %lld)\n", sign * 500, seconds,
		       (long long)w, (long long)bound);
		failed |= w > bound;
	}
	restore();

	const int64_t step = 500000000;
	if (step_wall_clock(step) != 0) {
		perror("clock_settime");
		return 2;
	}
	int64_t stepped_at = kernel_ns(CLOCK_MONOTONIC), shown_after = -1;
	while (kernel_ns(CLOCK_MONOTONIC) - stepped_at < 1000000000) {
		if (llabs(shim_ns(CLOCK_REALTIME) - kernel_ns(CLOCK_REALTIME)) < 100000) {
			shown_after = kernel_ns(CLOCK_MONOTONIC) - stepped_at;
			break;
		}
	}
	step_wall_clock(-step);
	printf("wall-clock step of +0.5 s shown by the shim after %.3f ms (target <= 10 ms)\n",
	       shown_after / 1e6);
	failed |= shown_after < 0 || shown_after > 10000000;
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed;
}
