#include "segment.h"

#include <string.h>

static const int family_track[2] = {[FAMILY_MONOTONIC] = SERVED_MONOTONIC,
				    [FAMILY_RAW] = SERVED_MONOTONIC_RAW};

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#define Q62 4611686018427387904.0 /* 2^62 */

static uint64_t rate_to_q62(double ns_per_tick)
{
	return (uint64_t)(ns_per_tick * Q62);
}

double line_rate(const struct line *l, enum clock_family f)
{
	return (double)l->rate.ns_per_tick_q62[f] / Q62;
}

static void set_slope(struct segment *s, int k, double ns_per_tick, double calibrated)
{
	struct conversion c;
	if (conversion_from_slope(&c, ns_per_tick) != 0)
		conversion_from_slope(&c, calibrated);
	s->clk[k].mult = c.mult;
	s->clk[k].shift = c.shift;
}

double anchor_gain(uint64_t width_ns, uint64_t narrow_ns)
{
	return width_ns <= narrow_ns ? 1.0 : (double)narrow_ns / (double)width_ns;
}

static void rate_reset(struct rate_state *r, const struct anchor *a, double ns_per_tick)
{
	r->ref_counter = r->cand_counter = a->counter;
	for (int f = 0; f < 2; f++) {
		r->ref_ns[f] = r->cand_ns[f] = a->ns[family_track[f]];
		r->ns_per_tick_q62[f] = rate_to_q62(ns_per_tick);
	}
}

/* The kernel's rate over a baseline of 4 to 8 lives (2-4 ms at the default bound): long
 * enough that one anchor's noise matters little, short enough to follow an NTP or
 * adjtimex frequency change within a few re-synchronizations. Each measurement moves the
 * estimate half way, which halves the noise of a jittered reference, and the estimate
 * stays within max_rate_deviation of the calibrated rate (NTP slews by at most 500 ppm):
 * a wild reference cannot make the clock run fast. Imprecise anchors are not used. */
static void rate_update(struct rate_state *r, const struct anchor *a, const struct plan_config *cfg)
{
	if (a->width_ns[SERVED_MONOTONIC] > 4 * cfg->narrow_ns || a->counter <= r->ref_counter)
		return;
	uint64_t baseline = a->counter - r->ref_counter;
	if (baseline >= 4 * cfg->life_ticks) {
		double lo = cfg->calibrated_ns_per_tick * (1 - cfg->max_rate_deviation);
		double hi = cfg->calibrated_ns_per_tick * (1 + cfg->max_rate_deviation);
		for (int f = 0; f < 2; f++) {
			int64_t elapsed = (int64_t)(a->ns[family_track[f]] - r->ref_ns[f]);
			double measured = (double)elapsed / (double)baseline;
			measured = measured < lo ? lo : measured > hi ? hi : measured;
			double current = (double)r->ns_per_tick_q62[f] / Q62;
			r->ns_per_tick_q62[f] = rate_to_q62(current + (measured - current) / 2);
		}
	}
	if (a->counter - r->cand_counter >= 4 * cfg->life_ticks) {
		r->ref_counter = r->cand_counter;
		r->cand_counter = a->counter;
		for (int f = 0; f < 2; f++) {
			r->ref_ns[f] = r->cand_ns[f];
			r->cand_ns[f] = a->ns[family_track[f]];
		}
	}
}

void segment_first(struct line *out, const struct anchor *a, const struct plan_config *cfg)
{
	*out = (struct line){.active = 1};
	out->cur.start = a->counter;
	for (int k = 0; k < TRACKS; k++) {
		out->cur.clk[k].base = a->ns[k];
		set_slope(&out->cur, k, cfg->calibrated_ns_per_tick, cfg->calibrated_ns_per_tick);
	}
	out->expiry = a->counter + cfg->life_ticks;
	out->cur.until = out->expiry + cfg->life_ticks;
	out->prev = out->cur;
	rate_reset(&out->rate, a, cfg->calibrated_ns_per_tick);
}

bool line_agrees(const struct line *l, const struct anchor *a, uint64_t watchdog_ns)
{
	static const int moved_by_namespaces[] = {SERVED_MONOTONIC, SERVED_BOOTTIME};
	for (unsigned i = 0; i < sizeof moved_by_namespaces / sizeof *moved_by_namespaces; i++) {
		int k = moved_by_namespaces[i];
		int64_t error = (int64_t)(line_value(l, k, a->counter) - a->ns[k]);
		if (error > (int64_t)watchdog_ns || error < -(int64_t)watchdog_ns)
			return false;
	}
	return true;
}

void line_stop(struct line *next)
{
	next->active = 0;
	next->expiry = next->cur.start; /* every read takes the slow path, which passes through */
}

/* The old line against the anchor. Sets *stale when it lapsed (nobody re-synchronized
 * before its hard end: an idle program, preempted writers; it was clamped, not wrong:
 * re-anchored without counting a fault) and *decisive when the anchor's bracket is narrow
 * enough to prove a fault (one preempted for a good part of the watchdog's bound neither
 * stops nor re-anchors: its gain keeps it small). Sets the error measured and the
 * outcome: PLAN_STOP, with out->next stopped, when the counter ran ahead of the kernel. */
