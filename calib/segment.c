/* The line's planning, pure: the tunables derived from the bound (plan_config_derive),
 * anchors from readings, the next segment from an anchor (segment_plan), a stopped line's
 * return (segment_resume), and the read forms a published line carries (line_seal). Its
 * invariants are stated in segment.h; shim/resync.c publishes what is planned here
 * (through shim/publish.c). */
#include "segment.h"
#include "absdiff.h"

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

/* How much a reading of track k may be off: its bracket, how far its readings disagree,
 * and 32 times its readings' mean spread (about three times the noise's amplitude). */
static uint64_t track_doubt_ns(const struct anchor *a, int k, const struct track_health *h)
{
	return a->width_ns[k] + anchor_disagreement_ns(a, k) + 32 * track_noise_ns(h);
}

/* Whether an anchor's reading of family f may measure a rate: read, and precise. */
static bool rate_reading(const struct anchor *a, int f, const struct plan_config *cfg)
{
	int k = family_track[f];
	return (a->valid & (1u << k)) &&
	       a->width_ns[k] + 2 * a->spread_ns[k] + 2 * anchor_disagreement_ns(a, k) <= 4 * cfg->narrow_ns;
}

/* The rate is measured from this anchor on, where it read the family's clock
 * (ref_counter 0: from the next one that does): the readings before it describe another
 * relation (the kernel jumped). The rate measured so far stands: a jump moves the clock,
 * not its rate. */
static void rate_restart(struct rate_state *r, const struct anchor *a)
{
	for (int f = 0; f < 2; f++) {
		bool read = a->valid & (1u << family_track[f]);
		r->ref_counter[f] = r->cand_counter[f] = read ? a->at[family_track[f]] : 0;
		r->ref_ns[f] = r->cand_ns[f] = read ? a->ns[family_track[f]] : 0;
	}
}

/* A first line's rates (the calibrated one, or what a stopped line's tries measured),
 * measured on from this anchor. */
static void rate_reset(struct rate_state *r, const struct anchor *a, const double ns_per_tick[2])
{
	for (int f = 0; f < 2; f++) {
		r->ns_per_tick_q62[f] = r->center_q62[f] = rate_to_q62(ns_per_tick[f]);
		r->unconfirmed_q62[f] = 0;
	}
	rate_restart(r, a);
}

/* The kernel's rate over a baseline of 4 to 8 lives (2-4 ms at the default bound): long
 * enough that one anchor's noise matters little, short enough to follow an NTP or
 * adjtimex frequency change within a few re-synchronizations. Each measurement moves the
 * estimate half way, which halves the noise of a jittered reference, and the estimate
 * stays within max_rate_deviation of the rate it was last measured at (the calibrated
 * one, or a change of rate's, adopt_rate; NTP slews by at most 500 ppm): a wild reference
 * cannot make the clock run fast. A measurement further than half that
 * from the estimate is not a rate but a jump of the kernel's clock in the baseline (over
 * a lapse, where no error was measured to tell it): it is dropped, and the baseline
 * starts again here. Imprecise or missing readings are not used; each family keeps its
 * own baseline. */
static void rate_update(struct rate_state *r, const struct anchor *a, const struct track_health *health,
			const struct plan_config *cfg)
{
	for (int f = 0; f < 2; f++) {
		if (!rate_reading(a, f, cfg))
			continue;
		uint64_t ns = a->ns[family_track[f]], at = a->at[family_track[f]];
		if (r->ref_counter[f] == 0 || at <= r->ref_counter[f]) {
			r->ref_counter[f] = r->cand_counter[f] = at;
			r->ref_ns[f] = r->cand_ns[f] = ns;
			continue;
		}
		uint64_t baseline = at - r->ref_counter[f];
		if (baseline >= 4 * cfg->life_ticks) {
			double center = (double)r->center_q62[f] / Q62;
			double lo = center * (1 - cfg->max_rate_deviation);
			double hi = center * (1 + cfg->max_rate_deviation);
			int64_t elapsed = (int64_t)(ns - r->ref_ns[f]);
			double measured = (double)elapsed / (double)baseline;
			double current = (double)r->ns_per_tick_q62[f] / Q62;
			if (measured > current * (1 + cfg->max_rate_deviation / 2) ||
			    measured < current * (1 - cfg->max_rate_deviation / 2)) {
				r->ref_counter[f] = r->cand_counter[f] = at;
				r->ref_ns[f] = r->cand_ns[f] = ns;
				continue;
			}
			measured = measured < lo ? lo : measured > hi ? hi : measured;
			/* Half way, less where the readings are noisy: the rate averages them. */
			double weight = anchor_gain(track_doubt_ns(a, family_track[f], &health[family_track[f]]),
						    cfg->narrow_ns) / 2;
			r->ns_per_tick_q62[f] = rate_to_q62(current + (measured - current) * weight);
		}
		if (at - r->cand_counter[f] >= 4 * cfg->life_ticks) {
			r->ref_counter[f] = r->cand_counter[f];
			r->ref_ns[f] = r->cand_ns[f];
			r->cand_counter[f] = at;
			r->cand_ns[f] = ns;
		}
	}
}

/* The rate of track k's kernel clock over the interval since its last good reading, in
 * ns per tick (false: no such reading, or none before this anchor). */
static bool rate_since_last(const struct track_health *h, const struct anchor *a, int k, double *ns_per_tick)
{
	if (!h->last_at || a->at[k] <= h->last_at)
		return false;
	*ns_per_tick = (double)(int64_t)(a->ns[k] - h->last_ns) / (double)(a->at[k] - h->last_at);
	return true;
}

/* Family f's rate changed: measured anew over the last interval, within rate_change_most
 * of what it was, and kept near from now on; the baseline starts again here. */
static void adopt_rate(struct rate_state *r, int f, double measured, const struct plan_config *cfg)
{
	double current = (double)r->ns_per_tick_q62[f] / Q62;
	double lo = current * (1 - cfg->rate_change_most), hi = current * (1 + cfg->rate_change_most);
	measured = measured < lo ? lo : measured > hi ? hi : measured;
	r->ns_per_tick_q62[f] = r->center_q62[f] = rate_to_q62(measured);
}

/* Which families' rates change at this anchor, measured anew (their rates in measured[]),
 * from the families whose clocks all show a disagreement that a change of rate explains
 * (`shows`). A large one is adopted at once, as is one that follows a disagreement by
 * less than a baseline (the rest of a change measured in part). A first one of a few bounds
 * (MONOTONIC's within rate_confirm_ns) may as well be a jump of the kernel's clock
 * (kvm-clock's few us): a rate measured over the interval that holds it would carry the
 * jump on over the next interval, and serve that far off. It is acted on as a jump
 * (stepped to, or slewed down to) at the rate the line had, and the next interval tells
 * (*pending). A change of rate keeps disagreeing in proportion: over that interval the
 * kernel's own readings give a rate on the same side of the line's, and at least half as
 * far (the first interval, the change begun within it, showed only part): adopted, at that
 * interval's rate, the new one throughout (*confirmed). A jump leaves the old rate
 * fitting: dropped. Over a lapsed line (`stale`: no error was measured, only the rate
 * since the last reading), any change waits for the next interval: a jump the kernel
 * made while nobody re-synchronized looks alike (20 us over 2 ms: 1 %). */
