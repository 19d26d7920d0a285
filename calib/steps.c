/* The steps build's notes (calib/steps.h): the counter and the page faults at each step's
 * end, the staged costs of a dear host, and the notes' file at exit. Owns nothing else; in
 * every build but the steps build this file is empty. Test instrument, not production code:
 * it may call libc freely. */
#ifdef TSCTEST_STEPS_BUILD
#define _GNU_SOURCE
#include "steps.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define NOTES_MAX 512

struct note {
	const char *name;
	long arg;
	uint64_t ticks;  /* the counter at the step's end, less the notes' own time so far */
	long faults;     /* the process's page faults at the step's end */
	long reads;      /* the kernel clock reads so far */
};

static struct {
	struct note notes[NOTES_MAX];
	int count;
	uint64_t excluded;         /* ticks spent taking notes, left out of every step */
	uint64_t start_ticks, start_ns;
	uint64_t syscall_cost_ticks, fault_cost_ticks;
	long last_faults;
	long reads;
	const char *file;
	bool on;
} steps;

/* The process's page faults so far, by the system call itself (not raw_syscall.h: that would
 * note it). */
static long faults_now(void)
{
	struct rusage u;
	if (syscall(SYS_getrusage, RUSAGE_SELF, &u) != 0)
		return 0;
	return u.ru_minflt + u.ru_majflt;
}

static uint64_t raw_ns(void)
{
	struct timespec t;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void spin(uint64_t ticks)
{
	uint64_t until = __rdtsc() + ticks;
	while (__rdtsc() < until)
		;
}

void steps_note(const char *name, long arg)
{
	if (!steps.on || steps.count >= NOTES_MAX)
		return;
	uint64_t t0 = __rdtsc();
	long faults = faults_now();
	if (steps.fault_cost_ticks && faults > steps.last_faults) {
		/* the staged price of this step's faults, counted in the step */
		uint64_t excluded_before = __rdtsc() - t0;
		spin((uint64_t)(faults - steps.last_faults) * steps.fault_cost_ticks);
		steps.excluded += excluded_before;
		t0 = __rdtsc();
		faults = faults_now();
	}
	steps.last_faults = faults;
	steps.notes[steps.count++] = (struct note){name, arg, t0 - steps.excluded, faults, steps.reads};
	steps.excluded += __rdtsc() - t0;
}

void steps_kernel_read(void)
{
	steps.reads++;
}

void steps_syscall_begin(long number)
{
	steps_note("before a system call", number);
}

void steps_syscall_end(long number)
{
	if (steps.syscall_cost_ticks)
		spin(steps.syscall_cost_ticks);
	steps_note("system call", number);
}

static uint64_t number_from(const char *name)
{
	const char *v = getenv(name);
	return v ? strtoull(v, NULL, 10) : 0;
}

/* Before the shim's constructor (101): the notes' pages and getrusage's path faulted in
 * here, so that no step pays for them; the counter's rate taken against the raw clock. */
#pragma GCC diagnostic ignored "-Wprio-ctor-dtor"
__attribute__((constructor(100))) static void steps_begin(void)
{
	steps.file = getenv("TSCTEST_STEPS_FILE");
	if (!steps.file)
		return;
	memset(&steps.notes, 0, sizeof steps.notes);
	steps.start_ns = raw_ns();
	steps.start_ticks = __rdtsc();
	uint64_t syscall_ns = number_from("TSCTEST_SYSCALL_COST_NS"), fault_ns = number_from("TSCTEST_FAULT_COST_NS");
	if (syscall_ns || fault_ns) { /* the rate now, over 2 ms, to stage the costs */
		while (raw_ns() < steps.start_ns + 2000000)
			;
		double ticks_per_ns = (double)(__rdtsc() - steps.start_ticks) / (double)(raw_ns() - steps.start_ns);
		steps.syscall_cost_ticks = (uint64_t)(syscall_ns * ticks_per_ns);
		steps.fault_cost_ticks = (uint64_t)(fault_ns * ticks_per_ns);
	}
	steps.last_faults = faults_now();
	steps.on = true;
}

/* One block per process, appended in one write: "process PID TICKS_PER_NS", then one line
 * per note, "NAME<TAB>ARG<TAB>TICKS<TAB>FAULTS<TAB>READS" (the ticks, faults and kernel
 * clock reads of the step it ends, since the note before), then "end". */
__attribute__((destructor)) static void steps_end(void)
{
	if (!steps.on)
		return;
	steps.on = false;
	double ticks_per_ns = (double)(__rdtsc() - steps.start_ticks) / (double)(raw_ns() - steps.start_ns);
	static char out[NOTES_MAX * 96 + 128];
	size_t n = (size_t)snprintf(out, sizeof out, "process %d %.6f\n", getpid(), ticks_per_ns);
	uint64_t ticks = 0;
	long faults = 0, reads = 0;
	for (int i = 0; i < steps.count && n < sizeof out - 96; i++) {
		const struct note *s = &steps.notes[i];
		if (i > 0)
			n += (size_t)snprintf(out + n, sizeof out - n, "%s\t%ld\t%llu\t%ld\t%ld\n", s->name, s->arg,
					      (unsigned long long)(s->ticks - ticks), s->faults - faults, s->reads - reads);
		ticks = s->ticks;
		faults = s->faults;
		reads = s->reads;
	}
	n += (size_t)snprintf(out + n, sizeof out - n, "end\n");
	int fd = open(steps.file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, out, n) < 0) {
		}
		close(fd);
	}
}
#endif