static void judge_old_line(const struct plan_inputs *in, struct plan *out, bool *stale, bool *decisive)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	const int64_t watchdog = (int64_t)in->cfg->watchdog_ns;
	*stale = in->now >= old->cur.until || a->counter >= old->cur.until;
	*decisive = a->width_ns[SERVED_MONOTONIC] <= in->cfg->watchdog_ns / 4;
	if (*stale) {
		out->outcome = PLAN_STALE;
		return;
	}
	out->error_measured = true;
	out->error_ns = (int64_t)(line_value(old, SERVED_MONOTONIC, a->counter) - a->ns[SERVED_MONOTONIC]);
	if (!*decisive)
		return;
	for (int k = 0; k < TRACKS; k++) {
		int64_t error = (int64_t)(line_value(old, k, a->counter) - a->ns[k]);
		if (!clock_table[k].wall && error > watchdog) {
			/* The counter ran ahead of the kernel: it cannot be trusted, and following
			 * would mean stepping back. Stop serving instead. */
			out->outcome = PLAN_STOP;
			line_stop(&out->next);
			return;
		}
	}
	if (out->error_ns < -watchdog)
		out->outcome = PLAN_REANCHOR;
}

/* Each track's segment from start: its base continues the old line there, or follows
 * the kernel where it stepped (the wall clock back; forward beyond the watchdog, or a
 * lapsed line), and its slope aims at the kernel where the next segment will begin. */
static void plan_tracks(const struct plan_inputs *in, struct plan *out, uint64_t start, bool stale,
			bool decisive)
{
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	const int64_t watchdog = (int64_t)cfg->watchdog_ns;
	struct line *next = &out->next;
	const double two_lives = 2.0 * (double)cfg->life_ticks;
	for (int k = 0; k < TRACKS; k++) {
		double rate = line_rate(next, clock_table[k].family);
		uint64_t from_old = segment_value(&in->old->cur, k, start);
		uint64_t kernel_at_start = a->ns[k] + (uint64_t)(int64_t)((double)(int64_t)(start - a->counter) * rate);
		uint64_t base;
		if (clock_table[k].wall && (int64_t)(from_old - kernel_at_start) > watchdog) {
			base = kernel_at_start; /* the kernel stepped the wall clock back: follow */
			out->stepped |= 1u << k;
		} else {
			base = from_old;
			if (stale || (decisive && (int64_t)(kernel_at_start - from_old) > watchdog)) {
				/* Lapsed, or the kernel is ahead beyond the watchdog (a paused VM, a
				 * resume from suspend for BOOTTIME, a wall-clock step forward). */
				if (!stale)
					out->stepped |= 1u << k;
				base = max_u64(base, kernel_at_start);
			}
		}
		next->cur.clk[k].base = base;

		/* Aim at the kernel where the next segment will begin (this one's hard end,
		 * two lives on), correcting the measured error by the anchor's gain: a narrow
		 * anchor's error is removed by then, a wide one's only in part, so noise is
		 * averaged, never amplified; the error does not grow from segment to segment.
		 * The slope stays within 1/16 of the kernel's rate. */
		double error_at_start = (double)(int64_t)(base - kernel_at_start);
		double slope = rate - anchor_gain(a->width_ns[k], cfg->narrow_ns) * error_at_start / two_lives;
		double lo = rate * 15 / 16, hi = rate * 17 / 16;
		set_slope(&next->cur, k, slope < lo ? lo : slope > hi ? hi : slope, rate);
	}
}

/* A re-anchor counts towards three in a row, which stop serving (the counter and the
 * kernel keep disagreeing); anything else starts the count again. */
static void count_reanchors(const struct line *old, struct plan *out)
{
	struct line *next = &out->next;
	if (out->outcome != PLAN_REANCHOR) {
		next->reanchors_in_a_row = 0;
		return;
	}
	next->reanchors_in_a_row = old->reanchors_in_a_row + 1;
	if (next->reanchors_in_a_row >= 3) {
		out->outcome = PLAN_STOP;
		line_stop(next);
	}
}

void segment_plan(const struct plan_inputs *in, struct plan *out)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	struct line *next = &out->next;
	*next = *old;
	out->outcome = PLAN_CONTINUE;
	out->error_measured = false;
	out->error_ns = 0;
	out->stepped = 0;

	bool stale, decisive;
	judge_old_line(in, out, &stale, &decisive);
	if (out->outcome == PLAN_STOP)
		return;
	if (out->outcome == PLAN_REANCHOR) /* the old anchors describe another relation */
		rate_reset(&next->rate, a, cfg->calibrated_ns_per_tick);
	else
		rate_update(&next->rate, a, cfg);

	/* A segment re-synchronized in time starts at the old one's hard end, so that no
	 * reader of the old publication evaluates it beyond where the new one takes over. A
	 * lapsed one starts at the anchor: readers between the two get the old line clamped,
	 * or what kernel reads handed out (prev_floor), whichever is more. */
	uint64_t start = stale ? a->counter : old->cur.until;
	next->prev = old->cur;
	next->cur.start = start;
	plan_tracks(in, out, start, stale, decisive);
	next->expiry = start + cfg->life_ticks;
	next->cur.until = next->expiry + cfg->life_ticks;
	/* The floor is applied by the publication (line_apply_floor), which reads it again
	 * at the moment it publishes. */
	for (int k = 0; k < TRACKS; k++)
		next->prev_floor[k] = 0;
	count_reanchors(old, out);
}

