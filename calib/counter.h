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

/* Ordered after every earlier load and instruction (the kernel's rdtsc_ordered()), with
 * lfence: dispatch-serializing on AMD under Linux and on Intel, and present on every
 * x86-64 CPU (some KVM guests lack rdtscp). The estimator and the timers use this one;
 * the served path takes whichever ordered read this CPU runs cheaper (counter_read_as).
 * mfence and lock-prefixed instructions do not hold rdtsc back on AMD. */
static inline uint64_t counter_read_ordered(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Ordered as counter_read_ordered() (rdtscp waits for every earlier instruction and
 * load), in one instruction; it also writes the CPU's TSC_AUX into ecx. Only where CPUID
 * says the CPU has it (counter_has_rdtscp): elsewhere it faults. Which of the two is
 * cheaper is a property of the CPU, not of the vendor: measured (shim/cost.c). */
static inline uint64_t counter_read_rdtscp(void)
{
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* How the served path reads the counter: one byte of the published configuration. */
enum counter_read {
	COUNTER_READ_UNFENCED, /* rdtsc: order within each thread only */
	COUNTER_READ_LFENCE,   /* lfence; rdtsc */
	COUNTER_READ_RDTSCP,   /* rdtscp */
};

/* lfence; rdtsc, the default ordered read, is laid out in line (no taken branch); the
 * others a branch away. */
static inline __attribute__((always_inline)) uint64_t counter_read_as(enum counter_read how)
{
	if (__builtin_expect(how == COUNTER_READ_LFENCE, 1))
		return counter_read_ordered();
	if (how == COUNTER_READ_RDTSCP)
		return counter_read_rdtscp();
	return counter_read_unfenced();
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
	bool ordered_read;  /* rdtscp available */
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

/* Whether the CPU has rdtscp: one CPUID leaf, asked only where the ordered reads are
 * measured (a VM exit under a hypervisor, so never on a path every process runs). */
bool counter_has_rdtscp(void);

/* Whether rdtscp, where CPUID says the CPU has it, also runs here: tried once under a
 * SIGILL handler of its own, restored after. An emulator's CPUID (valgrind's) may claim it
 * on a host that lacks it. For the command only: it changes the process's SIGILL
 * disposition for a moment, which a preloaded library must never do. */
bool counter_rdtscp_runs(void);

#endif
