/* The shim's clock as a piecewise-linear map from counter to time, and the pure planning
 * of its next segment from a kernel anchor (re-synchronization and watchdog decisions).
 *
 * Pure, so that unit tests can drive it with synthetic anchors: drift, a stale line, a
 * kernel that jumped ahead, a counter that ran ahead, offsets measured while preempted.
 * The publication and the hot path are in shim/. */
#ifndef CALIB_SEGMENT_H
#define CALIB_SEGMENT_H

#include "convert.h"

#include <stdbool.h>
#include <stdint.h>

enum track { TRACK_MONO, TRACK_RAW, TRACKS };

/* All fields 64-bit words: the shim copies them one relaxed atomic word at a time. */
struct segment {
	uint64_t start, until;   /* counter range; values are clamped at until */
	uint64_t base[TRACKS];   /* ns at start */
	uint64_t mult[TRACKS];
	uint64_t shift[TRACKS];
};

struct line {
	uint64_t active;
	uint64_t expiry;          /* counter value after which a caller re-synchronizes */
	struct segment cur, prev; /* prev serves counter values before cur.start */
	uint64_t realtime_offset; /* REALTIME - MONOTONIC, two's complement */
	uint64_t boottime_offset; /* BOOTTIME - MONOTONIC */
};

/* The kernel's clocks at one counter value (the midpoint of a bracket). Each offset,
 * read between two MONOTONIC reads m1 < m2, lies in [x - m2, x - m1]. */
struct anchor {
	uint64_t counter;
	uint64_t ns[TRACKS];
	int64_t realtime_lo, realtime_hi, boottime_lo, boottime_hi;
};

static inline uint64_t segment_value(const struct segment *s, enum track k, uint64_t t)
{
	if (t > s->until)
		t = s->until;
	uint64_t delta = t > s->start ? t - s->start : 0;
	struct conversion c = {.mult = s->mult[k], .shift = (uint32_t)s->shift[k]};
	return s->base[k] + conversion_apply(&c, delta);
}

static inline uint64_t line_value(const struct line *l, enum track k, uint64_t t)
{
	return segment_value(t >= l->cur.start ? &l->cur : &l->prev, k, t);
}

/* The first line, anchored on the kernel at a. */
void segment_first(struct line *out, const struct anchor *a, long double ns_per_tick,
		   uint64_t life_ticks);

enum plan_outcome {
	PLAN_CONTINUE,   /* a new segment continuing the old one's value, slewing to the kernel */
	PLAN_STALE,      /* nobody read for two lives: re-anchored on the kernel, not a fault */
	PLAN_REANCHOR,   /* the kernel was ahead beyond the watchdog: stepped forward to it */
	PLAN_STOP,       /* the counter ran ahead, or too many re-anchors: stop serving */
};

struct plan_inputs {
	const struct line *old;
	const struct anchor *anchor;
	uint64_t now;                  /* the caller's counter reading */
	long double rate[TRACKS];      /* the kernel's ns per tick, recently measured */
	uint64_t life_ticks;
	uint64_t watchdog_ns;
	uint32_t reanchors_in_a_row;   /* before this plan */
};

struct plan {
	struct line next;
	enum plan_outcome outcome;
	bool error_measured;           /* false for a stale line */
	int64_t error_ns;              /* old line - kernel at the anchor (MONOTONIC) */
};

void segment_plan(const struct plan_inputs *in, struct plan *out);

/* Follows the kernel's REALTIME and BOOTTIME offsets: only steps that a narrow bracket
 * proves, and BOOTTIME only forward. */
void offsets_refresh(struct line *next, const struct anchor *a);

/* Brackets wider than this were interrupted: their offsets are not used. */
#define OFFSET_BRACKET_MAX_NS 4000

#endif