/* Track k's rate relative to MONOTONIC's: 1 for the clocks that are MONOTONIC plus an
 * offset, the RAW/MONO ratio (within NTP's 500 ppm of 1) for MONOTONIC_RAW. */
static double relative_rate(const struct line *l, int k)
{
	if (clock_table[k].family == FAMILY_MONOTONIC)
		return 1.0;
	return line_rate(l, FAMILY_RAW) / line_rate(l, FAMILY_MONOTONIC);
}

/* end_k + (mono - end_mono) * relative rate, rounded up: never below the exact mapping. */
static uint64_t carried(uint64_t end_k, uint64_t end_mono, uint64_t mono, double ratio)
{
	if (mono <= end_mono)
		return end_k;
	uint64_t past = mono - end_mono;
	if (ratio == 1.0)
		return end_k + past;
	return end_k + (uint64_t)((double)past * ratio) + 1;
}

uint64_t line_kernel_read_value(const struct line *l, int k, uint64_t mono_value)
{
	uint64_t end_mono = segment_value(&l->cur, SERVED_MONOTONIC, l->cur.until);
	return carried(segment_value(&l->cur, k, l->cur.until), end_mono, mono_value,
		       relative_rate(l, k));
}

/* Each track's range [from, from + span) of segment s in read form; false if a form
 * cannot cover it. */
static bool split_segment(const struct segment *s, uint64_t from, uint64_t span, struct read_range *out)
{
	for (int k = 0; k < TRACKS; k++) {
		struct conversion c = {.mult = s->clk[k].mult, .shift = (uint32_t)s->clk[k].shift};
		uint64_t max_delta = from - s->start + (span ? span - 1 : 0);
		if (split_conversion_from(&out[k].form, s->clk[k].base, &c, max_delta) != 0)
			return false;
		out[k].from = from;
		out[k].span = span;
		out[k].start = s->start;
	}
	return true;
}

void line_seal(struct line *l, struct line_forms *forms)
{
	const struct segment *prev = &l->prev;
	memset(forms, 0, sizeof *forms);
	/* The hot path serves cur for counter values in [cur.start, expiry). */
	uint64_t cur_span = l->expiry > l->cur.start ? l->expiry - l->cur.start : 0;
	if (!split_segment(&l->cur, l->cur.start, cur_span, forms->cur)) {
		line_stop(l);
		memset(forms, 0, sizeof *forms);
	}
	l->prev_direct_from = l->cur.start;
	if (!l->active || prev->start >= l->cur.start || l->cur.start > prev->until)
		return;
	/* Each track is non-decreasing, so a floor at or below its value at prev.start
	 * never binds in the range. */
	for (int k = 0; k < TRACKS; k++)
		if (l->prev_floor[k] > segment_value(prev, k, prev->start))
			return;
	/* ...and prev serves [prev.start, cur.start) in line. */
	if (!split_segment(prev, prev->start, l->cur.start - prev->start, forms->prev)) {
		memset(forms->prev, 0, sizeof forms->prev);
		return;
	}
	l->prev_direct_from = prev->start;
}

bool line_apply_floor(struct line *next, uint64_t floor, uint32_t skip_tracks)
{
	const struct segment *prev = &next->prev;
	uint64_t end_mono = segment_value(prev, SERVED_MONOTONIC, prev->until);
	if (floor <= end_mono)
		return true; /* the old line's own end, which the plan continues, is above it */

	/* Each track's floor, and the counter value from which the planned segment is at
	 * or above all of them; before it, readers get the floors (prev_floor). */
	uint64_t track_floor[TRACKS];
	uint64_t from = next->cur.start;
	for (int k = 0; k < TRACKS; k++) {
		if (skip_tracks & (1u << k))
			continue;
		track_floor[k] = carried(segment_value(prev, k, prev->until), end_mono, floor,
					 relative_rate(next, k));
		if (next->prev_floor[k] < track_floor[k])
			next->prev_floor[k] = track_floor[k];
		uint64_t base = next->cur.clk[k].base;
		if (base >= track_floor[k])
			continue;
		struct conversion c = {.mult = next->cur.clk[k].mult, .shift = (uint32_t)next->cur.clk[k].shift};
		long double slope = conversion_slope(&c);
		uint64_t reach = next->cur.start +
				 (uint64_t)((long double)(track_floor[k] - base) / slope) + 1;
		if (reach > from)
			from = reach;
	}
	if (from >= next->expiry)
		return false;
	if (from > next->cur.start) {
		/* The same segment, started later: every track's value at `from`. */
		for (int k = 0; k < TRACKS; k++)
			next->cur.clk[k].base = segment_value(&next->cur, k, from);
		next->cur.start = from;
	}
	return true;
}
