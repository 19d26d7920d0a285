/* Probe collection for the estimator: one thread pinned to each CPU of the set, reads
 * ordered into one sequence by compare-and-swap on a shared sequence number.
 *
 * Cost: memory is 16 bytes per probe plus a few words per CPU; time grows with the total
 * probe count (capped: estimate_total_probes), since every probe is a CAS on one cache
 * line, plus one thread start per CPU. The analysis is linear. Figures and the model for
 * large machines: doc/evidence/EVIDENCE-STARTUP.md.
 *
 * A busy machine: a worker whose siblings are not running would fill the sequence alone
 * (no interleaving, an inconclusive attempt) and spin out its time slice waiting for them.
 * After a streak of solitary wins it yields, and after a third in a row it sleeps instead,
 * until a sibling that runs wakes it (at most 1 ms); it yields while it waits at the start. A yield there handed the CPU to
 * whatever else ran on it for the rest of a slice, and the workers then ran by turns,
 * seldom together: beside a busy loop on every CPU of a microVM, 3-11 loops through the
 * CPUs in 17 ms against hundreds in 1.3 ms idle. A woken thread is scheduled ahead of such
 * a loop (its wake-up preempts it), so a sibling's wake-up brings the workers together. */
#define _GNU_SOURCE
#include "estimate.h"

#include "counter.h"
#include "libc_kind.h"
#include "refclock.h"
#include "system.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct collection {
	_Atomic uint64_t next;       /* the sequence number: index of the next probe */
	_Atomic uint32_t ready;      /* workers running; they start when all are */
	uint32_t workers;
	_Atomic bool stop;           /* the budget ran out: everyone leaves */
	_Atomic uint32_t finished;   /* workers past their last access to this */
	_Atomic uint32_t wake_turn;  /* moved on to wake the workers asleep on it */
	_Atomic uint32_t asleep;     /* workers asleep on wake_turn */
	uint64_t total;
	uint64_t deadline_ns;        /* on CLOCK_MONOTONIC; threads give up past it */
	struct probe *probes;
};

struct worker {
	pthread_t thread;
	struct collection *shared;
	uint32_t index;
	int pin_cpu;   /* >= 0: the thread pins itself there (no affinity attribute: musl) */
	int pin_error; /* its errno if that failed */
};

/* After a successful CAS the winner still holds the line; pausing briefly lets the
 * others win, which is what makes interleavings (ranges, loops) frequent. */
enum { PAUSES_AFTER_WIN = 8, CHECKS_EVERY = 1024, SOLITARY_STREAK = 64, YIELD_EVERY = 256, YIELDS_BEFORE_SLEEP = 2 };

uint64_t estimate_total_probes(uint32_t probes_per_cpu, uint32_t cpus)
{
	uint64_t total = (uint64_t)probes_per_cpu * cpus;
	uint64_t floor = (uint64_t)ESTIMATE_MIN_PROBES_PER_CPU * cpus;
	uint64_t cap = ESTIMATE_TOTAL_PROBES_MAX > floor ? ESTIMATE_TOTAL_PROBES_MAX : floor;
	return total < cap ? total : cap;
}

static bool past(const struct collection *c)
{
	return refclock_now_ns(CLOCK_MONOTONIC) > c->deadline_ns;
}

/* The futex operations by number: musl's headers leave out the kernel's <linux/futex.h>. */
enum { FUTEX_WAIT_PRIVATE_OP = 128 /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */, FUTEX_WAKE_PRIVATE_OP = 129 };

/* Asleep until a sibling that runs moves the turn on, or 1 ms: the sibling is not running
 * (its CPU is busy with something else). */
static void sleep_until_woken(struct collection *c)
{
	uint32_t turn = atomic_load_explicit(&c->wake_turn, memory_order_acquire);
	atomic_fetch_add_explicit(&c->asleep, 1, memory_order_acq_rel);
	struct timespec most = {.tv_nsec = 1000000};
	syscall(SYS_futex, &c->wake_turn, FUTEX_WAIT_PRIVATE_OP, turn, &most, NULL, 0);
	atomic_fetch_sub_explicit(&c->asleep, 1, memory_order_acq_rel);
}

/* A worker that runs wakes those asleep: they run beside it again. */
static void wake_sleepers(struct collection *c)
{
	if (atomic_load_explicit(&c->asleep, memory_order_acquire) == 0)
		return;
	atomic_fetch_add_explicit(&c->wake_turn, 1, memory_order_acq_rel);
	syscall(SYS_futex, &c->wake_turn, FUTEX_WAKE_PRIVATE_OP, INT_MAX, NULL, NULL, 0);
}

