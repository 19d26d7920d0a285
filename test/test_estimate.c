/* The estimator's analysis over synthetic probe sequences: true time advances by a
 * random step per probe, each CPU's counter is offset + rate * time. */
#include "estimate.h"
#include "unit.h"

#include <stdlib.h>

#define MAX_CPUS 8
#define N 4000

struct machine {
	uint32_t cpus;
	int64_t offset[MAX_CPUS];
	double rate[MAX_CPUS];       /* 0 means 1.0 */
	bool stuck[MAX_CPUS];
	size_t step_back_at;         /* probe index from which CPU 1 reads 5000 ticks lower; 0: never */
	uint32_t mean_run;           /* mean length of runs on one CPU (CAS hogging) */
};

static uint64_t rng_state;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct probe seq[N];
static struct cpu_offset per_cpu[MAX_CPUS];
static struct estimate_analysis result;

static void generate(const struct machine *m, size_t n, uint64_t seed)
{
	rng_state = seed;
	uint64_t t = 1000000;
	uint32_t cpu = 0;
	for (size_t i = 0; i < n; i++) {
		t += 20 + rng() % 40;
		if (rng() % (m->mean_run ? m->mean_run : 2) == 0)
			cpu = (uint32_t)(rng() % m->cpus);
		double rate = m->rate[cpu] ? m->rate[cpu] : 1.0;
		int64_t value = m->offset[cpu] + (int64_t)((double)t * rate);
		if (m->stuck[cpu])
			value = 777777;
		if (cpu == 1 && m->step_back_at && i >= m->step_back_at)
			value -= 5000;
		seq[i] = (struct probe){.counter = (uint64_t)value, .cpu = cpu};
	}
}

static void analyze(const struct machine *m, size_t n)
{
	CHECK(estimate_analyze(seq, n, m->cpus, ESTIMATE_DEFAULT_LIMITS, per_cpu, &result) == 0);
}

static void synchronized_counters_are_consistent(void)
{
	struct machine m = {.cpus = 4};
	generate(&m, N, 1);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_CONSISTENT);
	CHECK(result.monotonic_violations == 0 && result.rate_violations == 0);
	for (uint32_t c = 0; c < m.cpus; c++)
		CHECK(per_cpu[c].lo <= 0 && per_cpu[c].hi >= 0);
	/* bounded by about two probe steps each side */
	CHECK(result.max_shift_ticks <= 240);
	CHECK(result.loops >= 10 && result.min_ranges >= 10);
}

static void small_shift_is_bounded(void)
{
	struct machine m = {.cpus = 2, .offset = {0, 15}};
	generate(&m, N, 2);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_CONSISTENT);
	CHECK(per_cpu[1].lo <= 15 && per_cpu[1].hi >= 15);
	CHECK(result.max_shift_ticks >= 15);
}

static void large_shift_is_bounded_and_breaks_monotonicity(void)
{
	struct machine m = {.cpus = 3, .offset = {0, 0, 5000}};
	generate(&m, N, 3);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_NOT_MONOTONIC);
	CHECK(per_cpu[2].lo <= 5000 && per_cpu[2].hi >= 5000);
	CHECK(result.max_shift_ticks >= 5000);
	CHECK(result.largest_step_back > 4000);
}

static void negative_shift_is_bounded(void)
{
	struct machine m = {.cpus = 2, .offset = {0, -12}};
	generate(&m, N, 4);
	analyze(&m, N);
	CHECK(per_cpu[1].lo <= -12 && per_cpu[1].hi >= -12);
	CHECK(result.max_shift_ticks >= 12);
}

static void counter_stepping_back_is_not_monotonic(void)
{
	struct machine m = {.cpus = 2, .step_back_at = N / 2};
	generate(&m, N, 5);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_NOT_MONOTONIC);
	CHECK(result.monotonic_violations > 0);
}

static void counter_at_another_rate_is_a_mismatch(void)
{
	struct machine m = {.cpus = 2, .rate = {1.0, 1.5}, .offset = {0, -500000}, .mean_run = 8};
	generate(&m, N, 6);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_RATE_MISMATCH);
	CHECK(result.rate_violations > 0);
}

