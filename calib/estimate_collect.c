/* Probe collection for the estimator: one thread pinned to each allowed CPU, reads
 * ordered into one sequence by compare-and-swap on a shared sequence number.
 *
 * Cost: memory is 16 bytes per probe (probes_per_cpu * CPUs) plus a few words per CPU;
 * time grows with the total probe count, since every probe is a CAS on one cache line
 * (about 100-300 ns per probe when the line moves between cores, so 128 CPUs x 1000
 * probes take some tens of ms) plus one thread start per CPU. The analysis is linear. */
#define _GNU_SOURCE
#include "estimate.h"

#include "counter.h"
#include "refclock.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct collection {
	_Atomic uint64_t next;       /* the sequence number: index of the next probe */
	_Atomic uint32_t ready;      /* workers running; they start when all are */
	uint32_t workers;
	_Atomic bool stop;           /* the budget ran out: everyone leaves */
	uint64_t total;
	uint64_t deadline_ns;        /* on CLOCK_MONOTONIC; threads give up past it */
	struct probe *probes;
};

struct worker {
	pthread_t thread;
	struct collection *shared;
	uint32_t index;
};

/* After a successful CAS the winner still holds the line; pausing briefly lets the
 * others win, which is what makes interleavings (ranges, loops) frequent. */
enum { PAUSES_AFTER_WIN = 8, CHECKS_EVERY = 1024 };

