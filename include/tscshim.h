/* tscshim's public interface.
 *
 * The preloaded libtscshim.so exports clock_gettime, __clock_gettime, gettimeofday and
 * timespec_get, and the query functions below. A program that was not built against
 * tscshim finds them with dlsym(RTLD_DEFAULT, "tscshim_status_sized"); when the shim is
 * not loaded the lookup returns NULL. */
#ifndef INCLUDE_TSC_SHIM_H
#define INCLUDE_TSC_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define TSCSHIM_VERSION "0.2.0"
#define TSCSHIM_REASON_SIZE 192
/* The newest layout of struct tscshim_status this header declares: the version-1 fields,
 * then version 2's, then version 3's. Fields are only ever appended, each version's after
 * the last; a caller passes tscshim_status_sized() the size it was built with. */
#define TSCSHIM_STATUS_VERSION 6

#ifdef __cplusplus
extern "C" {
#endif

/* Where the verdict and the rate came from. */
enum tscshim_source {
	TSCSHIM_SOURCE_NONE,          /* nothing was needed or found (refused early, disabled) */
	TSCSHIM_SOURCE_SYSTEM_RECORD, /* the machine-wide record (TSCSHIM_SYSTEM_RECORD) */
	TSCSHIM_SOURCE_USER_CACHE,    /* the per-user cache (TSCSHIM_CACHE) */
	TSCSHIM_SOURCE_MEASURED,      /* measured by this process's decision */
};

/* Why the counter no longer serves a clock (version 4's stop_cause). */
enum tscshim_stop {
	TSCSHIM_STOP_NONE,       /* it serves (or was never to serve) */
	TSCSHIM_STOP_UNREADABLE, /* the kernel's clock gave no good reading: its calls failed,
	                          * read out of order, or took over twice TSCSHIM_MAX_ERROR_NS,
	                          * at the start or at two re-synchronizations in a row */
	TSCSHIM_STOP_NOISY,      /* its readings are noisier than about half the bound */
	TSCSHIM_STOP_BEHIND,     /* the kernel's clock fell behind the counter beyond the bound
	                          * (frozen, slowed or stepped back) */
	TSCSHIM_STOP_JUMPS,      /* it disagreed beyond the bound at three re-synchronizations
	                          * in a row: it jumps, or its rate keeps changing */
	TSCSHIM_STOP_UNCOVERED,  /* the process may now run on CPUs the verdict did not compare */
	TSCSHIM_STOP_CORRUPT,    /* an internal plan no read form covers */
	TSCSHIM_STOP_DISRUPTED,  /* the hypervisor's vmclock device said the counter was
	                          * disrupted (a migration): its rate is measured again */
};

/* The per-clock counters, in this order (the stats line's fields). */
enum tscshim_stat_clock {
	TSCSHIM_STAT_MONOTONIC,
	TSCSHIM_STAT_MONOTONIC_RAW,
	TSCSHIM_STAT_BOOTTIME,
	TSCSHIM_STAT_REALTIME,
	TSCSHIM_STAT_OTHER, /* every clock the shim does not serve */
	TSCSHIM_STAT_CLOCKS,
};

struct tscshim_status {
	/* ---- version 1: filled by tscshim_status() and tscshim_status_sized() ---- */
	int active;             /* 1: served clocks read the TSC; 0: everything passes through */
	char reason[TSCSHIM_REASON_SIZE]; /* why (the gate's reason, or why the path was left) */
	uint64_t rate_millihz;  /* the counter's calibrated rate, 0 if unknown */
	uint64_t max_shift_ns;  /* the estimator's bound, UINT64_MAX if unknown */
	uint64_t mult;          /* the current line's conversion: ns = (ticks * mult) >> shift */
	uint32_t shift;
	uint32_t served_clocks; /* bit set: 1 monotonic, 2 monotonic_raw, 4 boottime, 8 realtime */
	int fenced;             /* 1: ordered counter reads */
	int from_cache;         /* 1: the verdict and rate came from a file, the machine-wide
	                         * record or the per-user cache (version 2's source says which) */
	uint64_t resyncs;       /* re-synchronizations so far in this process */
	uint64_t fallbacks;     /* re-anchors plus stops (version 2 counts each alone) */
	uint64_t stats_write_failures; /* TSCSHIM_STATS writes that failed; 1 already at load if
	                                * the destination was then unusable (see tscshim(7)) */

	/* ---- version 2: filled by tscshim_status_sized() only ---- */
	uint32_t version;       /* the newest version the library that filled this knows (its
	                         * TSCSHIM_STATUS_VERSION), whatever the size passed */
	int decided;            /* 1: the decision ran (at the TSCSHIM_DECIDE_AFTER-th read of
	                         * a served clock, at load on a cold start, or at this query);
	                         * 0: not yet */
	int source;             /* enum tscshim_source */
	int costs_from_record;  /* 1: the costs below came from a record; 0: measured now */
	int not_worth_it;       /* 1: reliable, but the counter is not cheaper (TSCSHIM_SERVE=auto) */
	int stopped_uncovered;  /* 1: stopped: the CPU affinity widened beyond the verdict's CPUs */
	uint64_t decide_ns;     /* how long the decision took, at the call that made it */
	/* The benefit gate's per-call costs in picoseconds (0: not measured), and the build
	 * of the library they belong to (its GNU build-id folded to 64 bits). */
	uint64_t cost_kernel_ps, cost_syscall_ps, cost_fenced_ps, cost_unfenced_ps;
	uint64_t cost_build;
	uint64_t build_id;      /* this library's build, in the same form */
	/* Calls per enum tscshim_stat_clock: all of them, and those served from the counter.
	 * Counted only while TSCSHIM_STATS is set; 0 otherwise. The length is fixed: a clock
	 * served later gets fields of its own in a later version, never a longer array. */
	uint64_t calls[TSCSHIM_STAT_CLOCKS], served[TSCSHIM_STAT_CLOCKS];
	uint64_t reanchors;     /* the watchdog moved the line onto the kernel's clock */
	uint64_t stops;         /* the watchdog stopped serving */
	uint64_t largest_error_ns; /* the largest disagreement a re-synchronization measured */
	uint64_t kernel_reads;  /* reads past a line's hard end answered from the kernel */
	uint64_t lost_writes;   /* re-synchronizations dropped because another published */
	uint64_t passed_while_deciding; /* served-clock calls other threads passed through
	                                 * to the kernel while one thread decided */

	/* ---- version 3: filled by tscshim_status_sized() only ---- */
	/* How the served path reads the counter (a read plan): bits 0-1 the instruction (0
	 * rdtsc, unfenced; 1 lfence; rdtsc; 2 rdtscp), bit 2 (value 4) set where the counter
	 * is read before the line's loads rather than after them. read_plan is the one in
	 * use while the counter serves (0 otherwise); cost_fenced_plan the fenced plan that
	 * cost_fenced_ps is of, the cheapest measured (0: none measured). */
	uint32_t read_plan;
	uint32_t cost_fenced_plan;

	/* ---- version 4: filled by tscshim_status_sized() only ---- */
	/* The clocks the decision serves that the counter does not serve now (a bit per clock,
	 * as served_clocks, which no longer has them): their kernel clock misbehaved, at the
	 * start or since, and each passes through (after holding at what it served until the
	 * kernel's value passed it). Why, per enum tscshim_stat_clock: an enum tscshim_stop. */
	uint32_t stopped_clocks;
	uint32_t stop_cause[TSCSHIM_STAT_CLOCKS];
	uint64_t held_reads;        /* reads of a stopped clock answered at what it had served,
	                             * the kernel's value being below it */
	uint64_t unreadable_anchors; /* re-synchronizations that had no good reading of a clock */

	/* ---- version 5: filled by tscshim_status_sized() only ---- */
	/* Times a stopped clock served again: its kernel clock held the bound once more when
	 * measured after a back-off (a change of rate that passed, noise that subsided).
	 * stopped_clocks says which are stopped now. */
	uint64_t resumes;

	/* ---- version 6: filled by tscshim_status_sized() only ---- */
	/* 1: the hypervisor's vmclock device is watched (it exists, as the record says, and
	 * this process could map it): a read that finds its disruption marker changed (a
	 * live migration) stops the counter until the rate is measured again. */
	uint32_t disruption_watched;
	uint32_t reserved_v6;   /* 0 */
	uint64_t disruptions;   /* times the marker changed while the counter served */
};

/* Fills the version-1 fields of *out (a caller built against version 1 passes a struct
 * of that size). Decides first if no served clock was read yet. Async-signal-safe.
 * Returns 0. */
int tscshim_status(struct tscshim_status *out);

/* Fills the first `size` bytes of *out (pass sizeof *out), at most the whole structure
 * this library knows; fields beyond what it fills are left as they were. Decides first
 * if no served clock was read yet. Async-signal-safe. Returns the version it filled: the
 * newest whose fields all fit in `size` and that this library knows (1 for a version-1
 * structure, TSCSHIM_STATUS_VERSION for this header's), or -1, filling nothing, if size is
 * smaller than version 1's fields. Its name stays as the structure grows. */
int tscshim_status_sized(struct tscshim_status *out, size_t size);

/* The same function under its earlier name, kept so that programs built against that
 * name keep finding it (dlsym) and loading (linked). */
int tscshim_status_v2(struct tscshim_status *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif
