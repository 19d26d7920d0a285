/* Taking anchors: reading every served kernel clock between two counter reads, checking
 * each reading, and bringing the good ones to one counter value (take_anchor). Owns the
 * reading limits of an anchor. Reads plan_cfg and counts unreadable anchors in
 * clock_tally; may not touch the published line, its slots, the floor or the writer's
 * turn: what an anchor is used for is shim/resync.c's.
 *
 * Nothing unmeasured is served: every reading of the kernel's clocks is checked (the
 * call's result, a time in the timespec, the counter reads around it in order and close
 * enough, its agreement with the other readings), and a line is planned only from the
 * tracks whose readings passed (calib/segment.h). */
#define _GNU_SOURCE
#include "anchor.h"

#include "clock_state.h"
#include "real.h"

#include "convert.h"
#include "refclock.h"

#include <stdatomic.h>
#include <time.h>

/* One reading of kernel clock `id` between two ordered counter reads. */
static struct clock_reading read_clock(clockid_t id)
{
	struct timespec ts;
	struct clock_reading r = {.before = counter_read_ordered()};
	int rc = real_clock_gettime(id, &ts);
	r.after = counter_read_ordered();
	r.ok = rc == 0 && timespec_is_time(&ts);
	r.ns = r.ok ? timespec_to_ns(&ts) : 0;
	return r;
}

/* Every served clock at one counter value, each from readings of its own bracketed by
 * the counter: at least `want` good ones, one of them narrow where one can be
 * (plan_cfg.seek_narrow), in at most `tries` (a
 * clock that fails, reads out of order or slowly takes more). Each reading is brought to
 * the anchor's counter value on the rate of its clock's family as `line` last measured it
 * (the calibrated rate without a line). A clock with no good reading is left out of
 * a->valid. */
void take_anchor(struct anchor *a, int tries, int want, const struct line *line)
{
	const double tick = plan_cfg.calibrated_ns_per_tick;
	uint64_t narrow_ticks = (uint64_t)((double)plan_cfg.narrow_ns / tick);
	/* How slow a reading may be, and how far from the anchor it may be brought
	 * (plan_config_derive says why each). */
	const struct reading_limits limits = {
		.widest_ticks = (uint64_t)((double)plan_cfg.anchor_widest_ns / tick),
		.farthest_ticks = (uint64_t)(plan_cfg.anchor_farthest_ns / tick),
	};
	*a = (struct anchor){0};
	for (int k = 0; k < TRACKS; k++) {
		struct reading_limits own = limits;
		own.ns_per_tick = line ? line_rate(line, clock_table[k].family) : tick;
		struct clock_reading r[ANCHOR_READINGS_ROOM];
		int n = 0, good = 0, calls = 0;
		uint64_t first_good = 0;
		bool narrow = false;
		while (n < tries && n < ANCHOR_READINGS_ROOM && (good < want || (!narrow && plan_cfg.seek_narrow))) {
			r[n] = read_clock(clock_table[k].id);
			calls++;
			if (good && calls <= 2 * tries && reading_is_good(&r[n], 0, &own) &&
			    !reading_is_good(&r[n], first_good, &own)) {
				/* The thread was away between two readings (preempted, or a call
				 * that spun): the readings before the gap are dropped, not the ones
				 * after it, so that a preemption never leaves one reading to stand
				 * alone, unable to out-vote being out of order. */
				r[0] = r[n];
				n = 0;
				good = 0;
				first_good = 0;
				narrow = false;
			}
			if (reading_is_good(&r[n], first_good, &own)) {
				if (!good++)
					first_good = r[n].before + (r[n].after - r[n].before) / 2;
				narrow |= r[n].after - r[n].before <= narrow_ticks;
			}
			n++;
		}
		if (!anchor_track_from(a, k, r, n, &own))
			atomic_fetch_add_explicit(&clock_tally.unreadable_anchors, 1, memory_order_relaxed);
	}
	/* The anchor's moment: MONOTONIC's reading (without one, nothing is planned). */
	a->counter = a->at[SERVED_MONOTONIC];
}
