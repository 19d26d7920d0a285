/* The shim's clocks as a piecewise-linear map from counter to time, and the pure planning
 * of its next segment from a kernel anchor (re-synchronization and watchdog decisions).
 *
 * Pure, so that unit tests can drive it with synthetic anchors: drift, jitter, a stale
 * line, a kernel that jumped ahead, a counter that ran ahead, wide brackets, values that
 * kernel reads handed out, readings that failed, a reference too noisy for the bound. The
 * publication and the hot path are in shim/.
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
 *    was planned (the floors), except for a wall clock that the kernel stepped back;
 *  - nothing unmeasured is served: an anchor carries only the tracks whose readings were
 *    good (the call succeeded, the counter reads around it were in order, the bracket
 *    within twice the bound); a track without one continues uncorrected for one life at
 *    most, and a track whose kernel clock cannot be held within the bound (no good
 *    reading twice in a row, readings too noisy, the kernel behind the counter beyond the
 *    bound) stops: its reads get the kernel's value, never below what it handed out
 *    (hold_ns), and pass through once the kernel is past that. */
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

/* What the rate is measured against, per enum clock_family: two past readings, the older
 * one 4 to 8 lives back (ref_counter 0: none yet); and the rate the estimate is kept near
 * (the calibrated one, or the one a rate change was last measured at). */
struct rate_state {
	uint64_t ref_counter[2], ref_ns[2];
	uint64_t cand_counter[2], cand_ns[2];
	uint64_t ns_per_tick_q62[2];        /* the kernel's recent rate, * 2^62 */
	uint64_t center_q62[2];             /* the estimate stays within max_rate_deviation of it */
	uint64_t unconfirmed_q62[2];        /* the kernel's rate over the last interval, for the
	                                     * next to confirm (0: none): a line stopped whole,
	                                     * its last try's (segment_resume); a serving line,
	                                     * a small change of rate its last anchor showed
	                                     * (rates_to_adopt) */
};

/* Why a track no longer serves (struct track_health's stopped), 0 while it does. A whole
 * line stops (active 0) with one cause for every track it still served. */
enum track_stop {
	TRACK_SERVING,
	TRACK_UNREADABLE,  /* no good reading of its kernel clock (failed, out of order, or
	                    * slower than twice the bound), at the start or twice in a row */
	TRACK_NOISY,       /* its readings disagree among themselves too much (at the start by
	                    * a quarter of the bound, since by 1/10 on average): the served
	                    * clock could not stay within the bound of them */
	TRACK_BEHIND,      /* the kernel's clock fell behind the counter by more than the
	                    * bound (frozen, slowed or stepped back): following would step back */
	TRACK_JUMPS,       /* the kernel's clock disagreed with the line beyond the bound at three
	                    * re-synchronizations in a row (it jumps, or its rate keeps changing) */
	TRACK_UNCOVERED,   /* the process may now run on CPUs the verdict did not compare */
	TRACK_CORRUPT,     /* a plan no read form covers */
	TRACK_DISRUPTED,   /* the hypervisor said the counter was disrupted (a migration): the
	                    * rate is measured again before it serves */
	TRACK_STOP_CAUSES
};

/* What each cause means, for the verbose line and the status. */
const char *track_stop_text(enum track_stop cause);

/* How one track's kernel clock has behaved, and whether the track still serves. Carried
 * from line to line. */
struct track_health {
	uint64_t noise_x32; /* 32 x the readings' spread about their median: a running mean
	                     * over about 32 re-synchronizations (track_noise_ns) */
	uint64_t misses;    /* re-synchronizations in a row without a good reading */
	uint64_t stopped;   /* enum track_stop */
	uint64_t hold_ns;   /* stopped: what kernel reads handed out for it beyond the line */
	/* Stopped for a cause that can pass (track_stop_passes): the counter value from
	 * which it is measured again, and how many times it was (the back-off doubles). */
	uint64_t retry_at;
	uint64_t retries;
	/* Its last good reading (last_at 0: none): a disagreement is judged against what a
	 * change of rate since then can explain, and a kernel below it went back itself. */
	uint64_t last_at, last_ns;
	uint64_t went_back_ns; /* stopped behind: how far the kernel's clock went below its
	                        * own last reading (0: it did not go below it by more than the
	                        * bound): a step back of its own, which a held read passes
	                        * through where it is not dwarfed by the hold's lead */
	uint64_t resumed_from; /* serving again from this counter value (its segment's start):
	                        * reads before it are a stopped clock's (track_serves_at) */
};

/* Whether a clock stopped for `cause` may serve again once its kernel clock holds the
 * bound once more: a rate that changed, noise, readings that failed or disagreed, a
 * disruption the hypervisor reported pass; a
 * CPU set the verdict did not compare, or a corrupt plan, do not. */
static inline bool track_stop_passes(enum track_stop cause)
{
	return cause == TRACK_UNREADABLE || cause == TRACK_NOISY || cause == TRACK_BEHIND || cause == TRACK_JUMPS ||
	       cause == TRACK_DISRUPTED;
}

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
	struct track_health health[TRACKS];
	uint64_t stopped_now;     /* bit per track this plan stopped: its hold still takes in
	                           * the floor at publication (line_apply_floor) */
	/* The RAW/MONOTONIC rate ratio (* 2^62) of the line this one was planned from: what
	 * the kernel reads past that line's end mapped the floor with, so that this line's
	 * MONOTONIC_RAW is held above what they handed out by the same mapping. */
	uint64_t floor_raw_ratio_q62;
};

/* The running mean of a track's readings' spread, in ns. */
static inline uint64_t track_noise_ns(const struct track_health *h)
{
	return h->noise_x32 / 32;
}

static inline bool track_serves(const struct line *l, int k)
{
	return l->active && l->health[k].stopped == TRACK_SERVING;
}

/* Whether track k serves counter value t: a clock that serves again does so from its new
 * segment's start, and before that is read as the stopped clock it was (the kernel's
 * value, never below what it handed out), not ahead of the kernel at that start. */
static inline bool track_serves_at(const struct line *l, int k, uint64_t t)
{
	return track_serves(l, k) && t >= l->health[k].resumed_from;
}

/* The least a read of stopped track k at counter t may give: the most it handed out.
 * Its segments are the line it served up to where it stopped, flat after (and for a
 * line stopped whole, its own segments, clamped at their end), and what kernel reads
 * handed out beyond them. So a monotonic clock that stops never steps back, and serves
 * nothing new: its reads give the kernel's value where that is more, and pass through
 * once the kernel is past this (a wall clock is never held). */
static inline uint64_t track_hold(const struct line *l, int k, uint64_t t);

/* The kernel's clocks around one counter value, from checked readings
 * (anchor_track_from). Only the tracks in `valid` have one. ns[k] is the kernel's clock k
 * at counter value at[k], known to lie within +/- width_ns[k] / 2 (its reading's bracket)
 * where the clock is consistent;
 * spread_ns[k] says how far the readings of clock k disagreed among themselves beyond
 * their brackets (noise, readings out of order): 0 for a consistent clock, and 0 too for
 * one good reading, which says nothing of its order: `lone` marks those. */
struct anchor {
	uint64_t counter;             /* MONOTONIC's: the anchor's moment */
	uint32_t valid;               /* bit per track */
	uint32_t lone;                /* bit per track whose value rests on one good reading */
	uint64_t at[TRACKS];          /* the counter value each clock's reading is at */
	uint64_t ns[TRACKS];
	uint64_t width_ns[TRACKS];
	uint64_t spread_ns[TRACKS];
	/* How far the lowest and the highest good reading lie from the median: a fault is
	 * proven only by what every reading shows (0, 0: as the median). */
	uint64_t below_ns[TRACKS], above_ns[TRACKS];
};

/* How far an anchor's readings of track k lie apart beyond a bracket, lowest to highest:
 * 0 for a clock that is one clock; a reading out of order that is the median (two of
 * three) shows here, where the spread, which looks past fewer than half of them, does
 * not. */
static inline uint64_t anchor_disagreement_ns(const struct anchor *a, int k)
{
	uint64_t range = a->below_ns[k] + a->above_ns[k];
	return range > a->width_ns[k] ? range - a->width_ns[k] : 0;
}

