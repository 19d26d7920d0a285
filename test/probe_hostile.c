/* The served clocks in front of a hostile kernel clock (build/test/librefclock.so,
 * preloaded after the shim: noisy, failing, out of order, frozen, stepping, slow). Run by
 * bats/hostile.bats (short) and `make soak` (long).
 *
 *   probe_hostile SECONDS THREADS LIMIT_NS SETTLE_US [monotonic-reference]
 *   (TSCTEST_PROBE_READS=N: N readings on each side, where the double's own readings
 *   are sometimes out of order; default 1)
 *
 * THREADS threads read CLOCK_MONOTONIC, MONOTONIC_RAW, BOOTTIME and REALTIME in turn for
 * SECONDS. Each reading is taken between two readings of the clock as the shim sees it
 * (tsctest_reference: the double's own draws of the same misbehaviour) and sorted by
 * what the double saw: a call that reached the double and returned its value passed
 * through; any other was served by the shim. The promises checked:
 *  - a call that fails reached the kernel's clock and returns its error (EINVAL, the
 *    double's): the shim never invents a failure;
 *  - every value returned is a time (0 <= tv_nsec < 1e9, tv_sec >= 0);
 *  - a served value lies within LIMIT_NS of the readings around it, unless the
 *    clock changed course (a freeze, a step, its misbehaviour beginning) or the shim
 *    decided less than SETTLE_US before: a change of course, and a misbehaviour the
 *    decision met, show in the served clock within a few re-synchronizations (a
 *    noise's size is a statistic of several anchors' readings);
 *  - a served value of MONOTONIC, MONOTONIC_RAW or BOOTTIME is never below an earlier
 *    served one on its thread; with "monotonic-reference" (the double itself never steps
 *    back: failures, freezes, forward steps, slow reads) no value at all is below an
 *    earlier one.
 * Prints one line per clock, then the shim's status; exits 1 on a broken promise, 2 on
 * a usage error. */
#define _GNU_SOURCE
#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int (*reference)(clockid_t, struct timespec *);
static uint64_t (*last_call)(clockid_t, int64_t *);
static int64_t (*settled_ns)(clockid_t);

static const struct {
	clockid_t id;
	const char *name;
	bool monotonic;
} clocks[] = {
	{CLOCK_MONOTONIC, "monotonic", true},
	{CLOCK_MONOTONIC_RAW, "monotonic_raw", true},
	{CLOCK_BOOTTIME, "boottime", true},
	{CLOCK_REALTIME, "realtime", false},
};
enum { CLOCKS = sizeof clocks / sizeof *clocks };

static double seconds;
static int64_t limit_ns, settle_ns;
static bool reference_monotonic;
static int reads_around = 1;
static _Atomic bool stop;

struct tally {
	long reads, served, passed, failed, checked, over, backwards, garbage, invented;
	int64_t worst_ns;
};

struct reader {
	pthread_t thread;
	struct tally t[CLOCKS];
};

static _Atomic int reports;
static int64_t decided_at_ns; /* CLOCK_MONOTONIC (the system call) when the decision was made */

static void report(const char *what, int clock, int64_t a, int64_t b)
{
	if (atomic_fetch_add(&reports, 1) < 12)
		printf("# %s: %s %lld %lld\n", clocks[clock].name, what, (long long)a, (long long)b);
}

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* True time, through the system call: no preloaded library stands in front of it. */
static int64_t ns_now(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ns_of(&ts);
}

/* The clock as the shim sees it, retried past the double's failures (0 where it always
 * fails: nothing served is checked against that clock, there being nothing to serve). */
static int64_t reference_ns(clockid_t c)
{
	struct timespec ts;
	for (int i = 0; i < 1000; i++)
		if (reference(c, &ts) == 0)
			return ns_of(&ts);
	return 0;
}