static uint32_t rates_to_adopt(const struct plan_inputs *in, struct line *next, uint32_t shows, bool stale,
			       double measured[2], uint32_t *pending, uint32_t *confirmed)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	const int mono = SERVED_MONOTONIC;
	uint64_t disagreement = magnitude_i64((int64_t)(line_value(old, mono, a->at[mono]) - a->ns[mono]));
	/* First: no disagreement at the last anchor, nor within the baseline a rate is
	 * measured over since the last one (its rate, adopted in part or not at all, not yet
	 * measured again). */
	uint64_t ref = old->rate.ref_counter[FAMILY_MONOTONIC];
	bool first = old->reanchors_in_a_row == 0 && ref && a->at[mono] >= ref + 4 * in->cfg->life_ticks;
	bool small = disagreement <= in->cfg->rate_confirm_ns && first;
	uint32_t adopt = 0;
	*pending = *confirmed = 0;
	for (int f = 0; f < 2; f++) {
		int k = family_track[f];
		uint32_t bit = 1u << f;
		double rate = 0;
		bool have = track_serves(old, k) && rate_since_last(&old->health[k], a, k, &rate);
		next->rate.unconfirmed_q62[f] = 0;
		if (old->rate.unconfirmed_q62[f] && !have && track_serves(old, k)) {
			next->rate.unconfirmed_q62[f] = old->rate.unconfirmed_q62[f]; /* no reading: the next one tells */
		} else if (old->rate.unconfirmed_q62[f] && have) {
			double current = line_rate(old, f);
			double first = (double)old->rate.unconfirmed_q62[f] / Q62 - current, second = rate - current;
			if (first * second > 0 && 2 * abs_diff_double(second, 0) >= abs_diff_double(first, 0)) {
				adopt |= bit;
				*confirmed |= bit;
				measured[f] = rate;
				continue;
			}
		}
		if (!(shows & bit) || !have)
			continue;
		if (small || stale) {
			*pending |= bit;
			next->rate.unconfirmed_q62[f] = rate_to_q62(rate);
		} else {
			adopt |= bit;
			measured[f] = rate;
		}
	}
	/* MONOTONIC_RAW changes rate only with MONOTONIC (segment_plan). */
	if (!(adopt & (1u << FAMILY_MONOTONIC)))
		adopt &= ~(1u << FAMILY_RAW);
	return adopt;
}

/* How far the kernel's clock k can have drifted from a line verified at its last good
 * reading by a change of rate within rate_change_most since (ns), at the anchor. Without
 * a last reading, over the longest a segment is served. The last reading is the latest of
 * its family's serving clocks' (not a wall clock's, which steps): they are one clock plus
 * offsets, so a change of rate began after the latest of them that agreed with the line.
 * Its own alone, a clock that ran blind past one anchor (its readings out of order) took
 * a slowing since that anchor for a change spread over two intervals, where BOOTTIME, read
 * at it, proved too far behind for one: the family's rate was not adopted, MONOTONIC
 * slewed at its old rate held to 15/16 of it, and its lead on a kernel slowed by more
 * grew through the whole interval (a +/-4.8 % wobble: 77 us off, the envelope 61). */
static uint64_t rate_change_explains_ns(const struct plan_inputs *in, const struct track_health *h, int k)
{
	const struct plan_config *cfg = in->cfg;
	uint64_t at = in->anchor->at[k];
	uint64_t last_at = h->last_at;
	for (int j = 0; last_at && j < TRACKS; j++)
		if (clock_table[j].family == clock_table[k].family && !clock_table[j].wall && track_serves(in->old, j) &&
		    in->old->health[j].last_at > last_at && in->old->health[j].last_at < at)
			last_at = in->old->health[j].last_at;
	uint64_t elapsed = last_at && at > last_at ? at - last_at : 2 * (cfg->life_ticks + cfg->overlap_ticks);
	return (uint64_t)((double)elapsed * cfg->calibrated_ns_per_tick * cfg->rate_change_most);
}

/* Track k's rate relative to MONOTONIC's: 1 for the clocks that are MONOTONIC plus an
 * offset, the RAW/MONO ratio (within NTP's 500 ppm of 1) for MONOTONIC_RAW. */
static double relative_rate(const struct line *l, int k)
{
	if (clock_table[k].family == FAMILY_MONOTONIC)
		return 1.0;
	return line_rate(l, FAMILY_RAW) / line_rate(l, FAMILY_MONOTONIC);
}

const char *track_stop_text(enum track_stop cause)
{
	static const char *const text[TRACK_STOP_CAUSES] = {
		[TRACK_SERVING] = "serving",
		[TRACK_UNREADABLE] = "the kernel's clock gave no good reading (a failed call, readings out of "
				     "order, or one slower than twice the bound)",
		[TRACK_NOISY] = "the kernel's clock is too noisy to hold the bound",
		[TRACK_BEHIND] = "the kernel's clock fell behind the counter beyond the bound (frozen, slowed "
				 "or stepped back)",
		[TRACK_JUMPS] = "the kernel's clock disagreed with the counter beyond the bound at three "
				"re-synchronizations in a row (it jumps, or its rate keeps changing)",
		[TRACK_UNCOVERED] = "the process may now run on CPUs whose counters the verdict did not compare",
		[TRACK_CORRUPT] = "a planned line that no read form covers",
		[TRACK_DISRUPTED] = "the hypervisor reported the counter disrupted (a migration): its rate is "
				    "measured again",
	};
	return (unsigned)cause < TRACK_STOP_CAUSES ? text[cause] : "unknown";
}

/* ---- anchors from readings ---- */

struct good_reading {
	uint64_t value;    /* ns, at the anchor's counter value */
	uint64_t width_ns;
};

bool reading_is_good(const struct clock_reading *r, uint64_t at, const struct reading_limits *limits)
{
	if (!r->ok || r->after < r->before || r->after - r->before > limits->widest_ticks)
		return false;
	uint64_t middle = r->before + (r->after - r->before) / 2;
	return at == 0 || abs_diff_u64(middle, at) <= limits->farthest_ticks;
}

static uint64_t reading_middle(const struct clock_reading *r)
{
	return r->before + (r->after - r->before) / 2;
}

bool anchor_track_from(struct anchor *a, int k, const struct clock_reading *readings, int n,
		       const struct reading_limits *limits)
{
	/* The readings of one anchor (shim/anchor.c takes at most ANCHOR_READINGS_ROOM): on a signal's stack or
	 * the decision's small one, so kept few. */
	enum { MOST = 12 };
	struct good_reading good[MOST];
	int count = 0;
	uint64_t at = 0;
	for (int i = 0; i < n && count < MOST; i++) {
		const struct clock_reading *r = &readings[i];
		if (!reading_is_good(r, at, limits))
			continue;
		uint64_t ticks = r->after - r->before;
		uint64_t middle = reading_middle(r);
		if (at == 0)
			at = middle;
		int64_t moved = (int64_t)((double)(int64_t)(at - middle) * limits->ns_per_tick);
		struct good_reading g = {.value = r->ns + (uint64_t)moved,
					 .width_ns = (uint64_t)((double)ticks * limits->ns_per_tick)};
		int j = count++;
		for (; j > 0 && good[j - 1].value > g.value; j--)
			good[j] = good[j - 1];
		good[j] = g;
	}
	if (count == 0)
		return false;
	const struct good_reading *median = &good[(count - 1) / 2];
	/* How far each other reading lies from the median beyond what both brackets allow
	 * (0 for a clock that is one clock), and of those distances the lower median: the
	 * smaller of two, the second smallest of four, so that fewer than half the readings
	 * out of order (one in three, two in five, three in seven) is not noise. */
	uint64_t beyond[MOST];
	int others = 0;
	for (int i = 0; i < count; i++) {
		if (&good[i] == median)
			continue;
		uint64_t apart = good[i].value > median->value ? good[i].value - median->value
							       : median->value - good[i].value;
		uint64_t allowed = (good[i].width_ns + median->width_ns) / 2;
		uint64_t d = apart > allowed ? apart - allowed : 0;
		int j = others++;
		for (; j > 0 && beyond[j - 1] > d; j--)
			beyond[j] = beyond[j - 1];
		beyond[j] = d;
	}
	a->at[k] = at;
	a->ns[k] = median->value;
	a->width_ns[k] = median->width_ns;
	a->spread_ns[k] = others ? beyond[(others - 1) / 2] : 0;
	a->below_ns[k] = median->value - good[0].value;
	a->above_ns[k] = good[count - 1].value - median->value;
	a->valid |= 1u << k;
	if (count == 1)
		a->lone |= 1u << k;
	return true;
}

/* A clock's readings spread (the lower median of their distances from their median
 * beyond the brackets: of three readings, the smaller distance) by about a fifth of the noise's amplitude on average: uniform noise
 * of +/-200 ns spreads them by 20 ns, of +/-500 ns by 90 ns. The served value follows
 * their median, and a reading around any served value may lie as far from the truth
 * again, so the bound holds against the readings only while the noise stays under about
 * a third of it: the mean spread's limit is 1/10 of the bound (in a simulation of 40,000
 * re-synchronizations, +/-200 ns of noise never reached it, +/-300 ns did within 100,
 * +/-700 ns within 3). A
 * first line has one anchor of five readings, whose spread is about half the noise's
 * amplitude: it starts without a clock spread beyond a quarter of the bound (+/-200 ns
 * never, +/-1 us about half the time: the mean catches the rest within a
 * re-synchronization or two), and with half its spread as the mean (the five readings'
 * spread runs about twice the three's). */
