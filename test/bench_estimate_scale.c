/* The estimator at scale: the pure analysis measured on synthetic sequences of the size an
 * attempt has at 1..256 CPUs, and the collection's cost modelled from what this machine
 * measures (a cache-line transfer between two CPUs by compare-and-swap, and a pinned
 * thread's start and join). `make bench-estimate-scale`; figures in doc/evidence/EVIDENCE-STARTUP.md.
 *
 * Model of one attempt on n CPUs: threads started one after another (n x start), then
 * `total` probes, each a CAS that moves the sequence number's line to the winner's CPU
 * (total x transfer), plus the analysis. On a large machine a transfer between sockets
 * costs more than here (our two vCPUs share a core): the table also gives the figure at
 * 150 ns per transfer, a conservative figure between sockets. */
#define _GNU_SOURCE
#include "counter.h"
#include "estimate.h"
#include "refclock.h"
#include "rng.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- CAS ping-pong: the line moves on every successful CAS ---- */
enum { ROUNDS = 200000 };
static _Atomic uint64_t ball;

static void *player(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg;
	for (;;) {
		uint64_t v = atomic_load_explicit(&ball, memory_order_acquire);
		if (v >= 2 * ROUNDS)
			return NULL;
		if (v % 2 == me)
			atomic_compare_exchange_strong(&ball, &v, v + 1);
		else
			cpu_relax();
	}
}

static void pin(pthread_attr_t *attr, int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	pthread_attr_setaffinity_np(attr, sizeof one, &one);
}

static double transfer_ns(void)
{
	pthread_t t[2];
	pthread_attr_t attr;
	uint64_t best = UINT64_MAX;
	for (int run = 0; run < 5; run++) {
		atomic_store(&ball, 0);
		uint64_t start = now_ns();
		for (int i = 0; i < 2; i++) {
			pthread_attr_init(&attr);
			pin(&attr, i);
			pthread_create(&t[i], &attr, player, (void *)(uintptr_t)i);
			pthread_attr_destroy(&attr);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		uint64_t took = now_ns() - start;
		if (took < best)
			best = took;
	}
	return (double)best / (2.0 * ROUNDS);
}

static void *nothing(void *arg)
{
	return arg;
}

static double thread_start_ns(void)
{
	uint64_t samples[200];
	for (int i = 0; i < 200; i++) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		pin(&attr, i % 2);
		pthread_t t;
		uint64_t start = now_ns();
		pthread_create(&t, &attr, nothing, NULL);
		pthread_join(t, NULL);
		samples[i] = now_ns() - start;
		pthread_attr_destroy(&attr);
	}
	qsort(samples, 200, sizeof samples[0], cmp_u64);
	return (double)samples[100];
}

/* ---- synthetic sequences: synchronized counters, each probe by a random CPU ---- */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
	return xorshift64(&rng_state);
}

int main(void)
{
	refclock_gettime = clock_gettime;
	double transfer = transfer_ns(), start = thread_start_ns();
	printf("this machine: CAS line transfer %.1f ns, pinned thread start+join %.1f us\n\n", transfer,
	       start / 1000);
	printf("| CPUs | probes/attempt | memory | analysis (median of 9) | verdict | loops | min ranges | modelled attempt | at 150 ns/transfer |\n");
	printf("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
	static const uint32_t sizes[] = {1, 2, 16, 64, 128, 256};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		uint32_t n = sizes[s];
		uint64_t total = estimate_total_probes(1000, n);
		struct probe *seq = malloc(sizeof *seq * total);
		struct cpu_offset *per_cpu = malloc(sizeof *per_cpu * n);
		uint64_t t = 1000000;
		for (uint64_t i = 0; i < total; i++) {
			t += 100 + rng() % 200; /* one transfer per probe, in ticks */
			seq[i] = (struct probe){.counter = t, .cpu = (uint32_t)(rng() % n)};
		}
		uint64_t took[9];
		struct estimate_analysis a;
		for (int r = 0; r < 9; r++) {
			uint64_t begin = now_ns();
			estimate_analyze(seq, total, n, ESTIMATE_DEFAULT_LIMITS, per_cpu, &a);
			took[r] = now_ns() - begin;
		}
		qsort(took, 9, sizeof took[0], cmp_u64);
		/* The probes, the per-CPU results, and the analysis's scan state (about 64 B). */
		double memory_kib = (double)(total * sizeof *seq + n * (sizeof *per_cpu + 64)) / 1024;
		double model = n * start + (double)total * transfer + (double)took[4];
		double model3 = n * start + (double)total * 150 + (double)took[4];
		printf("| %u | %llu | %.0f KiB | %.2f ms | %s | %llu | %u | %.1f ms | %.1f ms |\n", n,
		       (unsigned long long)total, memory_kib, took[4] / 1e6, estimate_verdict_name(a.verdict),
		       (unsigned long long)a.loops, n > 1 ? a.min_ranges : 0, model / 1e6, model3 / 1e6);
		free(seq);
		free(per_cpu);
	}
	return 0;
}