static void *collect(void *arg)
{
	struct worker *w = arg;
	struct collection *c = w->shared;
	uint64_t spins = 0;

	/* Pinned before it counts as ready, so that every probe it takes is on its CPU. A
	 * failure stops everyone, as a thread the attribute could not start would. */
	if (w->pin_cpu >= 0) {
		struct cpu_mask one;
		memset(&one, 0, sizeof one);
		cpu_mask_add(&one, (unsigned)w->pin_cpu);
		if (sched_setaffinity(0, sizeof one.word, (cpu_set_t *)(void *)one.word) != 0) {
			w->pin_error = errno;
			atomic_store(&c->stop, true);
		}
	}

	/* The workers release each other: when the last one arrives, all the others are
	 * running, so nobody collects alone while a sibling is still waiting to be
	 * scheduled. A CPU that never runs its worker must not hold the others past the
	 * budget. */
	atomic_fetch_add_explicit(&c->ready, 1, memory_order_acq_rel);
	while (atomic_load_explicit(&c->ready, memory_order_acquire) < c->workers &&
	       !atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		cpu_relax();
		if (++spins % YIELD_EVERY == 0) {
			sched_yield();
			if (past(c))
				break;
		}
	}

	uint64_t last_won = UINT64_MAX, streak = 0, lonely = 0;
	for (;;) {
		uint64_t seq = atomic_load_explicit(&c->next, memory_order_acquire);
		if (seq >= c->total || atomic_load_explicit(&c->stop, memory_order_relaxed))
			break;
		uint64_t now = counter_read_serialized();
		if (atomic_compare_exchange_strong_explicit(&c->next, &seq, seq + 1,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			c->probes[seq] = (struct probe){.counter = now, .cpu = w->index};
			streak = seq == last_won + 1 ? streak + 1 : 0;
			lonely = seq == last_won + 1 ? lonely : 0;
			last_won = seq;
			if (streak >= SOLITARY_STREAK && c->workers > 1) {
				/* Nobody else is taking probes: they are not running. A yield
				 * first (a sibling about to run on an idle CPU is best met
				 * running: waking a sleeper there costs an interrupt), then,
				 * alone still, asleep until one runs. */
				streak = 0;
				if (++lonely <= YIELDS_BEFORE_SLEEP)
					sched_yield();
				else
					sleep_until_woken(c);
			} else {
				wake_sleepers(c);
			}
			for (int i = 0; i < PAUSES_AFTER_WIN; i++)
				cpu_relax();
		}
		/* A thread that is never scheduled must not make the others wait forever. */
		if (++spins % CHECKS_EVERY == 0 && past(c)) {
			/* The short sequence is analysed as it is (probably inconclusive). */
			atomic_store_explicit(&c->stop, true, memory_order_relaxed);
			break;
		}
	}
	atomic_fetch_add_explicit(&c->finished, 1, memory_order_release);
	return NULL;
}

/* One attempt: threads started together, joined before return, or abandoned (with
 * *abandoned set) when one does not finish by the deadline plus the grace: then shared,
 * workers and the probes stay allocated for ever. Returns the number of probes
 * collected, or -1 with err. */
/* Starts one worker per CPU of cpu_ids, each pinned to its CPU. Returns 0, or the error
 * of the first that could not start (those started are then told to stop, and not to
 * wait for the rest); *started counts them either way. */
static int start_workers(const int *cpu_ids, uint32_t cpus, struct collection *shared, struct worker *workers,
			 uint32_t *started)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	int rc = 0;
	for (*started = 0; *started < cpus; (*started)++) {
		uint32_t w = *started;
		struct cpu_mask one;
		memset(&one, 0, sizeof one);
		cpu_mask_add(&one, (unsigned)cpu_ids[w]);
		workers[w] = (struct worker){.shared = shared, .index = w, .pin_cpu = -1};
		/* Pinned through the creation attribute where the library has one (glibc),
		 * else by the thread itself, first thing (musl). */
		rc = libc_attr_setaffinity(&attr, &one);
		if (rc == ENOSYS) {
			workers[w].pin_cpu = cpu_ids[w];
			rc = 0;
		}
		if (rc == 0)
			rc = pthread_create(&workers[w].thread, &attr, collect, &workers[w]);
		if (rc != 0)
			break;
	}
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_store(&shared->stop, true);
		atomic_fetch_add(&shared->ready, cpus);
	}
	return rc;
}

/* Waits until every started worker said it is done, so that a worker whose CPU never
 * runs it cannot hold us: past the deadline's grace it is told to stop, and left
 * everything it can touch (*abandoned). Returns 0 when all finished, else -1 with err. */