uint64_t segment_noise_limit(const struct plan_config *cfg)
{
	return cfg->bound_ns / 10;
}

uint64_t segment_first_spread_limit(const struct plan_config *cfg)
{
	return cfg->bound_ns / 4;
}

static bool anchor_has(const struct anchor *a, int k)
{
	return a->valid & (1u << k);
}

/* ---- the tunables ---- */

/* Each from the bound, and why:
 *  - life: a segment is served for a life and its overlap, in which the kernel may slew
 *    by 500 ppm and the rate estimate be off by a little: 2 lives x 1000 ppm within the
 *    bound (500 us at the default 1 us), at most TSCSHIM_RESYNC_MS, and at most 4 ms where
 *    a wall clock is served (a step shows within two lives);
 *  - overlap: past its expiry a line still serves for the writer's time, an eighth of a
 *    life (62 us): all that a line promises beyond its next anchor, so that a kernel clock
 *    whose rate changed is caught, and a slowed one's lead held, within about a life;
 *  - watchdog: beyond 100 bounds (1 ms at least) a fork child's line and its kernel's
 *    clocks are another time namespace's;
 *  - narrow: anchors within half the bound move the line by their whole measured error;
 *  - max_rate_deviation: NTP slews by at most 500 ppm; the rest is margin;
 *  - rate_change_most: 1/16, the slope's own limit (plan_track): a migrated guest's TSC
 *    at another rate without scaling (steps of ~4.8 % reported), a hard slew;
 *  - rate_confirm: 8 bounds: kvm-clock's small jumps (a few us) are confirmed as a change
 *    of rate before one is adopted (rates_to_adopt), a migration's (4.8 %: 27 us in an
 *    interval) adopted at once. A slowed kernel's lead of that much, slewed away by the
 *    next anchor, overshoots past an anchor as late as the overlap (an eighth of a life)
 *    by at most the bound;
 *  - retries: a stopped clock is measured again after 4 lives (three tries see a steady
 *    rate within 14 lives, 7 ms), the back-off doubling up to a second;
 *  - readings: an anchor takes up to 8 readings of a clock (the stack's room), a routine
 *    re-synchronization wants 3 good ones (their median holds against one out of order),
 *    and 7 where a reading out of order would do lasting harm: a first line (which also
 *    wants a view of the noise), a lapsed line re-anchored on the kernel's values
 *    outright, a fault or a large correction before it is acted on, a resumption;
 *  - seek_narrow: it reads on past those for one narrow reading, unless a kernel read
 *    costs more than narrow_ns (a system call on a microVM: 1.1 us), where none can be:
 *    there the extra readings only cost (32 system calls in place of 12 at every
 *    re-synchronization);
 *  - anchor_retakes: an anchor missing a clock is taken again twice: a preemption at the
 *    wrong moment goes, a clock that fails stays (and a first line is not held long);
 *  - quiet_anchors: a try to serve a stopped clock again proves it quiet on up to 4
 *    anchors, every reading of each agreeing (anchor_count_quiet_try). Of a +/-1 us
 *    reference, one anchor of seven readings reads quiet by its spread alone 3 % of the time
 *    at brackets of 60 ns, 15 % at 150 ns, 47 % at 300 ns: of 400 such clocks stopped as
 *    noisy, 1, 29 and 293 served again within 8 tries (test_segment). Counting the
 *    readings' disagreement, one anchor reads quiet 0.02 % of the time at 300 ns, 0.6 % at
 *    600 ns, 8 % at 1 us, 51 % at 1.5 us (a system call's brackets on a microVM); four in a
 *    row, 7 % there. A noisy clock's try costs one anchor, a quiet clock's four;
 *  - write_attempts: a read past a line's end tries 4 writes (or recoveries) before it
 *    reads the kernel or passes through: others' publications end the loop, not it;
 *  - publish_attempts: 16 tries to absorb floors raised by kernel reads meanwhile; a
 *    crowd that outruns that drops the write, which the next reader makes again;
 *  - anchor_widest_ns: a reading slower than twice the bound cannot place its clock
 *    within the bound;
 *  - anchor_farthest_ns: a reading brought back to the anchor from further than 1/16 of
 *    the bound at the largest rate error allowed (62 us at the default bound; a reading
 *    after a preemption) could look like noise;
 *  - kernel_read_step_ns: reads past a hard end raise the floor by steps of a sixteenth
 *    of the bound, so that a crowd of them does not keep a writer from publishing;
 *  - hold_across_fork_ns: a fork child whose kernel clock is a second or more below a
 *    stopped clock's hold (a time namespace moved it back, or it was stepped back) would
 *    stand still that long if held: the clock passes through in the child. */
bool plan_config_derive(struct plan_config *cfg, const struct plan_bounds *in)
{
	*cfg = (struct plan_config){0};
	cfg->calibrated_ns_per_tick = in->ns_per_tick;
	cfg->bound_ns = in->bound_ns;
	cfg->watchdog_ns = in->bound_ns * 100 > 1000000 ? in->bound_ns * 100 : 1000000;
	cfg->narrow_ns = in->bound_ns / 2;
	cfg->max_rate_deviation = 1e-3;
	cfg->rate_change_most = 1.0 / 16;
	cfg->rate_confirm_ns = 8 * in->bound_ns;
	long double life_ns = (long double)in->bound_ns / (2 * 1000e-6L);
	if (life_ns > (long double)in->resync_ms * 1e6L)
		life_ns = (long double)in->resync_ms * 1e6L;
	if (in->serves_realtime && life_ns > 4e6L)
		life_ns = 4e6L;
	if (!(in->ns_per_tick > 0))
		return false;
	cfg->life_ticks = (uint64_t)(life_ns / in->ns_per_tick);
	if (cfg->life_ticks == 0)
		return false;
	cfg->overlap_ticks = cfg->life_ticks / 8 ? cfg->life_ticks / 8 : 1;
	cfg->retry_first_ticks = 4 * cfg->life_ticks;
	uint64_t second = (uint64_t)(1e9 / in->ns_per_tick);
	cfg->retry_most_ticks = second > cfg->retry_first_ticks ? second : cfg->retry_first_ticks;
	cfg->readings_most = ANCHOR_READINGS_ROOM;
	cfg->seek_narrow = !(in->kernel_read_ns > cfg->narrow_ns);
	cfg->resync_readings = 3;
	cfg->full_readings = 7;
	cfg->anchor_retakes = 2;
	cfg->quiet_anchors = 4;
	cfg->write_attempts = 4;
	cfg->publish_attempts = 16;
	cfg->anchor_widest_ns = 2 * in->bound_ns;
	cfg->anchor_farthest_ns = (double)in->bound_ns / 16 / cfg->max_rate_deviation;
	cfg->kernel_read_step_ns = in->bound_ns / 16;
	cfg->hold_across_fork_ns = 1000000000;
	return true;
}

uint64_t plan_retry_after(const struct plan_config *cfg, uint64_t tries)
{
	uint64_t after = cfg->retry_first_ticks;
	for (uint64_t i = 0; i < tries && after < cfg->retry_most_ticks; i++)
		after *= 2;
	return after < cfg->retry_most_ticks ? after : cfg->retry_most_ticks;
}

/* Each track's last good reading, kept in its health: what the next anchor's
 * disagreement and rate are judged from. */
static void note_readings(struct line *l, const struct anchor *a)
{
	for (int k = 0; k < TRACKS; k++)
		if (anchor_has(a, k)) {
			l->health[k].last_at = a->at[k];
			l->health[k].last_ns = a->ns[k];
		}
}

/* Track k stops for `cause` at counter value `now`: measured again after its back-off. */
static void schedule_retry(struct track_health *h, uint64_t now, const struct plan_config *cfg)
{
	h->retry_at = now + plan_retry_after(cfg, h->retries);
}

/* ---- lines ---- */

