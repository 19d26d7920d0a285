/* The hostile kernel clock's promise, checked on one reading: shared by the probes that
 * stand test/lib_refclock.c behind the shim (test/probe_hostile.c, test/probe_hostile_adv.c),
 * so that both check the same thing.
 *
 * A reading is taken between readings of the clock as the shim sees it (the double's
 * tsctest_reference, misbehaving alike with draws of its own) and sorted by what the
 * double saw: a call that reached the double and returned its value passed through; any
 * other was served by the shim. The promises:
 *  - a call that fails reached the kernel's clock and returns its error (EINVAL, the
 *    double's): the shim never invents a failure;
 *  - every value returned is a time (0 <= tv_nsec < 1e9, tv_sec >= 0);
 *  - a served value lies within the limit of the readings around it, unless the clock
 *    changed course (a freeze, a step, its misbehaviour beginning) or the shim decided
 *    less than the settle time before (a change shows within a few re-synchronizations);
 *  - a served value of a monotonic clock is never below an earlier served one on its
 *    thread; where the double itself never steps back, no value at all is; where it
 *    steps back by at most TSCTEST_PROBE_BACK_MOST_NS, no value is further below. */
#ifndef TEST_HOSTILE_CHECK_H
#define TEST_HOSTILE_CHECK_H

#define _GNU_SOURCE
#include "kernel_ns.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const struct {
	clockid_t id;
	const char *name;
	bool monotonic;
} hostile_clocks[] = {
	{CLOCK_MONOTONIC, "monotonic", true},
	{CLOCK_MONOTONIC_RAW, "monotonic_raw", true},
	{CLOCK_BOOTTIME, "boottime", true},
	{CLOCK_REALTIME, "realtime", false},
};
enum { HOSTILE_CLOCKS = sizeof hostile_clocks / sizeof *hostile_clocks };

/* The double's exports (test/lib_refclock.c's header). */
struct hostile_double {
	int (*reference)(clockid_t, struct timespec *);
	uint64_t (*last_call)(clockid_t, int64_t *);
	int64_t (*settled_ns)(clockid_t);
};

/* What is checked, and against what. */
struct hostile_limits {
	int64_t limit_ns, settle_ns;
	int64_t decided_at_ns;    /* the system call's CLOCK_MONOTONIC at the decision */
	bool reference_monotonic; /* the double never steps back */
	int64_t back_most_ns;     /* where it does, by at most this (TSCTEST_PROBE_BACK_MOST_NS;
	                           * -1: not said): no value, served or not, goes further back */
	int reads_around;         /* readings on each side (more where they are out of order) */
	int reference_tries;      /* tries past the double's failures before a side has none */
};

struct hostile_tally {
	long reads, served, passed, failed, checked, over, backwards, garbage, invented;
	int64_t worst_ns;
};

static inline bool hostile_double_find(struct hostile_double *d)
{
	d->reference = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_DEFAULT, "tsctest_reference");
	d->last_call = (uint64_t(*)(clockid_t, int64_t *))dlsym(RTLD_DEFAULT, "tsctest_last");
	d->settled_ns = (int64_t(*)(clockid_t))dlsym(RTLD_DEFAULT, "tsctest_settled_ns");
	return d->reference && d->last_call && d->settled_ns;
}

static _Atomic int hostile_reports;

static inline void hostile_report(const char *what, int k, int64_t a, int64_t b)
{
	if (atomic_fetch_add(&hostile_reports, 1) < 12)
		printf("# %s: %s %lld %lld\n", hostile_clocks[k].name, what, (long long)a, (long long)b);
}

/* The readings of clock c on one side, widening [*lo, *hi]; false where the double failed
 * every try (a window of failures): then nothing is checked against that side. */
static inline bool hostile_reference(const struct hostile_double *d, const struct hostile_limits *lim, clockid_t c,
				     int64_t *lo, int64_t *hi)
{
	bool any = false;
	for (int side = 0; side < lim->reads_around; side++) {
		struct timespec ts;
		for (int i = 0; i < lim->reference_tries; i++)
			if (d->reference(c, &ts) == 0) {
				int64_t r = ns_of(&ts);
				*lo = r < *lo ? r : *lo;
				*hi = r > *hi ? r : *hi;
				any = true;
				break;
			}
	}
	return any;
}

/* One reading of clock k, checked; previous and previous_served: this thread's last
 * reading of it. */
