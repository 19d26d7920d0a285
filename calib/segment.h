/* The shim's clocks as a piecewise-linear map from counter to time, and the pure planning
 * of its next segment from a kernel anchor (re-synchronization and watchdog decisions).
 *
 * Pure, so that unit tests can drive it with synthetic anchors: drift, jitter, a stale
 * line, a kernel that jumped ahead, a counter that ran ahead, wide brackets, values that
 * kernel reads handed out. The publication and the hot path are in shim/.
 *
 * Every served clock is a track of its own (base, mult, shift), indexed by enum
 * served_clock, so the hot path needs no offset arithmetic and BOOTTIME and REALTIME
 * follow the kernel by the same slewing as MONOTONIC instead of by steps.
 *
 * Invariants that planning keeps (tests in test/test_segment.c):
 *  - each track of a line is a non-decreasing function of the counter;
 *  - a new line is pointwise at or above the old one on every non-wall track, so a
 *    reader holding either publication never sees time go back;
 *  - a new segment's base is at or above every value a kernel read handed out before it
 *    was planned (the floors), except for a wall clock that the kernel stepped back. */
#ifndef CALIB_SEGMENT_H
#define CALIB_SEGMENT_H

#include "clocks.h"
#include "convert.h"

#include <stdbool.h>
#include <stdint.h>

#define TRACKS SERVED_CLOCK_COUNT

/* All fields are 64-bit words: the shim copies lines one relaxed atomic word at a time. */
struct track_params {
	uint64_t base;  /* ns at the segment's start */
	uint64_t mult;
	uint64_t shift;
};

struct segment {
	uint64_t start, until;  /* counter range; values are clamped at until */
	struct track_params clk[TRACKS];
};

/* What the rate is measured against: two past anchors, the older one 4 to 8 lives back. */
struct rate_state {
	uint64_t ref_counter, ref_ns[2];    /* [enum clock_family] */
	uint64_t cand_counter, cand_ns[2];
	uint64_t ns_per_tick_q62[2];        /* the kernel's recent rate, per family, * 2^62 */
};

struct line {
	/* What the hot path reads: expiry, then the current segment. An inactive line has
	 * expiry == cur.start, so every read takes the slow path, which sees active == 0. */
	uint64_t expiry;          /* counter value after which a caller re-synchronizes */
	struct segment cur;
	/* From here to cur.start the hot path serves prev as it is: no floor binds and no
	 * clamp applies there (line_seal). cur.start when that does not hold. */
	uint64_t prev_direct_from;
	/* The rest is for the slow path and the next plan. */
	uint64_t active;
	struct segment prev;      /* serves counter values before cur.start */
	uint64_t prev_floor[TRACKS]; /* ...never below these (what kernel reads handed out) */
	struct rate_state rate;
	uint64_t reanchors_in_a_row;
};

/* The kernel's clocks at one counter value. ns[k] is the kernel's clock k at counter,
 * known to lie within +/- width_ns[k] / 2 (the bracket, or the bracket plus the interval
 * of an offset read between two MONOTONIC reads). */
struct anchor {
	uint64_t counter;
	uint64_t ns[TRACKS];
	uint64_t width_ns[TRACKS];
};

struct plan_config {
	uint64_t life_ticks;      /* a segment is re-synchronized after one life, used for two */
	uint64_t watchdog_ns;     /* disagreement that is a fault, not drift */
	uint64_t narrow_ns;       /* anchors this precise are trusted fully; wider, less */
	double calibrated_ns_per_tick;
	double max_rate_deviation; /* the kernel's rate is kept within this of the calibrated */
};

static inline uint64_t segment_value(const struct segment *s, int k, uint64_t t)
{
	if (t > s->until)
		t = s->until;
	uint64_t delta = t > s->start ? t - s->start : 0;
	struct conversion c = {.mult = s->clk[k].mult, .shift = (uint32_t)s->clk[k].shift};
	return s->clk[k].base + conversion_apply(&c, delta);
}

static inline uint64_t line_value(const struct line *l, int k, uint64_t t)
{
	if (t >= l->cur.start)
		return segment_value(&l->cur, k, t);
	uint64_t v = segment_value(&l->prev, k, t);
	return v > l->prev_floor[k] ? v : l->prev_floor[k];
}