/* Track k's kernel clock at counter value t, from its reading, on the slope ns_per_tick
 * (a few microseconds away at most, but for a lapsed line's start). */
static inline uint64_t anchor_value_at(const struct anchor *a, int k, uint64_t t, double ns_per_tick)
{
	return a->ns[k] + (uint64_t)(int64_t)((double)(int64_t)(t - a->at[k]) * ns_per_tick);
}

/* One reading of a kernel clock between two ordered counter reads. */
struct clock_reading {
	uint64_t before, after;       /* the counter around the call */
	uint64_t ns;                  /* what it read, where ok */
	bool ok;                      /* it returned 0 with a time (0 <= tv_nsec < 1e9) */
};

/* Which readings may place a clock: a bracket no wider than widest_ticks, taken within
 * farthest_ticks of the clock's first good one (a reading after a long preemption would
 * be brought back over a distance on which the slope's error could look like noise). */
struct reading_limits {
	double ns_per_tick;
	uint64_t widest_ticks;
	uint64_t farthest_ticks;
};

/* Whether a reading is good: ok, the counter in order around it, within the limits of
 * readings placed at counter value `at` (none yet: 0). */
bool reading_is_good(const struct clock_reading *r, uint64_t at, const struct reading_limits *limits);

/* Track k of `a` from n readings of its clock (the first 12 looked at): the median of the good ones, each brought
 * on the slope to the first good one's counter value (a->at[k]); its bracket's width;
 * and the spread: the lower median of the other readings' distances from it beyond both
 * brackets (fewer than half the readings out of order move neither the value nor the
 * spread). Sets the track's bit in a->valid (and in a->lone where one reading was good)
 * and returns true, or returns false (no good reading). */
bool anchor_track_from(struct anchor *a, int k, const struct clock_reading *readings, int n,
		       const struct reading_limits *limits);

struct plan_config {
	uint64_t life_ticks;      /* a segment is re-synchronized after one life */
	uint64_t overlap_ticks;   /* ...and serves this much past it (its hard end), for the
	                           * writer's time: what a line promises beyond its expiry */
	uint64_t bound_ns;        /* TSCSHIM_MAX_ERROR_NS: a disagreement proven beyond it is a
	                           * fault of the kernel's clock, not drift */
	uint64_t watchdog_ns;     /* disagreement that tells a moved time namespace */
	uint64_t narrow_ns;       /* anchors this precise are trusted fully; wider, less */
	double calibrated_ns_per_tick;
	double max_rate_deviation; /* the rate estimate drifts at most this far from the rate
	                            * it was last measured at (NTP's slew, with margin) */
	double rate_change_most;  /* the largest change of the kernel's rate against the counter
	                           * that a re-synchronization follows (a migrated guest, a hard
	                           * slew); a disagreement it cannot explain is a jump or a step */
	uint64_t rate_confirm_ns; /* a disagreement of MONOTONIC up to this that a change of rate
	                           * explains is taken for one only once the next interval
	                           * confirms it (a small jump looks alike) */
	uint64_t retry_first_ticks; /* a stopped clock is first measured again after this */
	uint64_t retry_most_ticks;  /* ...and the back-off doubles up to this */
	/* The writer side's counts (shim/anchor.c, publish.c, resync.c, slow_path.c): */
	int readings_most;        /* readings one clock's share of an anchor takes at most
	                           * (at most ANCHOR_READINGS_ROOM: they are on the stack) */
	bool seek_narrow;         /* more readings, up to readings_most, for a narrow one: not
	                           * where a kernel read costs more than narrow_ns itself */
	int resync_readings;      /* good readings a routine re-synchronization wants a clock */
	int full_readings;        /* ...a first line, a lapsed line, a fault before it is acted
	                           * on, a resumption */
	int anchor_retakes;       /* anchors taken again where a clock has no good reading */
	int quiet_anchors;        /* anchors a try to serve a stopped clock again takes at
	                           * most, while it reads quiet (anchor_count_quiet_try) */
	int write_attempts;       /* writes (or recoveries) one read past an end tries */
	int publish_attempts;     /* a publication re-tried over raised floors at most */
	uint64_t anchor_widest_ns;  /* a reading slower than this cannot place its clock */
	double anchor_farthest_ns;  /* a reading brought to the anchor from further than this
	                             * (at max_rate_deviation) could look like noise */
	uint64_t kernel_read_step_ns; /* a kernel read raises the floor by at least this */
	uint64_t hold_across_fork_ns; /* a fork child's kernel clock this far below a stopped
	                               * clock's hold passes through instead */
};

