/* The served clocks' writer side: the first line, re-synchronization, the slow part of a
 * read, stopping, and the counters of what happened. The published line and the hot path
 * are in line.h. */
#ifndef SHIM_CLOCK_H
#define SHIM_CLOCK_H

#include "clock_tally.h"
#include "clocks.h"
#include "counter.h"
#include "system.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct line_setup {
	long double ns_per_tick;  /* calibrated slope of CLOCK_MONOTONIC against the counter */
	uint64_t max_error_ns;
	uint64_t resync_ms;
	uint32_t served;          /* bit set of enum served_clock */
	unsigned read_plan;       /* how the served path reads the counter (line.h) */
	struct cpu_mask covered;  /* the CPUs the verdict compared: serving stops if the
	                           * process may run elsewhere (checked at re-synchronization) */
	bool covers_every_cpu;    /* covered holds every CPU possible this boot: no affinity a
	                           * thread can be given leaves it, so nothing is checked */
	bool signals_blocked;     /* the caller blocks every signal throughout (the decision
	                           * does): the first publication need not block them again */
	bool wiped_marked;        /* the caller had the kernel mark the fork-wiped pages (the
	                           * decision's claim does, where other threads exist): not again */
	bool watch_disruption;    /* the record says the hypervisor's vmclock device exists:
	                           * map it and watch its disruption marker (shim/disruption.h) */
	uint64_t kernel_read_ns;  /* what a read of the kernel's clock costs (the costs'), 0 unknown */
};

/* Anchors the first line on the kernel's clocks and opens the counter path for the
 * served clocks. Returns 0, or -1 with a fixed message in *err. Async-signal-safe. */
int clock_start(const struct line_setup *setup, const char **err);

/* How the served path reads the counter from now on (the plan measured cheapest, once
 * the costs are known, after clock_start). */
void clock_set_read_plan(unsigned plan);

/* Closes the path clock_start opened: every call passes through again, the counters say
 * inactive. */
void clock_close(void);

/* Finishes a read the inline part left (READ_SLOW), with a counter value of its own.
 * Returns 1 with *ts filled; 0: pass the call through (no line could be drawn, or a wall
 * clock past a line's hard end); -1: the kernel's clock, read here in the caller's stead,
 * failed, and errno is what it set: the caller returns that failure as the kernel's. A
 * stopped clock's read is the kernel's value, held at or above what it served. */
int clock_read_slow(unsigned clock, struct timespec *ts);

struct clock_counters {
	uint64_t resyncs, reanchors, stops, largest_error_ns;
	uint64_t kernel_reads;  /* reads past a line's hard end answered from the kernel */
	uint64_t lost_writes;   /* re-synchronizations dropped because another published */
	int active;
	bool stopped_uncovered; /* stopped: the affinity widened beyond the verdict's CPUs */
	uint32_t served_at_start; /* bit per enum served_clock the first line opened */
	uint32_t stopped_clocks;  /* bit per enum served_clock stopped, at the start or since */
	uint32_t stop_cause[SERVED_CLOCK_COUNT]; /* enum track_stop, per clock */
	uint64_t held_reads;      /* reads of a stopped clock held above the kernel's value */
	uint64_t unreadable_anchors; /* anchors with no good reading of some clock */
	uint64_t resumes;         /* stopped clocks that served again */
	uint32_t disruption_watched; /* 1: the vmclock device's marker is watched */
	uint64_t disruptions;     /* stops for a disruption the hypervisor reported */
	uint64_t mult;
	uint32_t shift;
};
void clock_counters(struct clock_counters *out);

#endif
