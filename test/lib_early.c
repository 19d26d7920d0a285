/* Preloaded beside the shim by the bats tests: its constructor reads the clocks, possibly
 * before the shim's constructor has run. Prints what it got. */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

__attribute__((constructor)) static void read_early(void)
{
	struct timespec ts = {-1, -1};
	struct timeval tv = {-1, -1};
	struct timespec coarse = {-1, -1};
	int a = clock_gettime(CLOCK_MONOTONIC, &ts);
	int b = gettimeofday(&tv, NULL);
	/* A clock the counter never serves: its first call may come before the shim's load. */
	int c = clock_gettime(CLOCK_MONOTONIC_COARSE, &coarse);
	int ok = a == 0 && b == 0 && c == 0 && ts.tv_sec > 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000 &&
		 tv.tv_sec > 1000000000 && coarse.tv_sec > 0 && coarse.tv_nsec >= 0 && coarse.tv_nsec < 1000000000;
	fprintf(stderr, "early %s\n", ok ? "ok" : "FAILED");
}

/* For the dlopen test: a clock read from code loaded after the shim. */
__attribute__((visibility("default"))) long long early_read_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return -1;
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