static void slower_counter_is_a_mismatch(void)
{
	struct machine m = {.cpus = 2, .rate = {1.0, 0.6}, .offset = {0, 400000}, .mean_run = 8};
	generate(&m, N, 7);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_RATE_MISMATCH);
}

static void stuck_counter_is_detected(void)
{
	struct machine m = {.cpus = 3, .stuck = {false, false, true}};
	generate(&m, N, 8);
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_STUCK);
	CHECK(result.worst_cpu == 2);
}

static void too_few_interleavings_are_inconclusive(void)
{
	/* 100 base probes, then 100 on CPU 1: one bracketed range at most */
	uint64_t t = 1000;
	for (size_t i = 0; i < 200; i++) {
		t += 30;
		seq[i] = (struct probe){.counter = t, .cpu = i < 100 ? 0 : 1};
	}
	struct machine m = {.cpus = 2};
	analyze(&m, 200);
	CHECK(result.verdict == ESTIMATE_INCONCLUSIVE);
	CHECK(result.min_ranges < 10);
}

static void cpu_without_probes_is_inconclusive(void)
{
	struct machine m = {.cpus = 2};
	generate(&m, N, 9);
	for (size_t i = 0; i < N; i++)
		seq[i].cpu = 0;
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_INCONCLUSIVE);
}

static void disjoint_intervals_are_inconsistent(void)
{
	/* CPU 1 reads 400 ahead in the first half and 400 behind in the second, with probe
	 * steps of 300-340: each half alone bounds the offset, together the intervals cannot
	 * intersect. (Both bounds come from adjacent probes, so disjoint intervals always
	 * come with steps back as well.) */
	uint64_t t = 1000000;
	rng_state = 10;
	for (size_t i = 0; i < N; i++) {
		t += 300 + rng() % 40;
		uint32_t cpu = (uint32_t)(rng() % 2);
		int64_t off = cpu == 1 ? (i < N / 2 ? 400 : -400) : 0;
		seq[i] = (struct probe){.counter = (uint64_t)((int64_t)t + off), .cpu = cpu};
	}
	struct machine m = {.cpus = 2};
	analyze(&m, N);
	CHECK(result.verdict == ESTIMATE_NOT_MONOTONIC);
	CHECK(per_cpu[1].lo > per_cpu[1].hi);
	CHECK(result.max_shift_ticks >= (uint64_t)(per_cpu[1].lo - per_cpu[1].hi));
}

static void single_cpu_is_consistent(void)
{
	struct machine m = {.cpus = 1};
	generate(&m, 100, 11);
	analyze(&m, 100);
	CHECK(result.verdict == ESTIMATE_CONSISTENT);
	CHECK_EQ_U64(result.max_shift_ticks, 0);
	CHECK_EQ_U64(result.loops, 100);
}

static void bad_arguments_are_refused(void)
{
	struct machine m = {.cpus = 2};
	generate(&m, 10, 12);
	seq[3].cpu = 5;
	CHECK(estimate_analyze(seq, 10, 2, ESTIMATE_DEFAULT_LIMITS, per_cpu, &result) == -1);
	CHECK(estimate_analyze(seq, 10, 0, ESTIMATE_DEFAULT_LIMITS, per_cpu, &result) == -1);
}

int main(void)
{
	RUN(synchronized_counters_are_consistent);
	RUN(small_shift_is_bounded);
	RUN(large_shift_is_bounded_and_breaks_monotonicity);
	RUN(negative_shift_is_bounded);
	RUN(counter_stepping_back_is_not_monotonic);
	RUN(counter_at_another_rate_is_a_mismatch);
	RUN(slower_counter_is_a_mismatch);
	RUN(stuck_counter_is_detected);
	RUN(too_few_interleavings_are_inconclusive);
	RUN(cpu_without_probes_is_inconclusive);
	RUN(disjoint_intervals_are_inconsistent);
	RUN(single_cpu_is_consistent);
	RUN(bad_arguments_are_refused);
	return unit_finish();
}
