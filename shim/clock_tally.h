/* What the clock's writer side counts (struct clock_tally, the one object clock_tally),
 * apart from shim/clock.h so that the rooms of the writer side below shim/clock.c
 * (shim/clock_state.h) reach it without the door's header. Declarations only. */
#ifndef SHIM_CLOCK_TALLY_H
#define SHIM_CLOCK_TALLY_H

#include "clocks.h"

#include <stdint.h>

/* What the writer side counts, in one hidden object: clock_counters() reads it, and so can
 * a reader outside the process that finds it. Each word only grows (stopped_uncovered
 * goes from 0 to 1 once); fields are only appended. */
struct clock_tally {
	_Atomic uint64_t resyncs, reanchors, stops, kernel_reads, lost_writes, largest_error_ns;
	/* Set when serving stopped because the process may now run on CPUs that the verdict
	 * did not cover (its affinity widened after load), for tscshim_status's reason. */
	_Atomic uint64_t stopped_uncovered;
	/* Bit per enum served_clock whose track stopped (a published line says so), and why
	 * (enum track_stop, calib/segment.h); reads of a stopped clock answered at its hold
	 * rather than the kernel's lower value; anchors that had no good reading of a clock. */
	_Atomic uint64_t stopped_clocks;
	_Atomic uint64_t stop_cause[SERVED_CLOCK_COUNT];
	_Atomic uint64_t held_reads;
	_Atomic uint64_t unreadable_anchors;
	/* Times a stopped clock (or the whole line) served again, its kernel clock having
	 * held the bound once more after a back-off (a rate change passed, noise subsided). */
	_Atomic uint64_t resumes;
	/* Times the line stopped because the hypervisor's vmclock marker changed (a
	 * migration), to measure the rate again. */
	_Atomic uint64_t disruptions;
};
#pragma GCC visibility push(hidden)
extern struct clock_tally clock_tally;
#pragma GCC visibility pop

#endif
