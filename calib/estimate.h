/* The reliability estimator: do the counters of all CPUs the process may run on agree?
 *
 * Collection (estimate_collect.c) runs one thread pinned to each CPU; the threads order
 * their fenced counter reads through compare-and-swap on one sequence number, so the
 * sequence is in true time order. Analysis (estimate_analyze, pure) then derives, from
 * that one sequence:
 *  - for each CPU, an interval [lo, hi] holding its counter's offset from the base CPU's:
 *    a read tc on CPU c between base reads tb1 and tb2 gives offset in [tc-tb2, tc-tb1];
 *  - the maximum-shift bound: the width of the smallest interval holding every CPU's
 *    interval and the base's 0, i.e. an upper bound on |offset_a - offset_b| for any two;
 *  - monotonicity: values must not decrease along the sequence;
 *  - same rate: between two base reads, another CPU's counter cannot advance more than
 *    the base's did, and the other way round;
 *  - every counter advances (a stuck counter repeats values);
 *  - quality: bracketed ranges per CPU (base, c) and full loops through all CPUs. */
#ifndef CALIB_ESTIMATE_H
#define CALIB_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct probe {
	uint64_t counter;
	uint32_t cpu; /* index into the estimator's CPU list, 0 = base */
};

enum estimate_verdict {
	ESTIMATE_CONSISTENT,   /* every check passed; compare max_shift with a threshold */
	ESTIMATE_STUCK,        /* a counter did not advance */
	ESTIMATE_NOT_MONOTONIC,
	ESTIMATE_RATE_MISMATCH,
	ESTIMATE_DISJOINT,     /* a CPU's offset interval is empty: inconsistent counters */
	ESTIMATE_INCONCLUSIVE, /* too few ranges or loops to say */
};

const char *estimate_verdict_name(enum estimate_verdict v);

struct estimate_limits {
	uint32_t min_ranges; /* per (base, CPU) pair */
	uint32_t min_loops;  /* full loops through all CPUs */
};
#define ESTIMATE_DEFAULT_LIMITS ((struct estimate_limits){.min_ranges = 10, .min_loops = 10})

struct cpu_offset {
	int64_t lo, hi;   /* offset from the base CPU's counter, ticks; lo > hi: disjoint */
	uint32_t ranges;  /* bracketed runs between two base probes */
	uint32_t probes;
	uint32_t stuck;   /* own consecutive reads that did not advance */
};

struct estimate_analysis {
	enum estimate_verdict verdict;
	uint32_t cpus;
	uint64_t probes;
	uint64_t max_shift_ticks;     /* valid when verdict is CONSISTENT (or INCONCLUSIVE, as a hint) */
	uint64_t monotonic_violations;
	uint64_t largest_step_back;   /* ticks */
	uint64_t rate_violations;
	uint64_t loops;
	uint32_t min_ranges;          /* smallest ranges count over CPUs other than base */
	uint32_t worst_cpu;           /* the CPU behind the verdict, when one is to blame */
};

/* Pure: analyses n probes taken on cpus CPUs. per_cpu must hold cpus entries; entry 0 is
 * the base. Returns 0, or -1 if the arguments are unusable (no CPU, a probe naming a CPU
 * out of range). */
int estimate_analyze(const struct probe *seq, size_t n, uint32_t cpus,
		     struct estimate_limits limits, struct cpu_offset *per_cpu,
		     struct estimate_analysis *out);

/* Collection over a set of CPUs, one pinned thread each, all contending for one
 * sequence number. The total number of probes in an attempt is capped so that the
 * collection's time does not grow with the CPU count beyond what the statistics need
 * (see doc/evidence/EVIDENCE-STARTUP.md for the model): ESTIMATE_TOTAL_PROBES_MAX, or
 * ESTIMATE_MIN_PROBES_PER_CPU per CPU where that is more. */
#define ESTIMATE_TOTAL_PROBES_MAX 32768u
#define ESTIMATE_MIN_PROBES_PER_CPU 64u
struct cpu_mask;
struct estimate_config {
	uint32_t probes_per_cpu;
	uint64_t budget_ns; /* retries of inconclusive attempts stop here */
	struct estimate_limits limits;
	const struct cpu_mask *cpus; /* NULL: the calling thread's allowed CPUs */
};

/* Probes per attempt for cpus CPUs at probes_per_cpu each, after the cap. Pure. */
uint64_t estimate_total_probes(uint32_t probes_per_cpu, uint32_t cpus);

struct estimate_report {
	struct estimate_analysis analysis;
	uint32_t cpu_count;
	int *cpu_ids;                 /* cpu_count entries, owned */
	struct cpu_offset *per_cpu;   /* cpu_count entries, owned */
	uint32_t attempts;
	uint64_t elapsed_ns;
};

/* Returns 0 with a report (its verdict may still be bad), or -1 with err filled when the
 * estimate could not be run at all (threads, memory, affinity). Leaves the caller's
 * affinity unchanged. Every thread is joined, or, if one could not run within the budget
 * plus ESTIMATE_JOIN_GRACE_NS (2 s: a CPU that a real-time task holds), abandoned: what it touches is then never freed, and the
 * call returns -1. Creates threads: the shim runs it in a child process (estimate_child.h). */
#define ESTIMATE_JOIN_GRACE_NS 2000000000ull
int estimate_run(const struct estimate_config *config, struct estimate_report *report,
		 char *err, size_t err_size);
void estimate_report_free(struct estimate_report *report);

#endif