static void read_one(int k, struct tally *t, int64_t *previous, bool *previous_served)
{
	clockid_t c = clocks[k].id;
	int64_t since_decision = ns_now() - decided_at_ns;
	int64_t quiet_before = settled_ns(c);
	if (since_decision < quiet_before)
		quiet_before = since_decision;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < reads_around; i++) {
		int64_t r = reference_ns(c);
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	int64_t unused;
	uint64_t calls_before = last_call(c, &unused);
	struct timespec ts = {.tv_sec = -1, .tv_nsec = -1};
	errno = 0;
	int rc = clock_gettime(c, &ts);
	int saved_errno = errno;
	int64_t last;
	uint64_t calls_after = last_call(c, &last);
	for (int i = 0; i < reads_around; i++) {
		int64_t r = reference_ns(c);
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	int64_t quiet_after = settled_ns(c);
	t->reads++;
	if (rc != 0) {
		t->failed++;
		if (calls_after == calls_before || saved_errno != EINVAL) {
			t->invented++;
			report("a failure the kernel's clock did not return: errno", k, saved_errno, 0);
		}
		return;
	}
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
		t->garbage++;
		report("not a time", k, ts.tv_sec, ts.tv_nsec);
		return;
	}
	int64_t v = ns_of(&ts);
	bool served = !(calls_after > calls_before && v == last);
	if (served) {
		t->served++;
		if (quiet_before >= settle_ns && quiet_after >= settle_ns) {
			int64_t error = v < lo ? lo - v : v > hi ? v - hi : 0;
			t->checked++;
			if (error > t->worst_ns)
				t->worst_ns = error;
			if (error > limit_ns) {
				t->over++;
				report("served beyond the bound of the readings around it: value - lowest, - highest", k,
				       v - lo, v - hi);
			}
		}
	} else {
		t->passed++;
	}
	if (clocks[k].monotonic && v < *previous &&
	    (reference_monotonic || (served && *previous_served))) {
		t->backwards++;
		report(served ? "served a value below an earlier one by" : "passed a value below an earlier one by", k,
		       *previous - v, 0);
	}
	*previous = v;
	*previous_served = served;
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	int64_t previous[CLOCKS] = {0};
	bool previous_served[CLOCKS] = {false};
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		for (int k = 0; k < CLOCKS; k++)
			read_one(k, &r->t[k], &previous[k], &previous_served[k]);
	return NULL;
}

static void decide_now(void)
{
	int (*sized)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status s;
	if (sized)
		sized(&s, sizeof s);
}

static void print_status(void)
{
	int (*sized)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (sized)
		sized(&s, sizeof s);
	printf("status: loaded=%d active=%d served_clocks=%u stopped_clocks=%u causes=%u,%u,%u,%u resyncs=%llu "
	       "reanchors=%llu stops=%llu held_reads=%llu unreadable_anchors=%llu reason=%s\n",
	       sized != NULL, s.active, s.served_clocks, s.stopped_clocks, s.stop_cause[0], s.stop_cause[1],
	       s.stop_cause[2], s.stop_cause[3], (unsigned long long)s.resyncs, (unsigned long long)s.reanchors,
	       (unsigned long long)s.stops, (unsigned long long)s.held_reads,
	       (unsigned long long)s.unreadable_anchors, s.reason);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5 || argc > 6 || (argc == 6 && strcmp(argv[5], "monotonic-reference") != 0)) {
		fprintf(stderr, "usage: see the comment at the top of test/probe_hostile.c\n");
		return 2;
	}
	seconds = atof(argv[1]);
	int threads = atoi(argv[2]);
	limit_ns = atoll(argv[3]);
	settle_ns = atoll(argv[4]) * 1000;
	reference_monotonic = argc == 6;
	const char *reads = getenv("TSCTEST_PROBE_READS");
	if (reads && atoi(reads) > 0)
		reads_around = atoi(reads);
	reference = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_DEFAULT, "tsctest_reference");
	last_call = (uint64_t(*)(clockid_t, int64_t *))dlsym(RTLD_DEFAULT, "tsctest_last");
	settled_ns = (int64_t(*)(clockid_t))dlsym(RTLD_DEFAULT, "tsctest_settled_ns");
	if (!reference || !last_call || !settled_ns || threads < 1 || threads > 64) {
		fprintf(stderr, "probe_hostile: needs build/test/librefclock.so preloaded after the shim\n");
		return 2;
	}
	/* The decision, now (with TSCSHIM_DECIDE_AFTER=1 as the suites set it, the first read
	 * would make it anyway): its moment starts the settling. */
	decide_now();
	decided_at_ns = ns_now();
	struct reader *r = calloc((size_t)threads, sizeof *r);
	for (int i = 0; i < threads; i++)
		pthread_create(&r[i].thread, NULL, reader_main, &r[i]);
	struct timespec nap = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
		;
	atomic_store(&stop, true);
	struct tally all[CLOCKS];
	memset(all, 0, sizeof all);
	for (int i = 0; i < threads; i++) {
		pthread_join(r[i].thread, NULL);
		for (int k = 0; k < CLOCKS; k++) {
			struct tally *a = &all[k], *t = &r[i].t[k];
			a->reads += t->reads, a->served += t->served, a->passed += t->passed;
			a->failed += t->failed, a->checked += t->checked, a->over += t->over;
			a->backwards += t->backwards, a->garbage += t->garbage, a->invented += t->invented;
			if (t->worst_ns > a->worst_ns)
				a->worst_ns = t->worst_ns;
		}
	}
	bool broken = false;
	for (int k = 0; k < CLOCKS; k++) {
		struct tally *a = &all[k];
		printf("hostile: clock=%s reads=%ld served=%ld passed=%ld failed=%ld checked=%ld worst_ns=%lld "
		       "over=%ld backwards=%ld garbage=%ld invented=%ld\n",
		       clocks[k].name, a->reads, a->served, a->passed, a->failed, a->checked,
		       (long long)a->worst_ns, a->over, a->backwards, a->garbage, a->invented);
		broken |= a->over || a->backwards || a->garbage || a->invented;
	}
	print_status();
	free(r);
	return broken;
}