static void *collect(void *arg)
{
	struct worker *w = arg;
	struct collection *c = w->shared;
	uint64_t spins = 0;

	/* The workers release each other: when the last one arrives, all the others are
	 * spinning on their CPUs, so nobody collects alone while a sibling is still waiting
	 * to be scheduled. A CPU that never runs its worker must not hold the others past
	 * the budget. */
	atomic_fetch_add_explicit(&c->ready, 1, memory_order_acq_rel);
	while (atomic_load_explicit(&c->ready, memory_order_acquire) < c->workers) {
		cpu_relax();
		if (++spins % CHECKS_EVERY == 0 && refclock_now_ns(CLOCK_MONOTONIC) > c->deadline_ns)
			break;
	}

	for (;;) {
		uint64_t seq = atomic_load_explicit(&c->next, memory_order_acquire);
		if (seq >= c->total || atomic_load_explicit(&c->stop, memory_order_relaxed))
			break;
		uint64_t now = counter_read_serialized();
		if (atomic_compare_exchange_strong_explicit(&c->next, &seq, seq + 1,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			c->probes[seq] = (struct probe){.counter = now, .cpu = w->index};
			for (int i = 0; i < PAUSES_AFTER_WIN; i++)
				cpu_relax();
		}
		/* A thread that is never scheduled must not make the others wait forever. */
		if (++spins % CHECKS_EVERY == 0 && refclock_now_ns(CLOCK_MONOTONIC) > c->deadline_ns) {
			/* The short sequence is analysed as it is (probably inconclusive). */
			atomic_store_explicit(&c->stop, true, memory_order_relaxed);
			break;
		}
	}
	return NULL;
}

int allowed_cpus(int **ids)
{
	/* The common case without a heap allocation for the set itself. */
	cpu_set_t small;
	if (sched_getaffinity(0, sizeof small, &small) == 0) {
		int count = CPU_COUNT(&small);
		int *list = malloc(sizeof *list * (size_t)(count > 0 ? count : 1));
		if (!list)
			return -1;
		int n = 0;
		for (int cpu = 0; cpu < CPU_SETSIZE && n < count; cpu++)
			if (CPU_ISSET(cpu, &small))
				list[n++] = cpu;
		*ids = list;
		return n;
	}
	if (errno != EINVAL)
		return -1;
	for (size_t cpus = 2 * CPU_SETSIZE; cpus <= 1u << 20; cpus *= 2) {
		cpu_set_t *set = CPU_ALLOC(cpus);
		size_t size = CPU_ALLOC_SIZE(cpus);
		if (!set)
			return -1;
		CPU_ZERO_S(size, set);
		if (sched_getaffinity(0, size, set) != 0) {
			CPU_FREE(set);
			if (errno == EINVAL)
				continue;
			return -1;
		}
		int count = CPU_COUNT_S(size, set);
		int *list = malloc(sizeof *list * (size_t)(count > 0 ? count : 1));
		if (!list) {
			CPU_FREE(set);
			return -1;
		}
		int n = 0;
		for (size_t cpu = 0; cpu < cpus && n < count; cpu++)
			if (CPU_ISSET_S(cpu, size, set))
				list[n++] = (int)cpu;
		CPU_FREE(set);
		*ids = list;
		return n;
	}
	return -1;
}

/* One attempt: threads started together, joined before return. Returns the number of
 * probes collected, or -1 with err. */
static long collect_once(const int *cpu_ids, uint32_t cpus, uint64_t total, uint64_t deadline_ns,
			 struct probe *probes, char *err, size_t err_size)
{
	struct collection shared = {
		.total = total, .workers = cpus, .deadline_ns = deadline_ns, .probes = probes};
	struct worker *workers = calloc(cpus, sizeof *workers);
	if (!workers) {
		snprintf(err, err_size, "estimator: out of memory");
		return -1;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);

	uint32_t started = 0;
	int rc = 0;
	for (; started < cpus; started++) {
		cpu_set_t *one = CPU_ALLOC((size_t)cpu_ids[started] + 1);
		size_t size = CPU_ALLOC_SIZE((size_t)cpu_ids[started] + 1);
		if (!one) {
			rc = ENOMEM;
			break;
		}
		CPU_ZERO_S(size, one);
		CPU_SET_S((size_t)cpu_ids[started], size, one);
		rc = pthread_attr_setaffinity_np(&attr, size, one);
		CPU_FREE(one);
		workers[started] = (struct worker){.shared = &shared, .index = started};
		if (rc == 0)
			rc = pthread_create(&workers[started].thread, &attr, collect, &workers[started]);
		if (rc != 0)
			break;
	}
	pthread_attr_destroy(&attr);

	if (rc != 0) {
		/* The started ones must not wait for the rest. */
		atomic_store(&shared.stop, true);
		atomic_fetch_add(&shared.ready, cpus);
	}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	free(workers);

	if (rc != 0) {
		snprintf(err, err_size, "estimator: cannot start a thread on CPU %d: %s",
			 cpu_ids[started < cpus ? started : cpus - 1], strerror(rc));
		return -1;
	}
	/* Only the winner of slot s writes it, and every winner was joined: the first `got`
	 * slots are complete. */
	uint64_t got = atomic_load(&shared.next);
	return (long)(got < total ? got : total);
}

int estimate_run(const struct estimate_config *config, struct estimate_report *report,
		 char *err, size_t err_size)
{
	memset(report, 0, sizeof *report);
	uint64_t start = refclock_now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = start + config->budget_ns;

	int *ids = NULL;
	int count = allowed_cpus(&ids);
	if (count < 1) {
		snprintf(err, err_size, "estimator: cannot read the CPU affinity: %s", strerror(errno));
		return -1;
	}
	uint32_t cpus = (uint32_t)count;
	uint64_t total = (uint64_t)config->probes_per_cpu * cpus;
	struct probe *probes = malloc(sizeof *probes * total);
	struct cpu_offset *per_cpu = malloc(sizeof *per_cpu * cpus);
	if (!probes || !per_cpu) {
		free(probes);
		free(per_cpu);
		free(ids);
		snprintf(err, err_size, "estimator: out of memory for %llu probes",
			 (unsigned long long)total);
		return -1;
	}

	report->cpu_count = cpus;
	report->cpu_ids = ids;
	report->per_cpu = per_cpu;
	/* Retry only what more data could change: an inconclusive attempt. */
	do {
		long got = collect_once(ids, cpus, total, deadline, probes, err, err_size);
		report->attempts++;
		if (got < 0) {
			free(probes);
			estimate_report_free(report);
			return -1;
		}
		estimate_analyze(probes, (size_t)got, cpus, config->limits, per_cpu,
				 &report->analysis);
	} while (report->analysis.verdict == ESTIMATE_INCONCLUSIVE &&
		 refclock_now_ns(CLOCK_MONOTONIC) < deadline);

	free(probes);
	report->elapsed_ns = refclock_now_ns(CLOCK_MONOTONIC) - start;
	return 0;
}

void estimate_report_free(struct estimate_report *report)
{
	free(report->cpu_ids);
	free(report->per_cpu);
	report->cpu_ids = NULL;
	report->per_cpu = NULL;
}
