/* The CPU's time-stamp counter: the only architecture-specific part of tscshim.
 *
 * Reads are inline because the shim's hot path is built from them. Porting to another
 * architecture means providing these three reads and counter_identify() (counter_x86.c). */
#ifndef CALIB_COUNTER_H
#define CALIB_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)

/* Unfenced: may execute before earlier loads complete, so a value read after observing
 * another thread's store can still be older than that store. Cheapest. */
static inline uint64_t counter_read_unfenced(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Ordered after every earlier load and instruction (the kernel's rdtsc_ordered()).
 * lfence rather than rdtscp: lfence is dispatch-serializing on AMD under Linux and on
 * Intel, every x86-64 CPU has it (some KVM guests lack rdtscp), and where rdtscp exists
 * it measured no cheaper (AMD EPYC guest: 28.85 against 28.48 ns,
 * doc/evidence/EVIDENCE.md).
 * mfence and lock-prefixed instructions do not hold rdtsc back on AMD. */
static inline uint64_t counter_read_ordered(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Ordered both ways: nothing later starts before the read is taken. The estimator needs
 * this so that a probe's read happens strictly between its load of the sequence number
 * and its compare-and-swap. */
static inline uint64_t counter_read_serialized(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Compares pair[0..1] (16-byte aligned) with expected and, if equal, writes lo, hi; else
 * loads the current pair into expected, atomically either way. The shim publishes its
 * line and commits kernel-read values through one such pair so that neither can slip
 * between the other's read and write. Every CPU with an invariant counter has it. */
static inline bool counter_cas_pair(uint64_t *pair, uint64_t expected[2], uint64_t lo, uint64_t hi)
{
	bool ok;
	__asm__ __volatile__("lock cmpxchg16b %1"
			     : "=@ccz"(ok), "+m"(*(volatile unsigned __int128 *)pair),
			       "+a"(expected[0]), "+d"(expected[1])
			     : "b"(lo), "c"(hi)
			     : "memory");
	return ok;
}

static inline void cpu_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

#else
#error "tscshim: no counter implementation for this architecture (see calib/counter.h)"
#endif

/* What the CPU says about its counter (CPUID on x86). */
struct counter_identity {
	bool present;       /* the counter instruction exists */
	bool invariant;     /* constant rate across P-, C- and T-states */
	bool ordered_read;  /* rdtscp available (information only: we fence with lfence) */
	bool hypervisor;    /* running under a hypervisor */
	uint32_t signature; /* family/model/stepping word, part of the cache key */
	char vendor[13];
	char model[49];     /* brand string, trimmed */
};

void counter_identify(struct counter_identity *out);

/* Only what the gate needs: present, invariant, signature (vendor, model and rdtscp stay
 * empty). Each CPUID is a VM exit under a hypervisor (about 9 us on our KVM guests), so
 * the shim's start-up asks three leaves instead of eight. */
void counter_identify_basic(struct counter_identity *out);

#endif