/* A fresh line at the given rates per family. */
static void line_fresh(struct line *out, const struct anchor *a, const struct plan_config *cfg, const double rate[2])
{
	*out = (struct line){.active = 1};
	out->cur.start = a->counter;
	for (int k = 0; k < TRACKS; k++) {
		double r = rate[clock_table[k].family];
		out->cur.clk[k].base = anchor_value_at(a, k, a->counter, r);
		set_slope(&out->cur, k, r, cfg->calibrated_ns_per_tick);
		struct track_health *h = &out->health[k];
		h->noise_x32 = 32 * (a->spread_ns[k] / 2);
		if (!anchor_has(a, k))
			h->stopped = TRACK_UNREADABLE;
		else if (a->spread_ns[k] > segment_first_spread_limit(cfg))
			h->stopped = TRACK_NOISY;
		if (h->stopped)
			schedule_retry(h, a->counter, cfg);
	}
	out->expiry = a->counter + cfg->life_ticks;
	out->cur.until = out->expiry + cfg->overlap_ticks;
	out->prev = out->cur;
	rate_reset(&out->rate, a, rate);
	note_readings(out, a);
}

bool segment_first(struct line *out, const struct anchor *a, const struct plan_config *cfg)
{
	const double calibrated[2] = {cfg->calibrated_ns_per_tick, cfg->calibrated_ns_per_tick};
	line_fresh(out, a, cfg, calibrated);
	return out->health[SERVED_MONOTONIC].stopped == TRACK_SERVING;
}

bool line_agrees(const struct line *l, const struct anchor *a, uint64_t watchdog_ns)
{
	static const int moved_by_namespaces[] = {SERVED_MONOTONIC, SERVED_BOOTTIME};
	for (unsigned i = 0; i < sizeof moved_by_namespaces / sizeof *moved_by_namespaces; i++) {
		int k = moved_by_namespaces[i];
		if (!anchor_has(a, k) || !track_serves(l, k))
			continue;
		int64_t error = (int64_t)(line_value(l, k, a->at[k]) - a->ns[k]);
		if (error > (int64_t)watchdog_ns || error < -(int64_t)watchdog_ns)
			return false;
	}
	return true;
}

/* Stops track k of a line whose readers had segment-by-segment the line `l` describes up
 * to its current segment's end: from there its segments are flat (plan_track), so that
 * line_value(l, k, t), which the slow path holds a stopped track's reads at, is never
 * below what it handed out and never moves past it. */
static void stop_track(struct line *l, int k, enum track_stop cause)
{
	l->health[k].stopped = cause;
	l->health[k].hold_ns = 0; /* what kernel reads handed out: line_apply_floor */
	l->stopped_now |= 1u << k;
}

void line_stop(struct line *next, enum track_stop cause)
{
	for (int k = 0; k < TRACKS; k++)
		if (track_serves(next, k))
			stop_track(next, k, cause);
	next->active = 0;
	next->expiry = next->cur.start; /* every read takes the slow path, which holds, then passes */
}

/* What a re-synchronization does with one track, from its reading. */
enum track_course {
	COURSE_SLEW,     /* aim at the kernel, by the anchor's gain */
	COURSE_STEP,     /* start at the kernel (forward; a wall clock either way) */
	COURSE_BLIND,    /* no good reading: continue at the measured rate, uncorrected (BOOTTIME,
			  * REALTIME: at MONOTONIC's segment and their offset, where it was read) */
	COURSE_STOPPED,  /* stopped, now or before: its segment is never read */
	COURSE_RESUME,   /* stopped, and serves again: starts at the kernel, never below its hold */
};

/* A stopped clock's noise at a try to serve it again: its running mean of the readings'
 * spread moves half way to this anchor's (each counting for at most four times the
 * limit, as while it serves), so that a clock stopped as too noisy serves again only after
 * a few quiet tries in a row (one lucky anchor of a +/-1 us reference does not), and one
 * stopped for another cause, quiet all along, at once. Whether it is then at most half
 * the limit. */
static bool noise_settled(struct track_health *h, uint64_t spread_ns, const struct plan_config *cfg)
{
	uint64_t most = 4 * segment_noise_limit(cfg);
	uint64_t spread_x32 = 32 * (spread_ns < most ? spread_ns : most);
	h->noise_x32 = (h->noise_x32 + spread_x32) / 2;
	return track_noise_ns(h) <= segment_noise_limit(cfg) / 2;
}

uint32_t tries_due(const struct line *old, uint64_t now)
{
	uint32_t due = 0;
	for (int k = 0; k < TRACKS; k++) {
		enum track_stop cause = (enum track_stop)old->health[k].stopped;
		if (cause != TRACK_SERVING && track_stop_passes(cause) && (!old->active || now >= old->health[k].retry_at))
			due |= 1u << k;
	}
	return due;
}

bool anchor_count_quiet_try(struct anchor *a, const uint64_t *earlier, uint32_t due, const struct plan_config *cfg)
{
	bool more = false;
	for (int k = 0; k < TRACKS; k++) {
		if (!(due & (1u << k)))
			continue;
		uint64_t s = max_u64(a->spread_ns[k], anchor_disagreement_ns(a, k));
		a->spread_ns[k] = earlier ? max_u64(s, earlier[k]) : s;
		more |= anchor_has(a, k) && a->spread_ns[k] <= segment_noise_limit(cfg) / 2;
	}
	return more;
}

/* How far track k's kernel clock ran from the line's rate for its family since its last
 * reading (the one before it stopped, or its last try's): *apart ns per tick over *ticks
 * (false: no such reading). */
static bool rate_apart_from_family(const struct plan_inputs *in, const struct track_health *h, int k, double *apart,
				   double *ticks)
{
	double rate;
	if (!rate_since_last(h, in->anchor, k, &rate))
		return false;
	*apart = rate - line_rate(in->old, clock_table[k].family);
	*ticks = (double)(in->anchor->at[k] - h->last_at);
	return true;
}

/* Whether track k's kernel clock ran at its family's rate since its last reading, within
 * the bound, its reading's bracket and the rate's own drift over that time. */
static bool track_keeps_family_rate(const struct plan_inputs *in, const struct track_health *h, int k)
{
	const struct plan_config *cfg = in->cfg;
	double apart, ticks;
	if (!rate_apart_from_family(in, h, k, &apart, &ticks))
		return true; /* nothing to measure it against */
	double allowed_ns = (double)(cfg->bound_ns + in->anchor->width_ns[k]) +
			    cfg->max_rate_deviation * ticks * cfg->calibrated_ns_per_tick;
	return abs_diff_double(apart, 0) * ticks <= allowed_ns;
}

/* A lapsed line is judged by no error (it was clamped, not wrong), but its kernel's rate
 * since the track's last reading still tells a change of rate: beyond what the rate
 * estimate follows (rate_update: max_rate_deviation / 2 of it), beyond what the bound and
 * the readings' brackets explain over that time, and within rate_change_most. *error_ns
 * is then what the old rate would have made of it there (its sign tells the change's
 * way). Lines that lapsed at every re-synchronization (writers late each time, a program
 * that reads less often than a life) never took a change in: every segment at the old
 * rate, 27 us off at 4.8 %. */
static bool stale_rate_changed(const struct plan_inputs *in, const struct track_health *h, int k, int64_t *error_ns)
{
	const struct plan_config *cfg = in->cfg;
	double apart, ticks;
	if (!rate_apart_from_family(in, h, k, &apart, &ticks))
		return false;
	double current = line_rate(in->old, clock_table[k].family), magnitude = abs_diff_double(apart, 0);
	if (magnitude <= current * cfg->max_rate_deviation / 2 || magnitude > current * cfg->rate_change_most ||
	    magnitude * ticks <= (double)(cfg->bound_ns + 2 * in->anchor->width_ns[k]))
		return false;
	*error_ns = (int64_t)(-apart * ticks);
	return true;
}

/* Whether stopped track k of an active line serves again at this anchor: its cause
 * passes, its back-off is over, its readings are good (more than one), quiet, and at or
 * above what it handed out (a wall clock: any), and its kernel clock runs at its family's
 * rate (not a wall clock, which steps). A track serves at its family's rate: one whose
 * kernel runs apart from it (MONOTONIC_RAW slowed alone) stopped again within an
 * interval, served that far off each time, at every try. Where its back-off is over but
 * the readings say no, the next try is put off by a back-off twice as long, and measures
 * the rate from this one's reading. */