/* The room, on the stack, for one clock's readings in an anchor (take_anchor). */
enum { ANCHOR_READINGS_ROOM = 8 };

/* What the tunables are derived from: the bound and the measured rate. */
struct plan_bounds {
	uint64_t bound_ns;        /* TSCSHIM_MAX_ERROR_NS */
	uint64_t resync_ms;       /* TSCSHIM_RESYNC_MS: the longest life */
	double ns_per_tick;       /* the calibrated rate */
	bool serves_realtime;     /* a wall clock is served: its steps must show quickly */
	uint64_t kernel_read_ns;  /* what one read of the kernel's clock costs, as the costs
	                           * measured it (0: not measured) */
};

/* Every count, ratio and interval the line's planning uses, derived in one place from the
 * bound (segment.c says why each). False when the life rounds to no tick. */
bool plan_config_derive(struct plan_config *cfg, const struct plan_bounds *in);

/* The back-off before a stopped clock, measured `tries` times already, is measured again:
 * doubling from cfg->retry_first_ticks, at most cfg->retry_most_ticks. */
uint64_t plan_retry_after(const struct plan_config *cfg, uint64_t tries);

/* A line stopped whole (every track, with MONOTONIC) for a cause that passes may serve
 * again: segment_resume plans it from an anchor. */
static inline bool line_may_resume(const struct line *l)
{
	return !l->active && track_stop_passes((enum track_stop)l->health[SERVED_MONOTONIC].stopped);
}

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