/* One range of counter values the hot path serves in line, with its read form (calib/
 * convert.h): a value t with t - from < span is served as form applied to t - start.
 * span 0 serves nothing (every read takes the slow path). A cache line each, so that a
 * read touches one line of its slot besides the state, and finds in it all it needs
 * from one address. */
struct read_range {
	_Alignas(64) uint64_t from;
	uint64_t span;
	uint64_t start;
	struct split_conversion form;
};
_Static_assert(sizeof(struct read_range) == 64, "a read range fills its cache line");

/* What the hot path reads instead of the line: each track's range in read form, for cur
 * ([cur.start, expiry)) and prev ([prev_direct_from, cur.start), where prev serves as it
 * is). Derived, so kept out of struct line: the plans and the slow path's copies never
 * carry it; only a published slot does. */
struct line_forms {
	struct read_range cur[TRACKS];
	struct read_range prev[TRACKS];
};

/* The last step before a line is published: derives the read forms for the ranges the
 * hot path serves, and prev_direct_from, the range before cur.start in which
 * segment_value(&prev, ...) alone is line_value(). A current segment whose range no read
 * form covers (over 2^63 ns: only a corrupt plan) stops the line. */
void line_seal(struct line *l, struct line_forms *forms);

/* Makes l inactive: every read takes the slow path, which passes through. */
void line_stop(struct line *l);

/* A fresh line anchored on the kernel at a, at the calibrated rate. */
void segment_first(struct line *out, const struct anchor *a, const struct plan_config *cfg);

enum plan_outcome {
	PLAN_CONTINUE,   /* a new segment continuing the old one's value, slewing to the kernel */
	PLAN_STALE,      /* the old line lapsed (nobody re-synchronized in time): re-anchored */
	PLAN_REANCHOR,   /* the kernel was ahead beyond the watchdog: stepped forward to it */
	PLAN_STOP,       /* the counter ran ahead, or too many re-anchors: stop serving */
};

struct plan_inputs {
	const struct line *old;
	const struct anchor *anchor;
	uint64_t now;                   /* the caller's counter reading */
	const struct plan_config *cfg;
};

struct plan {
	struct line next;
	enum plan_outcome outcome;
	bool error_measured;            /* false for a lapsed line */
	int64_t error_ns;               /* old line - kernel at the anchor (MONOTONIC) */
	uint32_t stepped;               /* bit per track the plan stepped to the kernel */
};

/* The tracks a floor must not hold up: a wall clock the kernel stepped back. */
static inline uint32_t plan_floor_exempt(const struct plan *p)
{
	return p->stepped & (1u << SERVED_REALTIME);
}

/* The next line after old, from an anchor at or past old's current segment's start (a
 * writer re-synchronizes at or past its expiry; a lapsed line is past its hard end).
 * The plan keeps old's current segment as the new previous one and drops old's previous
 * one, which serves the counter before that start: a caller whose anchor may lie before
 * it (a fork child continuing a line its parent had just published) takes old as it is
 * instead (shim/clock.c, recover). */
void segment_plan(const struct plan_inputs *in, struct plan *out);

/* Fallbacks. A reader past a line's hard end reads the kernel's MONOTONIC (never
 * MONOTONIC_RAW: one floor serves every track) and hands out, for track k, the line's
 * value at its end moved on by what MONOTONIC moved past the line's end, at track k's
 * rate relative to MONOTONIC. line_apply_floor() holds a planned line at or above what
 * those values were, by the same mapping; it returns false when the floor is so far
 * beyond the plan that the plan is obsolete (re-plan from a fresh anchor). */
uint64_t line_kernel_read_value(const struct line *l, int k, uint64_t mono_value);
bool line_apply_floor(struct line *next, uint64_t floor, uint32_t skip_tracks);

/* The kernel's rate per family as last measured, ns per tick. */
double line_rate(const struct line *l, enum clock_family f);

/* Whether a line and an anchor describe the same kernel clocks (within the watchdog on
 * MONOTONIC and BOOTTIME): false in a fork child that a time namespace moved. */
bool line_agrees(const struct line *l, const struct anchor *a, uint64_t watchdog_ns);

/* The gain given to an anchor's measured error: 1 for a narrow bracket, less for a wide
 * one, so that a preempted or slow measurement moves the line only a little. */
double anchor_gain(uint64_t width_ns, uint64_t narrow_ns);

#endif