static int wait_for_workers(struct collection *shared, uint32_t started, uint64_t deadline_ns,
			    bool *abandoned, char *err, size_t err_size)
{
	uint64_t join_by = deadline_ns + ESTIMATE_JOIN_GRACE_NS;
	while (atomic_load_explicit(&shared->finished, memory_order_acquire) < started) {
		if (refclock_now_ns(CLOCK_MONOTONIC) > join_by) {
			atomic_store(&shared->stop, true);
			*abandoned = true;
			snprintf(err, err_size, "estimator: a thread did not run within the budget (%u of %u finished)",
				 atomic_load(&shared->finished), started);
			return -1;
		}
		struct timespec nap = {.tv_nsec = 100000};
		nanosleep(&nap, NULL);
	}
	return 0;
}

/* The first of the started workers that could not pin itself to its CPU, or started. */
static uint32_t first_unpinned(const struct worker *workers, uint32_t started)
{
	for (uint32_t i = 0; i < started; i++)
		if (workers[i].pin_error)
			return i;
	return started;
}

static long collect_once(const int *cpu_ids, uint32_t cpus, uint64_t total, uint64_t deadline_ns,
			 struct probe *probes, bool *abandoned, char *err, size_t err_size)
{
	struct collection *shared = calloc(1, sizeof *shared);
	struct worker *workers = calloc(cpus, sizeof *workers);
	if (!shared || !workers) {
		free(shared);
		free(workers);
		snprintf(err, err_size, "estimator: out of memory");
		return -1;
	}
	shared->total = total;
	shared->workers = cpus;
	shared->deadline_ns = deadline_ns;
	shared->probes = probes;

	uint32_t started;
	int rc = start_workers(cpu_ids, cpus, shared, workers, &started);
	if (wait_for_workers(shared, started, deadline_ns, abandoned, err, err_size) != 0)
		return -1;
	for (uint32_t i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	uint64_t got = atomic_load(&shared->next);
	uint32_t unpinned = first_unpinned(workers, started);
	int pin_error = unpinned < started ? workers[unpinned].pin_error : 0;
	free(shared);
	free(workers);

	if (rc != 0) {
		snprintf(err, err_size, "estimator: cannot start a thread on CPU %d: %s",
			 cpu_ids[started < cpus ? started : cpus - 1], strerror(rc));
		return -1;
	}
	if (pin_error) {
		snprintf(err, err_size, "estimator: cannot pin a thread to CPU %d: %s",
			 cpu_ids[unpinned], strerror(pin_error));
		return -1;
	}
	/* Only the winner of slot s writes it, and every winner was joined: the first `got`
	 * slots are complete. */
	return (long)(got < total ? got : total);
}

int estimate_run(const struct estimate_config *config, struct estimate_report *report,
		 char *err, size_t err_size)
{
	memset(report, 0, sizeof *report);
	uint64_t start = refclock_now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = start + config->budget_ns;

	struct cpu_mask set;
	if (config->cpus) {
		set = *config->cpus;
	} else if (cpu_mask_allowed(&set) < 1) {
		snprintf(err, err_size, "estimator: cannot read the CPU affinity: %s", strerror(errno));
		return -1;
	}
	uint32_t cpus = cpu_mask_count(&set);
	if (cpus == 0) {
		snprintf(err, err_size, "estimator: no CPU to estimate");
		return -1;
	}
	uint64_t total = estimate_total_probes(config->probes_per_cpu, cpus);
	int *ids = malloc(sizeof *ids * cpus);
	struct probe *probes = malloc(sizeof *probes * total);
	struct cpu_offset *per_cpu = malloc(sizeof *per_cpu * cpus);
	if (!ids || !probes || !per_cpu) {
		free(ids);
		free(probes);
		free(per_cpu);
		snprintf(err, err_size, "estimator: out of memory for %llu probes",
			 (unsigned long long)total);
		return -1;
	}
	uint32_t n = 0;
	for (int cpu = cpu_mask_next(&set, -1); cpu >= 0; cpu = cpu_mask_next(&set, cpu))
		ids[n++] = cpu;

	report->cpu_count = cpus;
	report->cpu_ids = ids;
	report->per_cpu = per_cpu;
	/* Retry only what more data could change: an inconclusive attempt. */
	do {
		bool abandoned = false;
		long got = collect_once(ids, cpus, total, deadline, probes, &abandoned, err, err_size);
		report->attempts++;
		if (got < 0) {
			if (!abandoned)
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
