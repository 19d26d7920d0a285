/* The estimator and the rate calibration run in a short-lived child process, so that the
 * process that wants the verdict (the shim's constructor, inside someone else's program)
 * creates no thread, is never marked multi-threaded (__libc_single_threaded stays 1),
 * waits no longer than its deadline, and survives whatever the child meets: a seccomp
 * filter that kills on sched_setaffinity or clone-for-threads, a CPU that never runs a
 * pinned worker, a crash. Why a child and not threads: doc/STARTUP.md. */
#ifndef CALIB_ESTIMATE_CHILD_H
#define CALIB_ESTIMATE_CHILD_H

#include "estimate.h"

#include <stddef.h>
#include <stdint.h>

struct measurement {
	struct estimate_analysis analysis;
	uint32_t cpu_count;      /* CPUs the estimate covered */
	uint64_t rate_millihz;   /* 0 when the calibration failed */
	uint64_t elapsed_ns;     /* the child's estimate and calibration */
	char problem[160];       /* "" or why the estimate or calibration could not run */
};

/* Forks twice (the estimator is orphaned at once, see estimate_child.c); it runs
 * estimate_run(config) and then calibrate_rate(calibrate_ns), writes a struct measurement
 * to a pipe and _exit()s (no atexit handler, no stdio flush). The caller waits at most
 * wait_ns for the estimator's first word (its pid: the child's start, which a loaded
 * microVM makes dear) and wait_ns from then for its answer, reaping the intermediate
 * process meanwhile; past either the estimator is killed with SIGKILL and not waited for,
 * and the intermediate, if it has not exited yet, is killed and reaped (it needs only to
 * be scheduled once more). Returns 0 with *out; -1 with err when no child
 * could be started or none answered in time (killed, crashed: an inconclusive estimate). */
int measure_in_child(const struct estimate_config *config, uint64_t calibrate_ns,
		     uint64_t wait_ns, struct measurement *out, char *err, size_t err_size);

#endif