static bool track_resumes(const struct plan_inputs *in, struct line *next, int k)
{
	const struct anchor *a = in->anchor;
	struct track_health *h = &next->health[k];
	if (!track_stop_passes((enum track_stop)h->stopped) || in->now < h->retry_at)
		return false;
	bool good = anchor_has(a, k) && !(a->lone & (1u << k)) && a->spread_ns[k] <= segment_first_spread_limit(in->cfg) &&
		    noise_settled(h, a->spread_ns[k], in->cfg) &&
		    (clock_table[k].wall || (a->ns[k] >= track_hold(in->old, k, UINT64_MAX) &&
					     track_keeps_family_rate(in, h, k)));
	if (!good) {
		h->retries++;
		schedule_retry(h, in->now, in->cfg);
		if (anchor_has(a, k) && !(a->lone & (1u << k))) {
			h->last_at = a->at[k];
			h->last_ns = a->ns[k];
		}
	}
	return good;
}

/* How far track k's kernel clock went back itself: below its own last good reading by
 * more than the bound (a frozen clock's readings, each brought to its anchor's counter
 * value on the slope, differ by a little either way), else 0. Below the line proves no
 * step back: a clock frozen since its last reading is below it by all the line ran on
 * since. */
static uint64_t went_below_own_reading(const struct track_health *h, const struct anchor *a, int k,
				       const struct plan_config *cfg)
{
	return h->last_at && a->ns[k] + cfg->bound_ns < h->last_ns ? h->last_ns - a->ns[k] : 0;
}

/* Whether track k's reading lies beyond the bound of the old line, by more than half its
 * bracket: what would step or stop it. */
static bool lone_reading_disagrees(const struct plan_inputs *in, int k)
{
	const struct anchor *a = in->anchor;
	int64_t error = (int64_t)(line_value(in->old, k, a->at[k]) - a->ns[k]);
	uint64_t magnitude = magnitude_i64(error);
	return magnitude > in->cfg->bound_ns + a->width_ns[k] / 2;
}

/* A re-synchronization without a reading of the track that can place it (none, one that
 * stands alone, or ones that disagree), `misses` before it in a row: a current line,
 * verified at the last anchor, may run one life more at the measured rate; a second miss,
 * or a lapsed line, which cannot be placed at all, stops the track. */
static enum track_course no_reading(struct track_health *h, uint64_t misses, bool stale, enum track_stop *cause)
{
	h->misses = misses + 1;
	if (h->misses < 2 && !stale)
		return COURSE_BLIND;
	*cause = TRACK_UNREADABLE;
	return COURSE_STOPPED;
}

/* Track k's course at this anchor, *cause when it stops now, and for a slew the error it
 * corrects (*error_ns, old line - kernel; left as it was otherwise). The old line `in->old`
 * is judged against the kernel only where it was not stale (a lapsed line was clamped,
 * not wrong) and only by a disagreement the reading proves: beyond the bound by more than
 * half its bracket and its spread. Updates the track's health in `next`. */
static enum track_course track_course(const struct plan_inputs *in, struct line *next, int k, bool stale,
				      enum track_stop *cause, int64_t *error_ns, bool *rate_changed)
{
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	struct track_health *h = &next->health[k];
	if (!track_serves(in->old, k))
		return in->old->active && !stale && track_resumes(in, next, k) ? COURSE_RESUME : COURSE_STOPPED;
	if (!anchor_has(a, k))
		return no_reading(h, h->misses, stale, cause);
	/* One good reading (its fellows failed, or came after the thread was preempted) is
	 * as likely out of order as any: it cannot prove a fault, and a fault is all that an
	 * error beyond the bound would be. It is counted as no reading at all. */
	if ((a->lone & (1u << k)) && !stale && lone_reading_disagrees(in, k))
		return no_reading(h, h->misses, false, cause);
	uint64_t misses_before = h->misses;
	h->misses = 0;
	/* A running mean of the spread that rises eight times as fast as it falls (weights
	 * 1/8 and 1/32): noise that begins shows within a few re-synchronizations, one
	 * glitch moves it little. */
	/* Each anchor counts for at most four times the limit: one whose readings were half
	 * out of order (two of four) is a glitch, not a clock that noisy (it moves the mean
	 * half way to the limit); three such in a row are. */
	uint64_t most = 4 * segment_noise_limit(cfg);
	uint64_t counted = a->spread_ns[k] < most ? a->spread_ns[k] : most;
	uint64_t spread_x32 = 32 * counted;
	if (spread_x32 > h->noise_x32)
		h->noise_x32 += (spread_x32 - h->noise_x32) / 8;
	else
		h->noise_x32 -= (h->noise_x32 - spread_x32) / 32;
	if (track_noise_ns(h) > segment_noise_limit(cfg)) {
		*cause = TRACK_NOISY;
		return COURSE_STOPPED;
	}
	if (stale) {
		/* The lapsed line ran on to its end from a reading within the bound of the
		 * kernel: a kernel now below that end, beyond the bound and the reading's
		 * doubt, stepped back, or stood still or slowed since that reading. It stops;
		 * any other course would stand ahead of it. Only a kernel below its own last
		 * reading went back itself and passes through; one frozen since (or slowed, or
		 * back by less than the line ran on) is held at what the line handed out until
		 * it catches up: passed through, it would go below values served before. */
		int64_t below = (int64_t)(line_value(in->old, k, a->at[k]) - a->ns[k]) -
				(int64_t)(a->width_ns[k] / 2 + 3 * a->spread_ns[k] + a->above_ns[k]);
		if (!clock_table[k].wall && below > (int64_t)cfg->bound_ns) {
			h->went_back_ns = went_below_own_reading(h, a, k, cfg);
			*cause = TRACK_BEHIND;
			return COURSE_STOPPED;
		}
		if (clock_table[k].wall)
			return COURSE_STEP;
		*rate_changed = stale_rate_changed(in, h, k, error_ns);
		return COURSE_SLEW;
	}
	int64_t error = (int64_t)(line_value(in->old, k, a->at[k]) - a->ns[k]);
	/* How far the reading may be off: half its bracket, and for a noisy clock about the
	 * noise's amplitude (three times the readings' spread, which runs at about a third of
	 * it): a median pulled by noise proves no fault; the noise's mean stops it instead. */
	int64_t doubt = (int64_t)(a->width_ns[k] / 2 + 3 * a->spread_ns[k]);
	int64_t bound = (int64_t)cfg->bound_ns;
	/* A fault is acted on only where every reading shows it: readings out of order that
	 * happen to be the median (two of three, four of seven) show one none of the others
	 * do. Such an anchor is no reading: the clock runs on blind, once. */
	bool behind = error - doubt > bound, ahead = -error - doubt > bound;
	if ((behind && error - (int64_t)a->above_ns[k] - doubt <= bound) ||
	    (ahead && -error - (int64_t)a->below_ns[k] - doubt <= bound))
		return no_reading(h, misses_before, false, cause);
	/* Beyond the bound by no more than a change of rate since the last reading explains
	 * (rate_change_most): the kernel's clock changed rate against the counter (a migrated
	 * guest, a hard slew). Acted on here, at the first anchor that shows it: its rate is
	 * measured anew (segment_plan), and the line steps forward to a kernel that ran ahead
	 * or, for one that fell behind, slews down to it from where it is, never back. */
	int64_t explains = (int64_t)rate_change_explains_ns(in, h, k);
	if (behind) {
		/* The counter ran ahead of the kernel, as far as this reading can tell. A wall
		 * clock was stepped back: follow. */
		if (clock_table[k].wall)
			return COURSE_STEP;
		if (error - doubt - bound <= explains) {
			*rate_changed = true;
			*error_ns = error;
			return COURSE_SLEW;
		}
		/* Further than a rate explains: frozen, or stepped back. Any other course would
		 * have to step back. Where the kernel went below its own last reading, that step
		 * back is its own: the stopped clock passes it through rather than stand still
		 * for the whole step. */
		h->went_back_ns = went_below_own_reading(h, a, k, cfg);
		*cause = TRACK_BEHIND;
		return COURSE_STOPPED;
	}
	if (ahead) {
		/* A change of rate, or a jump: a paused VM, a resume, a wall step. */
		*rate_changed = -error - doubt - bound <= explains;
		return COURSE_STEP;
	}
	*error_ns = error;
	return COURSE_SLEW;
}

/* Track k's segment from start, on its course: its base continues the old line there,
 * or starts at the kernel where it stepped (or the line lapsed), and its slope aims at
 * the kernel where the next segment will begin. A blind clock of MONOTONIC's family
 * follows MONOTONIC's segment where `monotonic_placed` (MONOTONIC read at this anchor
 * and serving on: slewed or stepped; planned before it, as track 0). */
