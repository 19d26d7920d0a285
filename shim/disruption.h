/* The hypervisor's word that the counter was disrupted (a live migration): the vmclock
 * device's marker (calib/vmclock.h), mapped where the record says the device exists, and
 * the marker the published line was anchored under. The hot path (shim/line.h) compares
 * the two at every served read; the slow path stops the line when they differ
 * (shim/slow_path.c), and the writer that published the stop notes the new marker. */
#ifndef SHIM_DISRUPTION_H
#define SHIM_DISRUPTION_H

#include "line.h"

#include <stdbool.h>
#include <stdint.h>

/* Maps the device and starts the watch: from here, a read that finds the marker changed
 * takes the slow path. False, saying why at TSCSHIM_VERBOSE=1, where it cannot be read
 * (absent, refused, not a vmclock this code reads). Async-signal-safe. */
bool disruption_watch_start(void);

/* Whether the device exists where this build looks (one system call). */
bool disruption_device_exists(void);

/* The marker now, read under the page's sequence count; false where no page is watched
 * or the hypervisor kept writing. */
bool disruption_marker_now(uint64_t *marker);

/* The marker the line now published was anchored under (a writer's, after it published). */
static inline void disruption_note_seen(uint64_t marker)
{
	__atomic_store_n(&clock_config.disruption_seen, marker, __ATOMIC_RELEASE);
}

/* The moment of the disruption that changed the marker to `marker`: the first counter
 * value a read took after it (t, for the first read that asks). Every value served
 * before the move came from a counter read before it, so below this; the line stopped
 * for it is held flat at its value here, and reads until that stop is published hand out
 * no less (shim/slow_path.c). Keyed by the marker, which never repeats: a later
 * disruption has a moment of its own. Lock-free (one 16-byte compare-and-swap). */
uint64_t disruption_moment(uint64_t marker, uint64_t t);

/* The marker as a read finds it (one whole 64-bit load), 0 where none is watched. */
static inline uint64_t disruption_marker_seen_now(void)
{
	const uint64_t *at = __atomic_load_n(&clock_config.disruption_marker, __ATOMIC_ACQUIRE);
	return at ? __atomic_load_n(at, __ATOMIC_ACQUIRE) : 0;
}

/* Whether the hypervisor reported a disruption the published line does not know of. */
static inline bool disruption_unseen(void)
{
	const uint64_t *at = __atomic_load_n(&clock_config.disruption_marker, __ATOMIC_ACQUIRE);
	return at && __atomic_load_n(at, __ATOMIC_ACQUIRE) != __atomic_load_n(&clock_config.disruption_seen, __ATOMIC_ACQUIRE);
}

#endif