static inline uint64_t track_hold(const struct line *l, int k, uint64_t t)
{
	uint64_t v = line_value(l, k, t);
	return v > l->health[k].hold_ns ? v : l->health[k].hold_ns;
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

/* How far a clock's readings may spread among themselves (struct anchor's spread_ns) and
 * it still serve: on average over the last re-synchronizations, and in a first line's
 * one anchor (segment.c says why these). */
uint64_t segment_noise_limit(const struct plan_config *cfg);
uint64_t segment_first_spread_limit(const struct plan_config *cfg);

/* Makes l inactive, every track it still served stopped for `cause`: every read takes
 * the slow path, which gives the kernel's value, never below track_hold. */
void line_stop(struct line *l, enum track_stop cause);

/* A fresh line anchored on the kernel at a, at the calibrated rate. A track without a
 * good reading, or whose readings spread beyond segment_first_spread_limit, starts stopped (nothing
 * of it was served: no hold). Returns false, and nothing usable, when MONOTONIC itself is
 * one of them: no line can be drawn. */
bool segment_first(struct line *out, const struct anchor *a, const struct plan_config *cfg);

enum plan_outcome {
	PLAN_CONTINUE,   /* a new segment continuing the old one's value, slewing to the kernel */
	PLAN_STALE,      /* the old line lapsed (nobody re-synchronized in time): re-anchored */
	PLAN_REANCHOR,   /* the kernel was ahead beyond the bound: stepped forward to it */
	PLAN_STOP,       /* MONOTONIC stopped (the counter ran ahead, too many re-anchors,
	                  * too noisy, unreadable): the line stops serving */
	PLAN_NO_ANCHOR,  /* the anchor has no good MONOTONIC reading: nothing to publish */
	PLAN_RESUME,     /* a line stopped whole serves again (segment_resume) */
	PLAN_STILL,      /* ...or not yet: the stopped line, its next try planned */
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
	uint64_t largest_error_ns;      /* the largest |old line - kernel| of a clock it slews */
	uint32_t stepped;               /* bit per track the plan stepped to the kernel */
	uint32_t rate_changed;          /* bit per enum clock_family whose rate was measured
	                                 * anew after a disagreement its change explains */
	uint32_t rate_pending;          /* ...and whose disagreement waits for the next interval
	                                 * to tell a change of rate from a jump */
	uint32_t resumed;               /* bit per track that serves again */
};

/* The tracks of `old` stopped for a cause that passes whose try to serve again is due at
 * `now`: past their own back-off, or, in a line stopped whole (tried only past its
 * back-off), all. Whatever stopped a clock, the try's proof that it is quiet may not rest
 * on luck: a clock stopped as behind or unreadable may be a noisy one too. */
uint32_t tries_due(const struct line *old, uint64_t now);

/* Counts anchor a into a try of the `due` tracks: each one's spread becomes the largest
 * of its own, its readings' disagreement (a stopped clock serves again only where every
 * reading agrees: the lucky half of a noisy reference's readings agreeing proves
 * nothing) and earlier[k], the try's earlier anchors' (NULL for its first).
 * Whether the try wants another anchor: some due track reads quiet on all so far. One
 * anchor of a noisy reference reads quiet by chance, the more often the wider its
 * brackets, so a try takes up to plan_config.quiet_anchors. */
bool anchor_count_quiet_try(struct anchor *a, const uint64_t *earlier, uint32_t due, const struct plan_config *cfg);

/* The tracks a floor must not hold up: a wall clock the kernel stepped back. */
static inline uint32_t plan_floor_exempt(const struct plan *p)
{
	return p->stepped & (1u << SERVED_REALTIME);
}

/* The next line after old, from an anchor at or past old's current segment's start (a
 * writer re-synchronizes at or past its expiry; a lapsed line is past its hard end).
 * Each track still served is judged on its own reading: none (a miss; the second in a
 * row, or one on a lapsed line, stops it), too noisy on average (stops), the kernel behind
 * beyond the bound (stops; a wall
 * clock follows), ahead beyond it (steps forward to it), else a slew towards it. A
 * MONOTONIC that stops stops the whole line (PLAN_STOP); an anchor without MONOTONIC
 * plans nothing (PLAN_NO_ANCHOR).
 * The plan keeps old's current segment as the new previous one and drops old's previous
 * one, which serves the counter before that start: a caller whose anchor may lie before
 * it (a fork child continuing a line its parent had just published) takes old as it is
 * instead (shim/resync.c, recover). */
void segment_plan(const struct plan_inputs *in, struct plan *out);

/* A try to serve again with a line stopped whole (line_may_resume), from an anchor at or
 * past its retry time. It serves again (PLAN_RESUME) only where MONOTONIC's readings are
 * good and quiet and the kernel's rate over the last two tries agrees within
 * max_rate_deviation / 2 (a rate that keeps changing passes through while it does): a
 * fresh line at that rate, never below what the stopped line handed out. Otherwise
 * PLAN_STILL: the stopped line, with this anchor kept for the next try and the back-off
 * doubled. */
void segment_resume(const struct plan_inputs *in, struct plan *out);

/* The line stopped whole after the hypervisor reported the counter disrupted (a
 * migration): every track it serves held at the most it could hand out, the rate to be
 * measured afresh from this anchor, the first try after the shortest back-off (the
 * disruption is a new cause, whatever tries came before it). PLAN_STOP. */
void segment_stop_disrupted(const struct plan_inputs *in, struct plan *out);

/* Fallbacks. A reader past a line's hard end reads the kernel's MONOTONIC (never
 * MONOTONIC_RAW: one floor serves every track) and hands out, for track k, the line's
 * value at its end moved on by what MONOTONIC moved past the line's end, at track k's
 * rate relative to MONOTONIC. line_apply_floor() holds a planned line at or above what
 * those values were, by the same mapping; it returns false when the floor is so far
 * beyond MONOTONIC's plan (or a wall clock's) that the plan is obsolete (re-plan from a
 * fresh anchor). Another clock so far below its floor stops there (TRACK_BEHIND, held at
 * it): its kernel runs apart from MONOTONIC's, and no fresh anchor would reach it. */
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