static void plan_track(const struct plan_inputs *in, struct plan *out, int k, enum track_course course,
		       uint64_t start, bool stale, bool monotonic_placed)
{
	const bool follows_monotonic = monotonic_placed && k != SERVED_MONOTONIC &&
				       clock_table[k].family == FAMILY_MONOTONIC;
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	struct line *next = &out->next;
	double rate = line_rate(next, clock_table[k].family);
	uint64_t base = segment_value(&in->old->cur, k, start);
	if (course == COURSE_STOPPED) {
		/* Flat at the most it served: the old line's value where this one begins. */
		next->cur.clk[k] = (struct track_params){.base = base, .mult = 0, .shift = 0};
		return;
	}
	if (course == COURSE_BLIND) {
		if (follows_monotonic) {
			/* MONOTONIC plus an offset (BOOTTIME, REALTIME): where MONOTONIC could be
			 * placed, so can it, at the offset the old line held. Gone on at the
			 * family's rate from the old line's error instead, it would carry a
			 * change of rate's whole lead through one more interval, and a second
			 * change's on top of it (twice the envelope). */
			const struct track_params *mono = &next->cur.clk[SERVED_MONOTONIC];
			next->cur.clk[k].base = base + (mono->base - segment_value(&in->old->cur, SERVED_MONOTONIC, start));
			next->cur.clk[k].mult = mono->mult;
			next->cur.clk[k].shift = mono->shift;
			return;
		}
		next->cur.clk[k].base = base;
		set_slope(&next->cur, k, rate, rate);
		return;
	}
	uint64_t kernel_at_start = anchor_value_at(a, k, start, rate);
	if (course == COURSE_RESUME) {
		/* Serves again from the kernel's value (the top of its reading's bracket: no
		 * value the stopped clock passed through before is above it), never below what
		 * it handed out while stopped; readers of the counter before this segment read
		 * it as the stopped clock it was (track_serves_at). */
		base = kernel_at_start + a->width_ns[k] / 2;
		if (!clock_table[k].wall)
			base = max_u64(base, track_hold(in->old, k, UINT64_MAX));
		next->cur.clk[k].base = base;
		set_slope(&next->cur, k, rate, rate);
		out->resumed |= 1u << k;
		return;
	}
	if (course == COURSE_STEP && clock_table[k].wall) {
		/* The wall clock stepped (either way), or the line lapsed: follow, and let no
		 * floor from MONOTONIC hold it up (plan_floor_exempt). */
		base = kernel_at_start;
		out->stepped |= 1u << k;
	} else if (course == COURSE_STEP || stale) {
		if (!stale)
			out->stepped |= 1u << k;
		base = max_u64(base, kernel_at_start); /* never back */
	}
	next->cur.clk[k].base = base;

	/* Aim at the kernel where the next segment will begin (this one's hard end, a life
	 * and its overlap on), correcting the measured error by the anchor's gain: a narrow,
	 * quiet anchor's error is removed by then, a wide or noisy one's only in part, so
	 * noise is averaged, never amplified; the error does not grow from segment to
	 * segment. The slope stays within 1/16 of the kernel's rate. */
	const double to_hard_end = (double)(cfg->life_ticks + cfg->overlap_ticks);
	/* Where the kernel's rate changed, at the next anchor (this one's expiry) instead:
	 * the lead a slowed kernel left is gone by the time the next anchor judges the line,
	 * which would otherwise take what is left of it for a disagreement of its own. */
	const double aim = (out->rate_changed | out->rate_pending) & (1u << clock_table[k].family) ? (double)cfg->life_ticks
												    : to_hard_end;
	double error_at_start = (double)(int64_t)(base - kernel_at_start);
	double gain = anchor_gain(track_doubt_ns(a, k, &next->health[k]), cfg->narrow_ns);
	double slope = rate - gain * error_at_start / aim;
	double lo = rate * 15 / 16, hi = rate * 17 / 16;
	set_slope(&next->cur, k, slope < lo ? lo : slope > hi ? hi : slope, rate);
}

/* The whole line stops: a copy of the old one, every track held at the most it could
 * hand out. */
static void plan_stop(const struct plan_inputs *in, struct plan *out, enum track_stop cause)
{
	/* What this anchor learnt of MONOTONIC's kernel clock, kept: how far it went back
	 * itself, and its readings (the tries to serve again measure the rate from them). */
	uint64_t went_back_ns = out->next.health[SERVED_MONOTONIC].went_back_ns;
	out->next = *in->old;
	out->next.stopped_now = 0;
	/* Its tries measure the rate afresh: a change its last anchor left unconfirmed is
	 * no try's. */
	for (int f = 0; f < 2; f++)
		out->next.rate.unconfirmed_q62[f] = 0;
	line_stop(&out->next, cause);
	struct track_health *h = &out->next.health[SERVED_MONOTONIC];
	h->went_back_ns = cause == TRACK_BEHIND ? went_back_ns : 0;
	schedule_retry(h, in->now, in->cfg);
	note_readings(&out->next, in->anchor);
	out->outcome = PLAN_STOP;
}

void segment_stop_disrupted(const struct plan_inputs *in, struct plan *out)
{
	*out = (struct plan){.next = *in->old};
	plan_stop(in, out, TRACK_DISRUPTED);
	struct track_health *h = &out->next.health[SERVED_MONOTONIC];
	h->retries = 0;
	schedule_retry(h, in->now, in->cfg);
	/* Held flat from where the disruption was seen, not along the old line to its end:
	 * the line's rate is the old host's, and a kernel clock slowed by the move would be
	 * held ever further behind it. Every value served came from a counter read before
	 * the move (a read after it finds the marker changed), so below `now`: the line's
	 * value there is at or above all of them. */
	for (int k = 0; k < TRACKS; k++)
		if (track_serves(in->old, k)) {
			uint64_t v = line_value(in->old, k, in->now);
			out->next.cur.clk[k] = out->next.prev.clk[k] = (struct track_params){.base = v};
		}
}

/* Whether a segment that starts at the anchor is at or above the old one wherever that
 * one is served (from the anchor to its hard end): both lines are straight there, so at
 * both ends. */
static bool starts_at_anchor_above(const struct line *old, const struct line *next)
{
	struct segment s = next->cur;
	s.until = UINT64_MAX; /* not yet set: unclamped */
	for (int k = 0; k < TRACKS; k++) {
		if (!track_serves(old, k) || clock_table[k].wall)
			continue;
		if (segment_value(&s, k, s.start) < segment_value(&old->cur, k, s.start) ||
		    segment_value(&s, k, old->cur.until) < segment_value(&old->cur, k, old->cur.until))
			return false;
	}
	return true;
}

