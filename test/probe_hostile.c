/* The served clocks in front of a hostile kernel clock (build/test/librefclock.so,
 * preloaded after the shim: noisy, failing, out of order, frozen, stepping, slow). Run by
 * bats/hostile.bats (short) and `make soak` (long).
 *
 *   probe_hostile SECONDS THREADS LIMIT_NS SETTLE_US [monotonic-reference]
 *   (TSCTEST_PROBE_READS=N: N readings on each side, where the double's own readings
 *   are sometimes out of order; default 1. TSCTEST_PROBE_BACK_MOST_NS=N: the double
 *   steps back by at most N ns (its readings out of order), and no value may go back
 *   further, served or passed through. TSCTEST_PAUSE_WRITERS_US=N, with
 *   build/test/libtscshim-hooks.so in the shim's place: while a misbehaving clock is
 *   frozen, each writer pauses N us once it has its anchor, so that the second anchor it
 *   takes to confirm a fault comes past the line's hard end, as a preempted writer's may;
 *   with TSCTEST_PAUSE_EVERY_WRITER=1, every writer, so that lines lapse and readers read
 *   the kernel's clock past their hard ends. TSCTEST_PAUSE_HELD_US=N, with the hooks
 *   build: the first thread pauses N us in each read of a stopped clock, between its
 *   kernel reading and its comparison with what the clock held, while the others read on)
 *
 * THREADS threads read CLOCK_MONOTONIC, MONOTONIC_RAW, BOOTTIME and REALTIME in turn for
 * SECONDS, each reading checked by test/hostile_check.h:
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
#include "hostile_check.h"
#include "test_points.h"
#include "tscshim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct hostile_double dbl;
static struct hostile_limits limits = {.reads_around = 1, .reference_tries = 1000};
static _Atomic bool stop;

static int64_t pause_writers_ns;
static bool pause_every_writer; /* TSCTEST_PAUSE_EVERY_WRITER=1: not only while a clock is frozen */
static int64_t pause_held_ns;    /* TSCTEST_PAUSE_HELD_US */
static __thread bool pauses_held_reads; /* the first reader thread */

static void pause_for(int64_t ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The hooks build's test point: a writer with its anchor, paused while a clock is frozen
 * (tsctest_settled_ns 0), the double's own clock read through it, not the shim. */
static void pause_writer(int point)
{
	if (point == TEST_POINT_HELD_READ && pauses_held_reads && pause_held_ns)
		pause_for(pause_held_ns);
	if (point != TEST_POINT_ANCHORED || !pause_writers_ns)
		return;
	for (int k = 0; k < HOSTILE_CLOCKS; k++)
		if (pause_every_writer || dbl.settled_ns(hostile_clocks[k].id) == 0) {
			pause_for(pause_writers_ns);
			return;
		}
}

struct reader {
	pthread_t thread;
	bool first;
	struct hostile_tally t[HOSTILE_CLOCKS];
};

static void *reader_main(void *p)
{
	struct reader *r = p;
	pauses_held_reads = r->first;
	int64_t previous[HOSTILE_CLOCKS] = {0};
	bool previous_served[HOSTILE_CLOCKS] = {false};
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		for (int k = 0; k < HOSTILE_CLOCKS; k++)
			hostile_read_one(&dbl, &limits, k, &r->t[k], &previous[k], &previous_served[k]);
	return NULL;
}

static int (*status_sized(void))(struct tscshim_status *, size_t)
{
	return (int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
}

static void print_status(void)
{
	int (*sized)(struct tscshim_status *, size_t) = status_sized();
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (sized)
		sized(&s, sizeof s);
	printf("status: loaded=%d active=%d served_clocks=%u stopped_clocks=%u causes=%u,%u,%u,%u resyncs=%llu "
	       "reanchors=%llu stops=%llu held_reads=%llu unreadable_anchors=%llu resumes=%llu reason=%s\n",
	       sized != NULL, s.active, s.served_clocks, s.stopped_clocks, s.stop_cause[0], s.stop_cause[1],
	       s.stop_cause[2], s.stop_cause[3], (unsigned long long)s.resyncs, (unsigned long long)s.reanchors,
	       (unsigned long long)s.stops, (unsigned long long)s.held_reads,
	       (unsigned long long)s.unreadable_anchors, (unsigned long long)s.resumes, s.reason);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	double seconds;
	int threads;
	if (!hostile_parse_args(argc, argv, "probe_hostile", &limits, &seconds, &threads))
		return 2;
	if (!hostile_double_find(&dbl) || threads < 1 || threads > 64) {
		fprintf(stderr, "probe_hostile: needs build/test/librefclock.so preloaded after the shim\n");
		return 2;
	}
	const char *pause = getenv("TSCTEST_PAUSE_WRITERS_US"), *held = getenv("TSCTEST_PAUSE_HELD_US");
	pause_writers_ns = pause ? atoll(pause) * 1000 : 0;
	pause_held_ns = held ? atoll(held) * 1000 : 0;
	if (pause_writers_ns > 0 || pause_held_ns > 0) {
		void (**hook)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
		if (!hook || pause_writers_ns >= 1000000000 || pause_held_ns >= 1000000000) {
			fprintf(stderr, "probe_hostile: TSCTEST_PAUSE_WRITERS_US and TSCTEST_PAUSE_HELD_US need "
					"build/test/libtscshim-hooks.so and under a second\n");
			return 2;
		}
		const char *every = getenv("TSCTEST_PAUSE_EVERY_WRITER");
		pause_every_writer = every && strcmp(every, "1") == 0;
		*hook = pause_writer;
	}
	/* The decision, now (with TSCSHIM_DECIDE_AFTER=1 as the suites set it, the first read
	 * would make it anyway): its moment starts the settling. */
	struct tscshim_status s;
	if (status_sized())
		status_sized()(&s, sizeof s);
	limits.decided_at_ns = kernel_ns(CLOCK_MONOTONIC);
	struct reader *r = calloc((size_t)threads, sizeof *r);
	r[0].first = true;
	for (int i = 0; i < threads; i++)
		pthread_create(&r[i].thread, NULL, reader_main, &r[i]);
	struct timespec nap = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
		;
	atomic_store(&stop, true);
	struct hostile_tally all[HOSTILE_CLOCKS];
	memset(all, 0, sizeof all);
	for (int i = 0; i < threads; i++) {
		pthread_join(r[i].thread, NULL);
		for (int k = 0; k < HOSTILE_CLOCKS; k++)
			hostile_tally_add(&all[k], &r[i].t[k]);
	}
	bool broken = hostile_tally_print(all);
	print_status();
	free(r);
	return broken;
}