static inline void hostile_read_one(const struct hostile_double *d, const struct hostile_limits *lim, int k,
				    struct hostile_tally *t, int64_t *previous, bool *previous_served)
{
	clockid_t c = hostile_clocks[k].id;
	int64_t since_decision = kernel_ns(CLOCK_MONOTONIC) - lim->decided_at_ns;
	int64_t quiet_before = d->settled_ns(c);
	if (since_decision < quiet_before)
		quiet_before = since_decision;
	int64_t lo = INT64_MAX, hi = INT64_MIN, unused, last;
	bool have_before = hostile_reference(d, lim, c, &lo, &hi);
	uint64_t calls_before = d->last_call(c, &unused);
	struct timespec ts = {.tv_sec = -1, .tv_nsec = -1};
	errno = 0;
	int rc = clock_gettime(c, &ts);
	int saved_errno = errno;
	uint64_t calls_after = d->last_call(c, &last);
	bool have_after = hostile_reference(d, lim, c, &lo, &hi);
	int64_t quiet_after = d->settled_ns(c);
	t->reads++;
	if (rc != 0) {
		t->failed++;
		if (calls_after == calls_before || saved_errno != EINVAL) {
			t->invented++;
			hostile_report("a failure the kernel's clock did not return: errno", k, saved_errno, 0);
		}
		return;
	}
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
		t->garbage++;
		hostile_report("not a time", k, ts.tv_sec, ts.tv_nsec);
		return;
	}
	int64_t v = ns_of(&ts);
	bool served = !(calls_after > calls_before && v == last);
	if (served) {
		t->served++;
		if (have_before && have_after && quiet_before >= lim->settle_ns && quiet_after >= lim->settle_ns) {
			int64_t error = v < lo ? lo - v : v > hi ? v - hi : 0;
			t->checked++;
			if (error > t->worst_ns)
				t->worst_ns = error;
			if (error > lim->limit_ns) {
				t->over++;
				hostile_report("served beyond the bound of the readings around it: value - lowest, - highest",
					       k, v - lo, v - hi);
			}
		}
	} else {
		t->passed++;
	}
	if (hostile_clocks[k].monotonic && v < *previous &&
	    (lim->reference_monotonic || (served && *previous_served) ||
	     (lim->back_most_ns >= 0 && *previous - v > lim->back_most_ns))) {
		t->backwards++;
		hostile_report(served ? "served a value below an earlier one by" : "passed a value below an earlier one by",
			       k, *previous - v, 0);
	}
	*previous = v;
	*previous_served = served;
}

static inline void hostile_tally_add(struct hostile_tally *all, const struct hostile_tally *t)
{
	all->reads += t->reads, all->served += t->served, all->passed += t->passed;
	all->failed += t->failed, all->checked += t->checked, all->over += t->over;
	all->backwards += t->backwards, all->garbage += t->garbage, all->invented += t->invented;
	if (t->worst_ns > all->worst_ns)
		all->worst_ns = t->worst_ns;
}

/* One line per clock; true where a promise was broken. */
static inline bool hostile_tally_print(const struct hostile_tally all[HOSTILE_CLOCKS])
{
	bool broken = false;
	for (int k = 0; k < HOSTILE_CLOCKS; k++) {
		const struct hostile_tally *a = &all[k];
		printf("hostile: clock=%s reads=%ld served=%ld passed=%ld failed=%ld checked=%ld worst_ns=%lld "
		       "over=%ld backwards=%ld garbage=%ld invented=%ld\n",
		       hostile_clocks[k].name, a->reads, a->served, a->passed, a->failed, a->checked,
		       (long long)a->worst_ns, a->over, a->backwards, a->garbage, a->invented);
		broken |= a->over || a->backwards || a->garbage || a->invented;
	}
	return broken;
}

/* The probes' common arguments: SECONDS THREADS LIMIT_NS SETTLE_US [monotonic-reference],
 * and TSCTEST_PROBE_READS (readings on each side); false on a usage error, said on stderr. */
static inline bool hostile_parse_args(int argc, char **argv, const char *name, struct hostile_limits *lim,
				      double *seconds, int *threads)
{
	if (argc < 5 || argc > 6 || (argc == 6 && strcmp(argv[5], "monotonic-reference") != 0)) {
		fprintf(stderr, "usage: see the comment at the top of test/%s.c\n", name);
		return false;
	}
	*seconds = atof(argv[1]);
	*threads = atoi(argv[2]);
	lim->limit_ns = atoll(argv[3]);
	lim->settle_ns = atoll(argv[4]) * 1000;
	lim->reference_monotonic = argc == 6;
	const char *back = getenv("TSCTEST_PROBE_BACK_MOST_NS");
	lim->back_most_ns = back ? atoll(back) : -1;
	const char *reads = getenv("TSCTEST_PROBE_READS");
	if (reads && atoi(reads) > 0)
		lim->reads_around = atoi(reads);
	return true;
}

#endif