void segment_plan(const struct plan_inputs *in, struct plan *out)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	struct line *next = &out->next;
	*next = *old;
	next->stopped_now = 0;
	out->outcome = PLAN_CONTINUE;
	out->error_measured = false;
	out->error_ns = 0;
	out->largest_error_ns = 0;
	out->stepped = 0;
	out->rate_changed = 0;
	out->rate_pending = 0;
	out->resumed = 0;
	if (!anchor_has(a, SERVED_MONOTONIC)) {
		out->outcome = PLAN_NO_ANCHOR;
		return;
	}

	/* A lapsed line (nobody re-synchronized before its hard end: an idle program,
	 * preempted writers) was clamped, not wrong: re-anchored without a fault. */
	bool stale = in->now >= old->cur.until || a->counter >= old->cur.until;
	enum track_course course[TRACKS];
	enum track_stop cause[TRACKS] = {TRACK_SERVING};
	out->largest_error_ns = 0;
	/* Per family, the sign of the change of rate its clocks show (+1 the kernel ran
	 * ahead, -1 behind), 0 where one of them shows none: a family's rate is its clocks'
	 * together (REALTIME and BOOTTIME are MONOTONIC plus an offset, and a wall clock's
	 * steps say nothing of it), so one clock that moved alone changes none. */
	int family_change[2] = {2, 2}; /* 2: no clock of the family looked at yet */
	for (int k = 0; k < TRACKS; k++) {
		int64_t error = 0;
		bool rate_changed = false;
		course[k] = track_course(in, next, k, stale, &cause[k], &error, &rate_changed);
		int f = clock_table[k].family;
		if (!clock_table[k].wall && track_serves(old, k) && anchor_has(a, k)) {
			int sign = !rate_changed ? 0 : error > 0 ? -1 : 1;
			family_change[f] = family_change[f] == 2 || family_change[f] == sign ? sign : 0;
		}
		uint64_t magnitude = magnitude_i64(error);
		if (magnitude > out->largest_error_ns)
			out->largest_error_ns = magnitude;
	}
	/* The counter's rate against the hardware moves both families alike (a migration);
	 * NTP slews MONOTONIC alone. So MONOTONIC_RAW changes rate only with MONOTONIC: one
	 * that moves alone was frozen, stepped or slowed by something else (a freeze's start
	 * looks like a slow rate), and a rate taken from it would outlive the fault. */
	if (family_change[FAMILY_RAW] != family_change[FAMILY_MONOTONIC])
		family_change[FAMILY_RAW] = 0;
	uint32_t shows = 0;
	for (int f = 0; f < 2; f++)
		if (family_change[f] == 1 || family_change[f] == -1)
			shows |= 1u << f;
	if (cause[SERVED_MONOTONIC] != TRACK_SERVING) {
		plan_stop(in, out, cause[SERVED_MONOTONIC]);
		return;
	}
	if (stale) {
		out->outcome = PLAN_STALE;
	} else {
		out->error_measured = true;
		out->error_ns = (int64_t)(line_value(old, SERVED_MONOTONIC, a->counter) - a->ns[SERVED_MONOTONIC]);
		if (course[SERVED_MONOTONIC] == COURSE_STEP)
			out->outcome = PLAN_REANCHOR;
	}
	next->floor_raw_ratio_q62 = (uint64_t)(relative_rate(old, SERVED_MONOTONIC_RAW) * Q62);
	bool disagreed = out->outcome == PLAN_REANCHOR || (shows & (1u << FAMILY_MONOTONIC));
	double measured[2];
	uint32_t confirmed;
	out->rate_changed = rates_to_adopt(in, next, shows, stale, measured, &out->rate_pending, &confirmed);
	if (disagreed || shows || out->rate_changed) {
		/* The kernel jumped, or its rate changed: a rate measured across it would be the
		 * jump's, or a blend. A changed rate is measured over one interval alone. */
		rate_restart(&next->rate, a);
		for (int f = 0; f < 2; f++)
			if (out->rate_changed & (1u << f))
				adopt_rate(&next->rate, f, measured[f], cfg);
	} else {
		rate_update(&next->rate, a, next->health, cfg);
	}
	/* Three disagreements in a row: the kernel's clock keeps jumping, or its rate keeps
	 * changing. It passes through while it does (and is measured again, plan_stop). A
	 * change of rate confirmed here is the one its first disagreement counted. */
	bool counted = (confirmed & (1u << FAMILY_MONOTONIC)) && old->reanchors_in_a_row;
	next->reanchors_in_a_row = disagreed ? old->reanchors_in_a_row + !counted : 0;
	if (next->reanchors_in_a_row >= 3) {
		plan_stop(in, out, TRACK_JUMPS);
		return;
	}

	/* A segment re-synchronized in time starts at the old one's hard end, so that no
	 * reader of the old publication evaluates it beyond where the new one takes over. A
	 * lapsed one starts at the anchor: readers between the two get the old line clamped,
	 * or what kernel reads handed out (prev_floor), whichever is more. So does one that
	 * steps forward to a kernel that ran ahead, where it is at or above the old one up to
	 * that one's hard end: the kernel's lead is not left to grow for the overlap. */
	bool from_anchor = !stale && course[SERVED_MONOTONIC] == COURSE_STEP && a->counter < old->cur.until;
	uint64_t start = stale || from_anchor ? a->counter : old->cur.until;
	next->prev = old->cur;
	/* MONOTONIC read and serving on: a blind clock of its family can follow it. */
	const bool monotonic_placed =
		course[SERVED_MONOTONIC] == COURSE_SLEW || course[SERVED_MONOTONIC] == COURSE_STEP;
	for (;;) {
		next->cur.start = start;
		for (int k = 0; k < TRACKS; k++) {
			if (cause[k] != TRACK_SERVING)
				stop_track(next, k, cause[k]);
			plan_track(in, out, k, course[k], start, stale, monotonic_placed);
		}
		if (!from_anchor || starts_at_anchor_above(old, next))
			break;
		/* Below the old line somewhere: from its hard end after all. */
		from_anchor = false;
		start = old->cur.until;
		out->stepped = 0;
		out->resumed = 0;
	}
	next->expiry = start + cfg->life_ticks;
	next->cur.until = next->expiry + cfg->overlap_ticks;
	/* The floor is applied by the publication (line_apply_floor), which reads it again
	 * at the moment it publishes. A clock that serves again starts at or above what it
	 * handed out while stopped, for readers of the counter before its segment too. */
	for (int k = 0; k < TRACKS; k++)
		next->prev_floor[k] = 0;
	for (int k = 0; k < TRACKS; k++)
		if (out->resumed & (1u << k)) {
			struct track_health *h = &next->health[k];
			*h = (struct track_health){.noise_x32 = h->noise_x32, .retries = h->retries, .resumed_from = start};
		}
	for (int k = 0; k < TRACKS; k++)
		if (cause[k] != TRACK_SERVING)
			schedule_retry(&next->health[k], in->now, cfg);
	/* The readings this plan followed become the last good ones; one it ran blind past
	 * (out of order, a lone reading beyond the bound) does not, so that a kernel that
	 * stepped back is still judged against its own reading before the step. */
	struct anchor followed = *a;
	for (int k = 0; k < TRACKS; k++)
		if (course[k] == COURSE_BLIND || (course[k] == COURSE_STOPPED && cause[k] == TRACK_SERVING))
			followed.valid &= ~(1u << k);
	note_readings(next, &followed);
}

void segment_resume(const struct plan_inputs *in, struct plan *out)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	const struct plan_config *cfg = in->cfg;
	*out = (struct plan){.next = *old, .outcome = PLAN_STILL};
	struct line *next = &out->next;
	next->stopped_now = 0;
	const int mono = SERVED_MONOTONIC;
	/* The rate of each family over the interval since the last try, and whether it is
	 * steady: within max_rate_deviation / 2 of the last try's (a rate that keeps changing
	 * passes through while it does), and within rate_change_most of the calibrated one
	 * (further, and it is no counter this rate can follow). */
	double rate[2] = {0, 0};
	bool have[2], steady = true;
	for (int f = 0; f < 2; f++) {
		int k = family_track[f];
		have[f] = rate_since_last(&old->health[k], a, k, &rate[f]);
		double before = (double)old->rate.unconfirmed_q62[f] / Q62;
		bool agrees = have[f] && old->rate.unconfirmed_q62[f] &&
			      abs_diff_double(rate[f], before) <= before * cfg->max_rate_deviation / 2 &&
			      rate[f] > cfg->calibrated_ns_per_tick * (1 - 4 * cfg->rate_change_most) &&
			      rate[f] < cfg->calibrated_ns_per_tick * (1 + 4 * cfg->rate_change_most);
		/* MONOTONIC_RAW's rate unknown: MONOTONIC's at the ratio the line last had. */
		if (f == FAMILY_RAW && !have[f]) {
			rate[f] = rate[FAMILY_MONOTONIC] * relative_rate(old, SERVED_MONOTONIC_RAW);
			agrees = true;
		}
		steady &= agrees;
		next->rate.unconfirmed_q62[f] = have[f] ? rate_to_q62(rate[f]) : 0;
	}
	struct track_health *mh = &next->health[mono];
	bool quiet = anchor_has(a, mono) && !(a->lone & (1u << mono)) && a->spread_ns[mono] <= segment_first_spread_limit(cfg);
	quiet = anchor_has(a, mono) && noise_settled(mh, a->spread_ns[mono], cfg) && quiet;
	uint64_t noise_x32 = mh->noise_x32;
	bool past_hold = anchor_has(a, mono) && a->ns[mono] >= track_hold(old, mono, UINT64_MAX);
	if (!(quiet && steady && past_hold)) {
		mh->retries++;
		schedule_retry(mh, in->now, cfg);
		note_readings(next, a);
		return;
	}
	/* The other clocks stopped as too noisy in their own right, before the line stopped
	 * whole, serve again as MONOTONIC does: their own running mean settled. */
	uint64_t own_noise_x32[TRACKS];
	uint32_t unsettled = 0;
	for (int k = 0; k < TRACKS; k++) {
		struct track_health h = old->health[k];
		if (k != mono && h.stopped == TRACK_NOISY &&
		    !(anchor_has(a, k) && !(a->lone & (1u << k)) && noise_settled(&h, a->spread_ns[k], cfg)))
			unsettled |= 1u << k;
		own_noise_x32[k] = h.noise_x32;
	}
	/* A fresh line at the measured rates, each track from its kernel's value (the top of
	 * its bracket) but never below what it handed out; a track whose kernel is still
	 * below that, that has no good reading, or whose noise has not settled, stays
	 * stopped, flat at its hold. */
	line_fresh(next, a, cfg, rate);
	for (int k = 0; k < TRACKS; k++) {
		struct track_health *h = &next->health[k];
		uint64_t hold = track_hold(old, k, UINT64_MAX);
		if (old->health[k].stopped == TRACK_NOISY)
			h->noise_x32 = own_noise_x32[k];
		if (h->stopped == TRACK_SERVING && !(unsettled & (1u << k)) && (clock_table[k].wall || a->ns[k] >= hold)) {
			uint64_t base = next->cur.clk[k].base + a->width_ns[k] / 2;
			next->cur.clk[k].base = next->prev.clk[k].base = clock_table[k].wall ? base : max_u64(base, hold);
			h->resumed_from = next->cur.start;
			out->resumed |= 1u << k;
			continue;
		}
		*h = (struct track_health){.stopped = h->stopped ? h->stopped : old->health[k].stopped,
					   .hold_ns = clock_table[k].wall ? 0 : hold,
					   .retries = old->health[k].retries,
					   .noise_x32 = own_noise_x32[k]};
		schedule_retry(h, in->now, cfg);
		next->cur.clk[k] = next->prev.clk[k] = (struct track_params){.base = hold};
	}
	next->health[mono].retries = old->health[mono].retries;
	next->health[mono].noise_x32 = noise_x32;
	next->floor_raw_ratio_q62 = (uint64_t)(relative_rate(next, SERVED_MONOTONIC_RAW) * Q62);
	out->outcome = PLAN_RESUME;
}

