/* tscshim's public interface.
 *
 * The preloaded libtscshim.so exports clock_gettime, __clock_gettime, gettimeofday and
 * timespec_get, and the query functions below. A program that was not built against
 * tscshim finds them with dlsym(RTLD_DEFAULT, "tscshim_status"); when the shim is not
 * loaded the lookup returns NULL. */
#ifndef INCLUDE_TSC_SHIM_H
#define INCLUDE_TSC_SHIM_H

#include <stdint.h>

#define TSCSHIM_VERSION "0.2.0"
#define TSCSHIM_REASON_SIZE 192

#ifdef __cplusplus
extern "C" {
#endif

struct tscshim_status {
	int active;             /* 1: served clocks read the TSC; 0: everything passes through */
	char reason[TSCSHIM_REASON_SIZE]; /* why (the gate's reason, or why the path was left) */
	uint64_t rate_millihz;  /* the counter's calibrated rate, 0 if unknown */
	uint64_t max_shift_ns;  /* the estimator's bound, UINT64_MAX if unknown */
	uint64_t mult;          /* the current line's conversion: ns = (ticks * mult) >> shift */
	uint32_t shift;
	uint32_t served_clocks; /* bit set: 1 monotonic, 2 monotonic_raw, 4 boottime, 8 realtime */
	int fenced;             /* 1: ordered counter reads */
	int from_cache;         /* 1: the verdict and rate came from the calibration cache */
	uint64_t resyncs;       /* re-synchronizations so far in this process */
	uint64_t fallbacks;     /* times the watchdog re-anchored or gave up */
	uint64_t stats_write_failures; /* TSCSHIM_STATS writes that failed; 1 already at load if
	                                * the destination was then unusable (see tscshim(7)) */
};

/* Fills *out. Async-signal-safe. Returns 0. */
int tscshim_status(struct tscshim_status *out);

#ifdef __cplusplus
}
#endif

#endif
