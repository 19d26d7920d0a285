/* Facts the kernel publishes about time, identity, CPUs and confinement, read from /proc,
 * /sys and a few system calls. Nothing here allocates: the shim's constructor uses it. */
#ifndef CALIB_SYSTEM_H
#define CALIB_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each returns 0, or -1 leaving an empty string. Newlines are stripped. */
int read_current_clocksource(char *buf, size_t size);
int read_available_clocksources(char *buf, size_t size);
int read_boot_id(char *buf, size_t size);

/* A set of CPU ids, 0..CPU_MASK_BITS-1: glibc's CPU_SETSIZE, in 128 bytes that live on
 * the caller's stack. A machine with more possible CPUs is refused (cpu_mask_allowed
 * fails), never half-read. */
#define CPU_MASK_BITS 1024
#define CPU_MASK_WORDS (CPU_MASK_BITS / 64)
struct cpu_mask {
	uint64_t word[CPU_MASK_WORDS];
};

/* The calling thread's allowed CPUs. Returns the count (>= 1), or -1 with errno (EINVAL:
 * the kernel knows more than CPU_MASK_BITS CPUs). */
int cpu_mask_allowed(struct cpu_mask *out);

/* The same for one thread of this process (the main thread: the process id), without
 * falling back: -1 if that thread is gone. */
int cpu_mask_allowed_of(int tid, struct cpu_mask *out);

/* The online CPUs (/sys/devices/system/cpu/online). Returns the count, or -1. */
int cpu_mask_online(struct cpu_mask *out);

/* Every CPU the kernel can bring online this boot (/sys/devices/system/cpu/possible: fixed
 * at boot). Returns the count, or -1. */
int cpu_mask_possible(struct cpu_mask *out);

/* Whether set holds every possible CPU, so that it covers any affinity a thread of this
 * boot can be given; false where /sys cannot tell. */
bool cpu_mask_holds_every_possible(const struct cpu_mask *set);

/* Pure helpers. cpu_mask_next: the lowest CPU in the set above `after` (pass -1 to
 * start), or -1 at the end; the one enumerator every caller uses. */
static inline bool cpu_mask_has(const struct cpu_mask *m, unsigned cpu)
{
	return cpu < CPU_MASK_BITS && (m->word[cpu / 64] >> (cpu % 64)) & 1;
}
static inline void cpu_mask_add(struct cpu_mask *m, unsigned cpu)
{
	if (cpu < CPU_MASK_BITS)
		m->word[cpu / 64] |= 1ull << (cpu % 64);
}
int cpu_mask_next(const struct cpu_mask *m, int after);
uint32_t cpu_mask_count(const struct cpu_mask *m);
bool cpu_mask_is_subset(const struct cpu_mask *part, const struct cpu_mask *whole);
bool cpu_mask_equal(const struct cpu_mask *a, const struct cpu_mask *b);

/* Lowercase hex, CPU 0 the lowest bit of the last digit, no leading zeros ("0" for the
 * empty set): the form the calibration records store. At most CPU_MASK_BITS / 4 digits. */
#define CPU_MASK_HEX_MAX (CPU_MASK_BITS / 4)
size_t cpu_mask_to_hex(const struct cpu_mask *m, char *buf, size_t size);
/* Strict inverse of cpu_mask_to_hex over len bytes; 0, or -1 for anything else. */
int cpu_mask_from_hex(const char *s, size_t len, struct cpu_mask *out);

/* The Seccomp: line of /proc/self/status: 0 none, 1 strict, 2 filter; -1 unknown (no
 * /proc, an old kernel). A filter's rules cannot be read back by the process itself. */
int read_seccomp_mode(void);

#endif