/* The ratio the floor of line l was handed out with, for track k: a planned line's
 * predecessor's (the floor rose past its end), a line stopped whole its own. */
static double floor_relative_rate(const struct line *l, int k)
{
	if (clock_table[k].family == FAMILY_MONOTONIC || !l->active || !l->floor_raw_ratio_q62)
		return relative_rate(l, k);
	return (double)l->floor_raw_ratio_q62 / Q62;
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
static bool split_segment(const struct line *l, const struct segment *s, uint64_t from, uint64_t span,
			  struct read_range *out)
{
	for (int k = 0; k < TRACKS; k++) {
		if (!track_serves(l, k))
			continue; /* never read in line (flat, mult 0, where it stopped) */
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
	if (!split_segment(l, &l->cur, l->cur.start, cur_span, forms->cur)) {
		line_stop(l, TRACK_CORRUPT);
		memset(forms, 0, sizeof *forms);
	}
	l->prev_direct_from = l->cur.start;
	if (l->active && prev->start < l->cur.start && l->cur.start <= prev->until) {
		/* Each track is non-decreasing, so a floor at or below its value at prev.start
		 * never binds in the range (nor does a track that serves again from cur.start,
		 * read before it as the stopped clock it was)... */
		bool floors_bind = false;
		for (int k = 0; k < TRACKS; k++)
			floors_bind |= track_serves(l, k) && (l->prev_floor[k] > segment_value(prev, k, prev->start) ||
							      l->health[k].resumed_from > prev->start);
		/* ...and prev serves [prev.start, cur.start) in line. */
		if (!floors_bind && split_segment(l, prev, prev->start, l->cur.start - prev->start, forms->prev))
			l->prev_direct_from = prev->start;
		else
			memset(forms->prev, 0, sizeof forms->prev);
	}
	/* A stopped track serves nothing in line: its every read takes the slow path. */
	for (int k = 0; k < TRACKS; k++)
		if (!track_serves(l, k)) {
			memset(&forms->cur[k], 0, sizeof forms->cur[k]);
			memset(&forms->prev[k], 0, sizeof forms->prev[k]);
		}
}

bool line_apply_floor(struct line *next, uint64_t floor, uint32_t skip_tracks)
{
	/* The segment readers had before this line: the one a continuing plan follows, or,
	 * for a line that stops, the line's own. */
	const struct segment *prev = next->active ? &next->prev : &next->cur;
	uint64_t end_mono = segment_value(prev, SERVED_MONOTONIC, prev->until);
	if (floor <= end_mono)
		return true; /* the old line's own end, which the plan continues, is above it */

	/* What kernel reads handed out for track k: held at or above by a track stopped now,
	 * followed by a track that serves on. */
	uint64_t track_floor[TRACKS];
	for (int k = 0; k < TRACKS; k++) {
		if (skip_tracks & (1u << k))
			continue;
		track_floor[k] = carried(segment_value(prev, k, prev->until), end_mono, floor, floor_relative_rate(next, k));
		if ((next->stopped_now & (1u << k)) && next->health[k].hold_ns < track_floor[k])
			next->health[k].hold_ns = track_floor[k];
	}
	if (!next->active)
		return true;

	/* The counter value from which the planned segment is at or above every floor;
	 * before it, readers get the floors (prev_floor). */
	uint64_t from = next->cur.start, monotonic_meets_floor = next->cur.start;
	for (int k = 0; k < TRACKS; k++) {
		if ((skip_tracks & (1u << k)) || !track_serves(next, k))
			continue;
		if (next->prev_floor[k] < track_floor[k])
			next->prev_floor[k] = track_floor[k];
		uint64_t base = next->cur.clk[k].base;
		if (base >= track_floor[k])
			continue;
		struct conversion c = {.mult = next->cur.clk[k].mult, .shift = (uint32_t)next->cur.clk[k].shift};
		long double slope = conversion_slope(&c);
		uint64_t reach = next->cur.start +
				 (uint64_t)((long double)(track_floor[k] - base) / slope) + 1;
		if (reach >= next->expiry && k != SERVED_MONOTONIC && !clock_table[k].wall) {
			/* Its kernel clock so far below what readers past the old line's end were
			 * handed for it (carried on from MONOTONIC's: MONOTONIC_RAW running at
			 * another rate than MONOTONIC's family) that no segment could come up to it:
			 * a fresh anchor would find it further still. It stops, held at that; the
			 * line publishes, and the others serve on. (A wall clock below it was
			 * stepped back since the anchor: the next plan follows the step.) */
			stop_track(next, k, TRACK_BEHIND);
			next->health[k].hold_ns = track_floor[k];
			next->cur.clk[k] = (struct track_params){.base = track_floor[k], .mult = 0, .shift = 0};
			continue;
		}
		if (k == SERVED_MONOTONIC)
			monotonic_meets_floor = reach;
		if (reach > from)
			from = reach;
	}
	if (from >= next->expiry)
		return false;
	if (from > next->cur.start) {
		/* The same segment, started later: every track's value at `from`. A track no
		 * floor holds (a wall clock the kernel stepped) stands until then at its own
		 * plan's value where MONOTONIC's plan meets MONOTONIC's floor: the kernel's
		 * wall clock when that floor was handed out, as the others stand at their
		 * floors. Not at its planned start value (the anchor's): that stood as far
		 * behind as the writer was late and the plan lagged (test_segment: a writer
		 * preempted 60 us, a plan 20 us behind: 80 us below). Not where another track's
		 * floor is met (`from`): an old error of that track's would put it that far
		 * above the kernel. And not at the old line's clamped end, which for a step back
		 * is the time before the step: the old segment is flattened there too. */
		for (int k = 0; k < TRACKS; k++) {
			if (skip_tracks & (1u << k)) {
				uint64_t stand = segment_value(&next->cur, k, monotonic_meets_floor);
				if (next->prev_floor[k] < stand)
					next->prev_floor[k] = stand;
				next->prev.clk[k] = (struct track_params){.base = next->prev_floor[k], .mult = 0, .shift = 0};
			}
			next->cur.clk[k].base = segment_value(&next->cur, k, from);
		}
		next->cur.start = from;
	}
	return true;
}
