/* The re-synchronization plan over synthetic kernels: continuity, damping of a noisy
 * reference, lapsed lines, the watchdog's outcomes, a bounded rate, wide anchors, steps
 * of BOOTTIME and REALTIME, floors from fallbacks, and time namespaces. */
#include "absdiff.h"
#include "rng.h"
#include "segment.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* A 2 GHz counter: 0.5 ns per tick. */
#define RATE 0.5
#define LIFE 1000000ull /* 0.5 ms of ticks */

static const struct plan_config cfg = {
	.life_ticks = LIFE, .bound_ns = 1000, .watchdog_ns = 1000000, .narrow_ns = 500,
	.calibrated_ns_per_tick = RATE, .max_rate_deviation = 1e-3,
	/* As plan_config_derive gives them at this bound and rate (plan_config_is_derived). */
	.overlap_ticks = LIFE / 8, .rate_change_most = 1.0 / 16, .rate_confirm_ns = 8000, .retry_first_ticks = 4 * LIFE,
	.retry_most_ticks = 2000000000, .quiet_anchors = 4, .full_readings = 7, .resync_readings = 3,
};

/* A synthetic kernel: value of clock k at counter t, at `rate` ns per tick, with an
 * offset per clock. */
struct kernel {
	double rate;
	int64_t offset[TRACKS];
};

static uint64_t kernel_at(const struct kernel *kern, int k, uint64_t t)
{
	return (uint64_t)((int64_t)(5000000000.0 + (double)t * kern->rate) + kern->offset[k]);
}

static struct anchor anchor_of(const struct kernel *kern, uint64_t t, int64_t noise, uint64_t width)
{
	struct anchor a = {.counter = t, .valid = (1u << TRACKS) - 1};
	for (int k = 0; k < TRACKS; k++) {
		a.at[k] = t;
		a.ns[k] = (uint64_t)((int64_t)kernel_at(kern, k, t) + noise);
		a.width_ns[k] = width;
	}
	return a;
}

static const struct kernel steady = {.rate = RATE, .offset = {0, -1000000000, 7000000, 1700000000000000000}};

static struct plan plan_from(const struct line *old, const struct anchor *a, uint64_t now)
{
	struct plan_inputs in = {.old = old, .anchor = a, .now = now, .cfg = &cfg};
	struct plan p;
	segment_plan(&in, &p);
	return p;
}

static void first_line(struct line *l, const struct kernel *kern, uint64_t t)
{
	struct anchor a = anchor_of(kern, t, 0, 50);
	segment_first(l, &a, &cfg);
}

static void first_line_is_anchored(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	CHECK(l.active == 1);
	for (int k = 0; k < TRACKS; k++)
		CHECK_EQ_U64(line_value(&l, k, 10000000), kernel_at(&steady, k, 10000000));
	CHECK_EQ_U64(line_value(&l, SERVED_MONOTONIC, 10002000), kernel_at(&steady, SERVED_MONOTONIC, 10000000) + 1000);
	CHECK_EQ_U64(l.expiry, 10000000 + LIFE);
	CHECK_EQ_U64(l.cur.until, 10000000 + LIFE + LIFE / 8);
}

/* The new line is pointwise at or above the old one on every non-wall track, equal
 * before it starts, and non-decreasing. */
static void check_no_step_back(const struct line *old, const struct line *next)
{
	for (int k = 0; k < TRACKS; k++) {
		if (clock_table[k].wall)
			continue;
		uint64_t last = 0;
		for (uint64_t t = old->cur.start; t < next->cur.until + LIFE; t += 997) {
			uint64_t before = line_value(old, k, t), after = line_value(next, k, t);
			CHECK(after >= before);
			if (t < next->cur.start && next->prev_floor[k] == 0)
				CHECK(after == before);
			CHECK(after >= last);
			last = after;
		}
	}
}

static void continuation_keeps_every_value(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	struct kernel fast = steady;
	fast.rate = RATE * (1 + 400e-6);
	/* The same clock at the first anchor, 400 ppm fast from there. */
	for (int k = 0; k < TRACKS; k++)
		fast.offset[k] -= (int64_t)(10000000 * RATE * 400e-6);
	for (int64_t noise = -300; noise <= 300; noise += 300) {
		struct anchor a = anchor_of(&fast, old.expiry + 1000, noise, 100);
		struct plan p = plan_from(&old, &a, old.expiry + 500);
		CHECK(p.outcome == PLAN_CONTINUE);
		CHECK(p.error_measured);
		CHECK_EQ_U64(p.next.cur.start, old.cur.until);
		check_no_step_back(&old, &p.next);
	}
}

/* Drives the plan for `rounds` re-synchronizations against a kernel at `kern` whose
 * readings carry uniform noise of +/- jitter ns, each anchor taken just after the line
 * expired, and returns the largest |line - kernel| seen at any point in between. */
static uint64_t drive(const struct kernel *kern, int rounds, int64_t jitter, uint64_t width)
{
	struct line l;
	first_line(&l, kern, 1000000);
	srand(7);
	uint64_t worst = 0;
	for (int i = 0; i < rounds; i++) {
		int64_t noise = jitter ? (int64_t)(rand() % (2 * jitter + 1)) - jitter : 0;
		struct anchor a = anchor_of(kern, l.expiry + 2000, noise, width);
		struct plan p = plan_from(&l, &a, l.expiry + 1000);
		CHECK(p.outcome == PLAN_CONTINUE);
		for (int k = 0; k < TRACKS; k++)
			for (uint64_t t = p.next.cur.start; t < p.next.cur.until; t += LIFE / 8) {
				int64_t e = (int64_t)(line_value(&p.next, k, t) - kernel_at(kern, k, t));
				uint64_t m = (uint64_t)(e < 0 ? -e : e);
				if (i > 4 && m > worst)
					worst = m;
			}
		l = p.next;
	}
	return worst;
}

static void a_noisy_reference_is_damped(void)
{
	/* +/-200 ns of noise on every reading: the error stays under 1 us, for ever. The
	 * first plan's aim overshot here by the size of each correction (13-31 us). */
	uint64_t worst = drive(&steady, 4000, 200, 100);
	printf("# jitter 200 ns: worst |line - kernel| %llu ns\n", (unsigned long long)worst);
	CHECK(worst < 1000);
	/* A slewed kernel (NTP at its 500 ppm limit) and the same noise. */
	struct kernel slewed = steady;
	slewed.rate = RATE * (1 - 500e-6);
	worst = drive(&slewed, 4000, 200, 100);
	printf("# slewed -500 ppm, jitter 200 ns: worst %llu ns\n", (unsigned long long)worst);
	CHECK(worst < 1000);
	/* A quiet reference: within a few ns. */
	worst = drive(&steady, 1000, 0, 100);
	CHECK(worst < 10);
}

static void wide_anchors_move_the_line_less(void)
{
	CHECK(anchor_gain(100, 500) == 1.0);
	CHECK(anchor_gain(5000, 500) == 0.1);
	/* A reference read by slow, wide brackets (a system call on a guest whose calls
	 * trap: 1.9 us, near the widest a reading may be at a 1 us bound), each reading
	 * anywhere in the middle half of its bracket: the line averages, rather than follows,
	 * the noise, and never reads it as a fault. */
	uint64_t worst = drive(&steady, 4000, 500, 1900);
	printf("# 1.9 us brackets, 0.5 us noise: worst %llu ns\n", (unsigned long long)worst);
	CHECK(worst < 1000);
}

static void a_lapsed_line_reanchors_without_a_fault(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t late = old.cur.until + 50 * LIFE;
	struct anchor a = anchor_of(&steady, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.outcome == PLAN_STALE);
	CHECK(!p.error_measured);
	CHECK_EQ_U64(p.next.cur.start, late + 100);
	CHECK(line_value(&p.next, SERVED_MONOTONIC, late + 100) >= kernel_at(&steady, SERVED_MONOTONIC, late + 100));
	check_no_step_back(&old, &p.next);
}

/* Over a lapse the kernel stepped BOOTTIME back 10 ms: below its own last reading, it went
 * back itself, and stops with its step passed through, rather than be re-anchored 10 ms
 * ahead of its kernel. */
static void a_step_back_over_a_lapse_is_the_kernels_own(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t late = old.cur.until + 50 * LIFE;
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] -= 10000000 + (int64_t)(50 * LIFE * RATE);
	struct anchor a = anchor_of(&k, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.outcome == PLAN_STALE);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_BEHIND);
	CHECK(p.next.health[SERVED_BOOTTIME].went_back_ns);
	CHECK(track_serves(&p.next, SERVED_MONOTONIC));
}

/* MONOTONIC_RAW frozen since the middle of a segment, judged by an anchor taken as the
 * line's hard end passed (make soak: a second anchor, taken to confirm a fault, came past
 * it): below the lapsed line's end by all the line ran on since the freeze, but not below
 * its own last reading. It did not go back: it stops held at what the line handed out,
 * rather than pass its frozen value through below them (153 us below, in the soak). */
static void a_freeze_over_a_lapse_is_held(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t frozen_at = old.cur.start + LIFE / 2;
	uint64_t late = old.cur.until + 100;
	struct kernel k = steady;
	k.offset[SERVED_MONOTONIC_RAW] -= (int64_t)((double)(late - frozen_at) * RATE);
	struct anchor a = anchor_of(&k, late, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.outcome == PLAN_STALE);
	CHECK(track_serves(&p.next, SERVED_MONOTONIC));
	CHECK(p.next.health[SERVED_MONOTONIC_RAW].stopped == TRACK_BEHIND);
	CHECK(!p.next.health[SERVED_MONOTONIC_RAW].went_back_ns);
	CHECK(track_hold(&p.next, SERVED_MONOTONIC_RAW, UINT64_MAX) >=
	      line_value(&old, SERVED_MONOTONIC_RAW, old.cur.until));
	/* Below its own last reading by more than the bound, the same clock went back. */
	k.offset[SERVED_MONOTONIC_RAW] -= (int64_t)((double)(frozen_at - old.cur.start) * RATE) + 2000;
	a = anchor_of(&k, late, 0, 100);
	p = plan_from(&old, &a, late);
	CHECK(p.next.health[SERVED_MONOTONIC_RAW].stopped == TRACK_BEHIND);
	CHECK(p.next.health[SERVED_MONOTONIC_RAW].went_back_ns);
}

static void the_watchdog_stops_a_counter_that_ran_ahead(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	struct anchor a = anchor_of(&steady, old.expiry + 100, -2000000, 100); /* kernel 2 ms behind */
	struct plan p = plan_from(&old, &a, old.expiry);
	CHECK(p.outcome == PLAN_STOP);
	CHECK(p.next.active == 0);
	CHECK_EQ_U64(p.next.expiry, p.next.cur.start); /* every read takes the slow path */
	/* Every track is held at what the line handed out up to each moment, never more. */
	for (int k = 0; k < TRACKS; k++) {
		CHECK(p.next.health[k].stopped == TRACK_BEHIND);
		for (uint64_t t = old.cur.start; t < old.cur.until + LIFE; t += LIFE / 7)
			CHECK_EQ_U64(track_hold(&p.next, k, t), line_value(&old, k, t));
	}
	/* A reading whose bracket could hold the kernel anywhere in 4.1 ms cannot prove it. */
	a.width_ns[SERVED_MONOTONIC] = 4100000;
	p = plan_from(&old, &a, old.expiry);
	CHECK(p.outcome != PLAN_STOP);
}

/* The paused-VM case: the kernel jumps ahead. The line steps forward to it, the rate is
 * measured from there on (the rate measured so far stands: a jump moves the clock, not
 * its rate), and nothing ever steps back; three in a row stop serving. */
static void a_kernel_jump_reanchors_with_a_fresh_rate(void)
{
	for (int64_t jump_ms = 2; jump_ms <= 100; jump_ms *= 5) {
		struct line l;
		first_line(&l, &steady, 10000000);
		struct kernel k = steady;
		/* Let a rate history build up, slightly off. */
		k.rate = RATE * (1 + 300e-6);
		for (int i = 0; i < 20; i++) {
			struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
			l = plan_from(&l, &a, l.expiry).next;
		}
		for (int c = 0; c < TRACKS; c++)
			k.offset[c] += jump_ms * 1000000;
		struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
		struct plan p = plan_from(&l, &a, l.expiry);
		CHECK(p.outcome == PLAN_REANCHOR);
		CHECK(line_rate(&p.next, FAMILY_MONOTONIC) == line_rate(&l, FAMILY_MONOTONIC));
		CHECK(line_rate(&p.next, FAMILY_MONOTONIC) > RATE * (1 + 100e-6)); /* the 300 ppm measured */
		CHECK_EQ_U64(p.next.rate.ref_counter[FAMILY_MONOTONIC], a.counter);
		check_no_step_back(&l, &p.next);
		/* Afterwards it converges and never stops. */
		struct line m = p.next;
		for (int i = 0; i < 40; i++) {
			struct anchor b = anchor_of(&k, m.expiry + 100, 0, 100);
			struct plan q = plan_from(&m, &b, m.expiry);
			CHECK(q.outcome == PLAN_CONTINUE);
			check_no_step_back(&m, &q.next);
			m = q.next;
		}
		int64_t e = (int64_t)(line_value(&m, SERVED_MONOTONIC, m.expiry) - kernel_at(&k, SERVED_MONOTONIC, m.expiry));
		CHECK(e < 1000 && e > -1000);
	}
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	enum plan_outcome last = PLAN_CONTINUE;
	for (int i = 0; i < 3; i++) {
		for (int c = 0; c < TRACKS; c++)
			k.offset[c] += 5000000;
		struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
		struct plan p = plan_from(&l, &a, l.expiry);
		last = p.outcome;
		l = p.next;
	}
	CHECK(last == PLAN_STOP);
}

/* A kernel whose rate changes against the counter by up to rate_change_most (a migrated
 * guest, 4.8 %; a hard slew) is followed from the first anchor that sees it: the rate is
 * measured anew, the line never steps back, and every value stays within the bound plus
 * what one interval at the new rate adds. A reference further off than any such change
 * (30 % fast) is no rate: it stops the line as jumping. */
static uint64_t follow_rate_change(double ppm, int *stops, uint64_t *worst_after)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	k.rate = RATE * (1 + ppm * 1e-6);
	/* The same clock at the first line's expiry, at the new rate from there. */
	for (int c = 0; c < TRACKS; c++)
		k.offset[c] -= (int64_t)((double)l.expiry * RATE * ppm * 1e-6);
	uint64_t worst = 0;
	*stops = 0;
	*worst_after = 0;
	for (int i = 0; i < 60; i++) {
		struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
		struct plan p = plan_from(&l, &a, l.expiry);
		*stops += p.outcome == PLAN_STOP;
		if (p.outcome == PLAN_STOP)
			break;
		check_no_step_back(&l, &p.next);
		for (uint64_t t = l.expiry; t < p.next.expiry; t += LIFE / 16) {
			int64_t e = (int64_t)(line_value(&p.next, SERVED_MONOTONIC, t) - kernel_at(&k, SERVED_MONOTONIC, t));
			uint64_t m = (uint64_t)(e < 0 ? -e : e);
			worst = m > worst ? m : worst;
			if (i >= 3 && m > *worst_after)
				*worst_after = m;
		}
		l = p.next;
	}
	return worst;
}

static void a_rate_change_is_followed_at_once(void)
{
	/* The envelope: the bound plus |change| over a life and two overlaps (from the last
	 * anchor to the next, then to the hard end, which a slowed kernel's lead runs on to). */
	const double interval_ns = (double)(LIFE + 2 * (LIFE / 8)) * RATE;
	static const double ppm[] = {100, -100, 2000, -2000, 10000, -10000, 48000, -48000};
	for (unsigned i = 0; i < sizeof ppm / sizeof *ppm; i++) {
		int stops;
		uint64_t after;
		uint64_t worst = follow_rate_change(ppm[i], &stops, &after);
		double envelope = 1000 + (ppm[i] < 0 ? -ppm[i] : ppm[i]) * 1e-6 * interval_ns;
		printf("# %+.0f ppm: worst |line - kernel| %llu ns (envelope %.0f), after 3 anchors %llu ns, stops %d\n",
		       ppm[i], (unsigned long long)worst, envelope, (unsigned long long)after, stops);
		CHECK(stops == 0);
		CHECK((double)worst <= envelope);
		CHECK(after < 1000);
	}
	int stops;
	uint64_t after;
	follow_rate_change(300000, &stops, &after);
	CHECK(stops == 1);
}

/* The kernel's clocks fast by 4.8 % from counter `from`, slow by 4.8 % from `flip` on
 * (a wobble's flip, a change of 9.6 %): clock k's value at t. */
static uint64_t flipped_at(int k, uint64_t from, uint64_t flip, uint64_t t)
{
	uint64_t v = kernel_at(&steady, k, t);
	double gained = 0;
	if (t > from)
		gained += (double)((t < flip ? t : flip) - from) * RATE * 0.048;
	if (t > flip)
		gained -= (double)(t - flip) * RATE * 0.048;
	return v + (uint64_t)(int64_t)gained;
}

/* A line serving at +4.8 %, MONOTONIC's reading at one anchor a lone one that disagrees
 * (it runs blind past it: its last reading is the one before), then a slowing by 9.6 %
 * just after that anchor. At the next, BOOTTIME (read at the blind anchor) is behind
 * beyond what a change of rate since explains, and stops; MONOTONIC, judged from its
 * own older reading, took the same for a change over two intervals: the family's rate
 * was not adopted, MONOTONIC slewed at 15/16 of its old rate and its lead grew through
 * the interval (probe_hostile's wobble: 77 us off). The same clock's family judges it
 * alike: it stops, held, within the envelope of one interval. */
static void a_blind_anchor_does_not_stretch_what_a_rate_explains(void)
{
	uint64_t worst = 0;
	for (int phase = 0; phase < 8; phase++) {
		struct line l;
		first_line(&l, &steady, 10000000);
		uint64_t from = l.expiry, flip = UINT64_MAX;
		for (int j = 0; j < 12; j++) {
			struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
			for (int k = 0; k < TRACKS; k++)
				a.ns[k] = flipped_at(k, from, flip, a.at[k]);
			if (j == 10) {
				a.lone |= 1u << SERVED_MONOTONIC;
				a.ns[SERVED_MONOTONIC] += 1500;
				flip = a.counter + (uint64_t)phase * LIFE / 64;
			}
			struct plan p = plan_from(&l, &a, l.expiry);
			CHECK(j < 11 || !p.next.active || p.rate_changed);
			for (uint64_t t = l.cur.start > flip ? l.cur.start : flip;
			     t < (p.next.active ? p.next.expiry : l.cur.until); t += LIFE / 64) {
				const struct line *src = !p.next.active || t < p.next.cur.start ? &l : &p.next;
				uint64_t m = magnitude_i64(
					(int64_t)(line_value(src, SERVED_MONOTONIC, t) - flipped_at(SERVED_MONOTONIC, from, flip, t)));
				worst = m > worst ? m : worst;
			}
			l = p.next;
			if (!l.active)
				break;
		}
	}
	double envelope = 1000 + 0.096 * (double)(LIFE + 2 * (LIFE / 8)) * RATE;
	printf("# a 9.6 %% slowing after a blind anchor: worst %llu ns (envelope %.0f)\n", (unsigned long long)worst, envelope);
	CHECK((double)worst <= envelope);
}

/* The kernel's clock MONOTONIC at counter t where its rate changed by `ppm` at counter
 * `at`, steady before. */
static uint64_t kinked_at(double ppm, uint64_t at, int k, uint64_t t)
{
	uint64_t v = kernel_at(&steady, k, t);
	return t > at ? v + (uint64_t)(int64_t)((double)(t - at) * RATE * ppm * 1e-6) : v;
}

/* Lines that lapse at every re-synchronization (every writer late past the hard end, a
 * program that reads less often than a life): a change of rate by 0.2 % to 4.8 % is
 * measured from the kernel's own readings over the lapse, confirmed by the next, and
 * adopted; from then on every segment is within the bound. No error was measured over a
 * lapsed line, so the rate was never taken in: each segment ran at the old rate, up to
 * |change| x its length off (probe_hostile, writers paused 100 us: 27 us at 4.8 %). */
static void a_rate_change_over_lapsed_lines_is_adopted(void)
{
	static const double ppm[] = {2000, -2000, 10000, -10000, 48000, -48000};
	for (unsigned i = 0; i < sizeof ppm / sizeof *ppm; i++) {
		struct line l;
		first_line(&l, &steady, 10000000);
		uint64_t at = l.cur.until + LIFE / 3;
		uint64_t worst_after = 0;
		int anchors_to_adopt = -1, stops = 0;
		for (int j = 0; j < 12; j++) {
			uint64_t when = l.cur.until + LIFE / 4;
			struct anchor a = anchor_of(&steady, when, 0, 100);
			for (int k = 0; k < TRACKS; k++)
				a.ns[k] = kinked_at(ppm[i], at, k, when);
			struct plan p = plan_from(&l, &a, when);
			CHECK(p.outcome == PLAN_STALE || p.outcome == PLAN_STOP);
			stops += p.outcome == PLAN_STOP;
			if (p.outcome == PLAN_STOP)
				break;
			if (anchors_to_adopt < 0 && p.rate_changed)
				anchors_to_adopt = j;
			for (uint64_t t = p.next.cur.start; anchors_to_adopt >= 0 && t < p.next.cur.until; t += LIFE / 64) {
				uint64_t m = magnitude_i64(
					(int64_t)(line_value(&p.next, SERVED_MONOTONIC, t) - kinked_at(ppm[i], at, SERVED_MONOTONIC, t)));
				worst_after = m > worst_after ? m : worst_after;
			}
			l = p.next;
		}
		printf("# %+.0f ppm, every line lapsed: adopted at anchor %d, then worst %llu ns, stops %d\n", ppm[i],
		       anchors_to_adopt, (unsigned long long)worst_after, stops);
		CHECK(stops == 0);
		CHECK(anchors_to_adopt >= 1 && anchors_to_adopt <= 2);
		CHECK(worst_after <= 1000);
		CHECK(line_rate(&l, FAMILY_MONOTONIC) > RATE * (1 + ppm[i] * 1e-6 - 1e-4) &&
		      line_rate(&l, FAMILY_MONOTONIC) < RATE * (1 + ppm[i] * 1e-6 + 1e-4));
	}
}

/* A change of rate at any moment of a segment, re-synchronized within 2 us of each
 * expiry (the first read past it): 200 at each rate, from 0.2 % to 4.8 % both ways. Every
 * value from the change on stays within the envelope (the bound and |change| x 625 us),
 * confirmed first or not, and none stops. A change of a few bounds an interval (to 1 %)
 * is confirmed before it is adopted, and two anchors after its first disagreement the
 * line is within the bound again: the rate adopted was measured at the new rate
 * throughout (adopted at once from the interval that showed it, begun within it, the
 * rate fell short: 1.16-1.29 us off there at +/-0.5 % and +/-1 %). A larger one begun
 * late in an interval is confirmed too; its lead, slewed away by the next anchor, runs
 * on below the kernel by an eighth of it to the segment's hard end, as where adopted at
 * once (1.5 and 3.7 us at -2 % and -4.8 %). */
static void a_rate_change_at_any_phase_keeps_its_envelope(void)
{
	static const double ppm[] = {2000, -2000, 5000, -5000, 10000, -10000, 20000, -20000, 48000, -48000};
	uint64_t seed = 88172645463325252ull;
	for (unsigned i = 0; i < sizeof ppm / sizeof *ppm; i++) {
		uint64_t worst = 0, settled = 0;
		int stops = 0, confirmed = 0;
		for (int trial = 0; trial < 200; trial++) {
			struct line l;
			first_line(&l, &steady, 10000000);
			for (int j = 0; j < 6; j++) {
				struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
				l = plan_from(&l, &a, l.expiry).next;
			}
			uint64_t at = l.cur.start + xorshift64(&seed) % (LIFE + LIFE / 8);
			int first = -1;
			bool pending = false;
			for (int j = 0; j < 10; j++) {
				uint64_t when = l.expiry + xorshift64(&seed) % 4000;
				struct anchor a = anchor_of(&steady, when, 0, 100);
				for (int k = 0; k < TRACKS; k++)
					a.ns[k] = kinked_at(ppm[i], at, k, when);
				struct plan p = plan_from(&l, &a, when);
				if (p.outcome == PLAN_STOP) {
					stops++;
					break;
				}
				if (first < 0 && (p.rate_changed || p.rate_pending || p.outcome == PLAN_REANCHOR)) {
					first = j;
					pending = p.rate_pending;
					confirmed += pending;
				}
				for (uint64_t t = l.cur.start > at ? l.cur.start : at; t < p.next.expiry; t += LIFE / 64) {
					uint64_t m = magnitude_i64(
						(int64_t)(line_value(&p.next, SERVED_MONOTONIC, t) - kinked_at(ppm[i], at, SERVED_MONOTONIC, t)));
					worst = m > worst ? m : worst;
					if (pending && j >= first + 2 && t >= l.expiry && m > settled)
						settled = m;
				}
				l = p.next;
			}
		}
		double envelope = 1000 + abs_diff_double(ppm[i], 0) * 1e-6 * (double)(LIFE + 2 * (LIFE / 8)) * RATE;
		printf("# %+.0f ppm at any phase: worst %llu ns (envelope %.0f), confirmed first %d of 200, two anchors on %llu ns, "
		       "stops %d\n",
		       ppm[i], (unsigned long long)worst, envelope, confirmed, (unsigned long long)settled, stops);
		CHECK((double)worst <= envelope);
		CHECK(stops == 0);
		CHECK((settled <= 1000 && confirmed == 200) || abs_diff_double(ppm[i], 0) > 10000);
	}
}

/* A jump of a few bounds (make soak: 5 us every 50 ms) is what a change of rate over the
 * interval that holds it would show too. Taken for one, the rate measured across it ran
 * the line off by the jump over the next interval (274 values up to 4.9 us off in 20 s);
 * it is acted on as a jump (stepped to ahead, slewed down to behind) at the rate the line
 * had, and the next interval, at that rate again, drops it: no rate changes, and from
 * where the line took it every value is within the bound. */
static void a_small_jump_is_not_a_rate(void)
{
	for (int64_t jump = -3000; jump <= 5000; jump += 8000) {
		struct line l;
		first_line(&l, &steady, 10000000);
		for (int i = 0; i < 12; i++) {
			struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
			l = plan_from(&l, &a, l.expiry).next;
		}
		double before = line_rate(&l, FAMILY_MONOTONIC);
		struct kernel k = steady;
		for (int c = 0; c < TRACKS; c++)
			k.offset[c] += jump;
		struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
		struct plan p = plan_from(&l, &a, l.expiry);
		CHECK(p.outcome == (jump > 0 ? PLAN_REANCHOR : PLAN_CONTINUE));
		CHECK(p.rate_changed == 0 && p.rate_pending == 3);
		check_no_step_back(&l, &p.next);
		/* Behind, the line's lead runs on to the old hard end, then is slewed away by
		 * the next anchor; ahead, it steps to the kernel at once. */
		uint64_t from = jump > 0 ? p.next.cur.start : p.next.expiry;
		uint64_t worst = 0;
		l = p.next;
		for (int i = 0; i < 6; i++) {
			a = anchor_of(&k, l.expiry + 100, 0, 100);
			p = plan_from(&l, &a, l.expiry);
			CHECK(p.outcome == PLAN_CONTINUE && p.rate_changed == 0 && p.rate_pending == 0);
			check_no_step_back(&l, &p.next);
			for (uint64_t t = from; t < p.next.expiry; t += LIFE / 64) {
				int64_t e = (int64_t)(line_value(&p.next, SERVED_MONOTONIC, t) - kernel_at(&k, SERVED_MONOTONIC, t));
				worst = magnitude_i64(e) > worst ? magnitude_i64(e) : worst;
			}
			from = p.next.expiry;
			l = p.next;
		}
		printf("# a %+lld ns jump: worst |line - kernel| from where the line took it %llu ns\n", (long long)jump,
		       (unsigned long long)worst);
		CHECK(worst <= 1000);
		CHECK(line_rate(&l, FAMILY_MONOTONIC) == before);
	}
}

static void boottime_steps_forward_realtime_steps_both_ways(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] += 5000000000; /* a resume from suspend */
	k.offset[SERVED_REALTIME] -= 3600000000000; /* settimeofday an hour back */
	struct anchor a = anchor_of(&k, old.expiry + 100, 0, 100);
	struct plan p = plan_from(&old, &a, old.expiry);
	CHECK(p.outcome == PLAN_CONTINUE); /* MONOTONIC agreed: no fault */
	CHECK(p.stepped & (1u << SERVED_BOOTTIME));
	CHECK(p.stepped & (1u << SERVED_REALTIME));
	uint64_t s = p.next.cur.start;
	int64_t boot = (int64_t)(line_value(&p.next, SERVED_BOOTTIME, s) - kernel_at(&k, SERVED_BOOTTIME, s));
	int64_t real = (int64_t)(line_value(&p.next, SERVED_REALTIME, s) - kernel_at(&k, SERVED_REALTIME, s));
	CHECK(boot < 1000 && boot > -1000);
	CHECK(real < 1000 && real > -1000);
	check_no_step_back(&old, &p.next);
}

/* Values a fallback handed out past the old line's end: every track of the published
 * line is at or above them (through the same mapping) from then on. */
static void floors_hold_the_next_line_up(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t late = old.cur.until + LIFE / 4;
	struct anchor a = anchor_of(&steady, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	struct line next = p.next;
	/* The kernel as a fallback read it, a little after the anchor. */
	uint64_t floor = kernel_at(&steady, SERVED_MONOTONIC, late + 3000);
	CHECK(line_apply_floor(&next, floor, 0));
	check_no_step_back(&old, &next);
	for (int k = 0; k < TRACKS; k++) {
		uint64_t handed_out = line_kernel_read_value(&old, k, floor);
		for (uint64_t t = old.cur.start; t < next.cur.until; t += 997)
			if (t >= late)
				CHECK(line_value(&next, k, t) >= handed_out);
		CHECK(line_value(&next, k, next.cur.start) >= handed_out);
	}
	/* A floor beyond the plan makes it obsolete. */
	next = p.next;
	CHECK(!line_apply_floor(&next, kernel_at(&steady, SERVED_MONOTONIC, next.expiry + LIFE), 0));
	/* A floor below the old line's end changes nothing. */
	next = p.next;
	CHECK(line_apply_floor(&next, 1, 0));
	CHECK_EQ_U64(next.cur.start, p.next.cur.start);
}

/* MONOTONIC_RAW slowed by a fifth alone (a hostile double: the kernel's own RAW moves
 * with MONOTONIC, within NTP's slew), while writers were late (the line lapsed and
 * readers past its end were handed every clock carried on from MONOTONIC's kernel). Such
 * a RAW can never come up to what was handed out for it within a segment: the line was
 * dropped at each publication, no line was published again, and RAW, carried on from
 * MONOTONIC, ran off without bound (make test beside two busy loops: 135 ms off in 1 s).
 * The track stops instead, held at what was handed out; the line publishes, and the other
 * clocks serve on. */
static void a_track_below_its_floor_stops_alone(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t late = old.cur.until + 8 * LIFE; /* 4 ms past the hard end */
	struct kernel k = steady;
	/* Above the lapsed line's end (it is not behind the line), 2 ms below what MONOTONIC
	 * carried it to. */
	k.offset[SERVED_MONOTONIC_RAW] -= (int64_t)((double)(late - old.cur.until) * RATE / 2);
	struct anchor a = anchor_of(&k, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.outcome == PLAN_STALE);
	uint64_t floor = kernel_at(&k, SERVED_MONOTONIC, late + 3000);
	uint64_t handed_out = line_kernel_read_value(&old, SERVED_MONOTONIC_RAW, floor);
	CHECK(handed_out > kernel_at(&k, SERVED_MONOTONIC_RAW, late + 3000) + 100000);
	struct line next = p.next;
	CHECK(line_apply_floor(&next, floor, 0));
	CHECK(next.active);
	CHECK(track_serves(&next, SERVED_MONOTONIC) && track_serves(&next, SERVED_BOOTTIME));
	CHECK(next.health[SERVED_MONOTONIC_RAW].stopped == TRACK_BEHIND);
	CHECK(next.stopped_now & (1u << SERVED_MONOTONIC_RAW));
	CHECK(track_hold(&next, SERVED_MONOTONIC_RAW, late) >= handed_out);
	CHECK(track_hold(&next, SERVED_MONOTONIC_RAW, UINT64_MAX) == handed_out);
	for (uint64_t t = late; t < next.cur.until; t += 997)
		CHECK(line_value(&next, SERVED_MONOTONIC, t) >= floor);
	CHECK(line_value(&next, SERVED_MONOTONIC_RAW, late) <= handed_out);
	/* A floor raised again at the next try of the publication raises the hold with it. */
	uint64_t higher = kernel_at(&k, SERVED_MONOTONIC, late + 5000);
	CHECK(line_apply_floor(&next, higher, 0));
	CHECK(track_hold(&next, SERVED_MONOTONIC_RAW, UINT64_MAX) == line_kernel_read_value(&old, SERVED_MONOTONIC_RAW, higher));
	/* MONOTONIC itself so far below its floor still makes the plan obsolete. */
	next = p.next;
	CHECK(!line_apply_floor(&next, kernel_at(&steady, SERVED_MONOTONIC, next.expiry + LIFE), 0));
}

/* A wall clock the kernel stepped (so no floor holds it: plan_floor_exempt) stands, until
 * the planned line meets MONOTONIC's floor, where the kernel's clock was when that floor was
 * handed out, as MONOTONIC stands at its floor: not at its anchor's value, as far behind
 * as the writer was late, nor above the kernel where another track's floor is met later
 * (that track's old error), nor, stepped back, at the time before the step. A writer took
 * its anchor, was preempted for 60 us while readers past the lapsed line's end raised the
 * floor; the kernel then ran 20 us ahead of the plan (a change of rate). Readers read the
 * counter after the publication, so from the floor's moment on. */
static void stepped_wall_clock_at_a_late_floor(int64_t step_ns, int64_t old_boottime_error_ns)
{
	struct line old;
	struct kernel before = steady;
	before.offset[SERVED_BOOTTIME] += old_boottime_error_ns; /* the old line's BOOTTIME error */
	first_line(&old, &before, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_REALTIME] += step_ns; /* settimeofday */
	uint64_t late = old.cur.until + LIFE / 4;
	struct anchor a = anchor_of(&k, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.stepped & (1u << SERVED_REALTIME));
	const uint64_t floor_at = late + 120000; /* 60 us of ticks after the anchor */
	const uint64_t lead_ns = 20000;
	uint64_t floor = kernel_at(&k, SERVED_MONOTONIC, floor_at) + lead_ns;
	struct line next = p.next;
	CHECK(line_apply_floor(&next, floor, plan_floor_exempt(&p)));
	CHECK(next.cur.start > floor_at); /* the plan meets the floor later: readers in between */
	uint64_t wall_then = kernel_at(&k, SERVED_REALTIME, floor_at) + lead_ns;
	uint64_t worst_below = 0, worst_above = 0, back = 0, last = 0;
	for (uint64_t t = floor_at; t < next.cur.start + LIFE / 8; t += 97) {
		uint64_t v = line_value(&next, SERVED_REALTIME, t);
		uint64_t wall_now = kernel_at(&k, SERVED_REALTIME, t) + lead_ns;
		if (t < next.cur.start) {
			worst_below = v < wall_then && wall_then - v > worst_below ? wall_then - v : worst_below;
			worst_above = v > wall_now && v - wall_now > worst_above ? v - wall_now : worst_above;
		}
		back += last > v;
		last = v;
	}
	printf("# REALTIME stepped %+lld ns, the old BOOTTIME %+lld ns off, before the line meets the floor: "
	       "%llu ns below the kernel's value at the floor, %llu ns above the kernel's, %llu steps back\n",
	       (long long)step_ns, (long long)old_boottime_error_ns, (unsigned long long)worst_below,
	       (unsigned long long)worst_above, (unsigned long long)back);
	CHECK(worst_below <= cfg.bound_ns);
	CHECK(worst_above == 0);
	CHECK(back == 0);
}

static void a_stepped_wall_clock_stands_with_the_floor(void)
{
	stepped_wall_clock_at_a_late_floor(1000000000, 0);
	stepped_wall_clock_at_a_late_floor(1000000000, 800);
	stepped_wall_clock_at_a_late_floor(-1000000000, 0);
	stepped_wall_clock_at_a_late_floor(-1000000000, 900);
}

static void a_time_namespace_is_noticed(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct anchor same = anchor_of(&steady, 10000000 + LIFE / 2, 0, 100);
	CHECK(line_agrees(&l, &same, cfg.watchdog_ns));
	struct kernel moved = steady;
	moved.offset[SERVED_BOOTTIME] += 1000000000000;
	struct anchor a = anchor_of(&moved, 10000000 + LIFE / 2, 0, 100);
	CHECK(!line_agrees(&l, &a, cfg.watchdog_ns));
	moved = steady;
	moved.offset[SERVED_MONOTONIC] -= 1000000000000;
	a = anchor_of(&moved, 10000000 + LIFE / 2, 0, 100);
	CHECK(!line_agrees(&l, &a, cfg.watchdog_ns));
}

/* The hot path serves prev as it is from prev_direct_from to cur.start: there it must be
 * line_value() exactly, and where a floor or a clamp applies the range must be empty. */
static void check_direct_range(const struct line *l)
{
	for (int k = 0; k < TRACKS; k++)
		for (uint64_t t = l->prev_direct_from; t < l->cur.start; t += 991)
			CHECK_EQ_U64(segment_value(&l->prev, k, t), line_value(l, k, t));
}

static void the_hot_path_serves_prev_only_where_it_is_the_line(void)
{
	struct line_forms forms;
	struct line old;
	first_line(&old, &steady, 10000000);
	line_seal(&old, &forms);
	CHECK_EQ_U64(old.prev_direct_from, old.cur.start); /* a first line has no prev */

	/* A continuation: prev serves the life before the new segment starts. */
	struct anchor a = anchor_of(&steady, old.expiry + 100, 30, 100);
	const struct plan cont = plan_from(&old, &a, old.expiry);
	struct line next = cont.next;
	line_seal(&next, &forms);
	CHECK_EQ_U64(next.prev_direct_from, next.prev.start);
	CHECK(next.cur.start > old.expiry);
	check_direct_range(&next);

	/* A floor that binds in prev's range: nothing served directly. */
	uint64_t late = old.cur.until + LIFE / 4;
	a = anchor_of(&steady, late + 100, 0, 100);
	struct plan p = plan_from(&old, &a, late);
	next = p.next;
	CHECK(line_apply_floor(&next, kernel_at(&steady, SERVED_MONOTONIC, late + 3000), 0));
	line_seal(&next, &forms);
	CHECK_EQ_U64(next.prev_direct_from, next.cur.start);
	check_direct_range(&next);

	/* A floor that binds on one track only, the rest of the line unchanged. */
	next = cont.next;
	next.prev_floor[SERVED_BOOTTIME] = segment_value(&next.prev, SERVED_BOOTTIME, next.prev.start) + 1;
	line_seal(&next, &forms);
	CHECK_EQ_U64(next.prev_direct_from, next.cur.start);

	/* An inactive line sends every read to the slow path. */
	next = p.next;
	next.active = 0;
	line_seal(&next, &forms);
	CHECK_EQ_U64(next.prev_direct_from, next.cur.start);
}


/* ---- readings checked, tracks stopped ---- */

static struct clock_reading reading(uint64_t before, uint64_t after, uint64_t ns)
{
	return (struct clock_reading){.before = before, .after = after, .ns = ns, .ok = true};
}

/* Readings of a clock at 1 ns per tick: each value is its bracket's middle, so all agree. */
static const struct reading_limits limits = {.ns_per_tick = 1.0, .widest_ticks = 2000, .farthest_ticks = 50000};

static void an_anchor_is_the_median_of_good_readings(void)
{
	struct anchor a = {.counter = 1000};
	struct clock_reading r[3] = {reading(1000, 1040, 5020), reading(1100, 1130, 5115), reading(1200, 1250, 5225)};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, r, 3, &limits));
	CHECK(a.valid == 1u << SERVED_MONOTONIC);
	/* Each brought to the first one's middle, counter 1020. */
	CHECK_EQ_U64(a.at[SERVED_MONOTONIC], 1020);
	CHECK_EQ_U64(a.ns[SERVED_MONOTONIC], 5020);
	CHECK_EQ_U64(a.width_ns[SERVED_MONOTONIC], 30);
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0);

	/* One reading 20 us out of order: neither the value nor the spread moves. */
	r[1].ns -= 20000;
	a = (struct anchor){.counter = 1000};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, r, 3, &limits));
	CHECK_EQ_U64(a.ns[SERVED_MONOTONIC], 5020);
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0);

	/* ...nor one 20 us behind, on values far from 0 (above, the old reading's value
	 * wrapped: it was the highest). */
	struct clock_reading behind[3] = {reading(1000, 1040, 1000005020), reading(1100, 1130, 1000005115 - 20000),
					  reading(1200, 1250, 1000005225)};
	a = (struct anchor){.counter = 1000};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, behind, 3, &limits));
	CHECK_EQ_U64(a.ns[SERVED_MONOTONIC], 1000005020);
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0);

	/* Two of three readings apart by 1.2 us: the spread says so. (Two of five out of
	 * order would not: see below.) */
	r[1].ns += 20000;
	r[0].ns += 600;
	r[2].ns -= 600;
	a = (struct anchor){.counter = 1000};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, r, 3, &limits));
	CHECK(a.spread_ns[SERVED_MONOTONIC] >= 500 && a.spread_ns[SERVED_MONOTONIC] <= 600);

	/* Failed calls, counter reads out of order, brackets too wide: no reading, no track.
	 * The failed call's value (what was on the stack) is never looked at. */
	struct clock_reading bad[3] = {{.before = 1000, .after = 1040, .ns = 7, .ok = false},
				       reading(1200, 1100, 5150), reading(1300, 3400, 5350)};
	a = (struct anchor){.counter = 1000};
	CHECK(!anchor_track_from(&a, SERVED_REALTIME, bad, 3, &limits));
	CHECK(a.valid == 0);
	/* ...and one good reading among them is the track. */
	bad[0].ok = true;
	bad[0].ns = 5020;
	CHECK(anchor_track_from(&a, SERVED_REALTIME, bad, 3, &limits));
	CHECK_EQ_U64(a.ns[SERVED_REALTIME], 5020);
	CHECK(a.lone == 1u << SERVED_REALTIME); /* ...standing alone, and marked so */

	/* Five readings, two of them 20 us old: value and spread hold. */
	struct clock_reading five[5] = {reading(1000, 1040, 5020), reading(1100, 1130, 5115 - 20000),
					reading(1200, 1250, 5225), reading(1300, 1330, 5315 - 20000),
					reading(1400, 1440, 5420)};
	a = (struct anchor){0};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, five, 5, &limits));
	CHECK_EQ_U64(a.ns[SERVED_MONOTONIC], 5020);
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0);

	/* A reading taken 60 us after the anchor (the thread preempted between readings) is
	 * not brought back that far: the slope's error over such a way would look like
	 * noise. */
	struct clock_reading late[3] = {reading(1000, 1040, 5020), reading(1100, 1130, 5115),
					reading(61200, 61250, 65225 + 300)};
	a = (struct anchor){.counter = 1000};
	CHECK(anchor_track_from(&a, SERVED_MONOTONIC, late, 3, &limits));
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0); /* the two near ones only */
	CHECK_EQ_U64(a.ns[SERVED_MONOTONIC], 5020);
	CHECK(a.lone == 0);
}

static void first_line_starts_without_unread_or_noisy_clocks(void)
{
	struct anchor a = anchor_of(&steady, 10000000, 0, 50);
	a.valid &= ~(1u << SERVED_REALTIME);
	a.spread_ns[SERVED_BOOTTIME] = 600;
	struct line l;
	CHECK(segment_first(&l, &a, &cfg));
	CHECK(track_serves(&l, SERVED_MONOTONIC) && track_serves(&l, SERVED_MONOTONIC_RAW));
	CHECK(l.health[SERVED_REALTIME].stopped == TRACK_UNREADABLE);
	CHECK(l.health[SERVED_BOOTTIME].stopped == TRACK_NOISY);
	struct line_forms forms;
	line_seal(&l, &forms);
	CHECK_EQ_U64(forms.cur[SERVED_REALTIME].span, 0);
	CHECK(forms.cur[SERVED_MONOTONIC].span > 0);
	/* Without MONOTONIC there is no line at all. */
	a.valid &= ~(1u << SERVED_MONOTONIC);
	CHECK(!segment_first(&l, &a, &cfg));
	a = anchor_of(&steady, 10000000, 0, 50);
	a.spread_ns[SERVED_MONOTONIC] = 251;
	CHECK(!segment_first(&l, &a, &cfg));
}

/* A clock whose readings fail at one re-synchronization continues uncorrected; at the
 * second in a row it stops, held at the most it served; the others serve on. */
static void an_unread_clock_continues_once_then_stops(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
	a.valid &= ~(1u << SERVED_REALTIME);
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(track_serves(&p.next, SERVED_REALTIME));
	CHECK_EQ_U64(p.next.health[SERVED_REALTIME].misses, 1);
	/* Uncorrected, but continuous and at the measured rate. */
	CHECK_EQ_U64(segment_value(&p.next.cur, SERVED_REALTIME, p.next.cur.start),
		     segment_value(&l.cur, SERVED_REALTIME, l.cur.until));
	struct line second = p.next;
	a = anchor_of(&steady, second.expiry + 100, 0, 100);
	a.valid &= ~(1u << SERVED_REALTIME);
	p = plan_from(&second, &a, second.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.next.health[SERVED_REALTIME].stopped == TRACK_UNREADABLE);
	CHECK(p.next.stopped_now == 1u << SERVED_REALTIME);
	/* Held at what it served up to each moment, then flat: never more than it served. */
	uint64_t end = segment_value(&second.cur, SERVED_REALTIME, second.cur.until);
	for (uint64_t t = second.cur.start; t < p.next.cur.until + LIFE; t += LIFE / 7)
		CHECK_EQ_U64(track_hold(&p.next, SERVED_REALTIME, t), t < second.cur.until ? line_value(&second, SERVED_REALTIME, t) : end);
	CHECK(track_serves(&p.next, SERVED_MONOTONIC) && track_serves(&p.next, SERVED_BOOTTIME));
	/* A good reading in between starts the count again. */
	a = anchor_of(&steady, second.expiry + 100, 0, 100);
	struct line third = plan_from(&second, &a, second.expiry).next;
	CHECK_EQ_U64(third.health[SERVED_REALTIME].misses, 0);
	/* Stopped stays stopped: the next plan carries it, and does not stop it again. */
	struct line stopped = p.next;
	a = anchor_of(&steady, stopped.expiry + 100, 0, 100);
	p = plan_from(&stopped, &a, stopped.expiry);
	CHECK(p.next.health[SERVED_REALTIME].stopped == TRACK_UNREADABLE);
	CHECK(p.next.stopped_now == 0);
	CHECK_EQ_U64(track_hold(&p.next, SERVED_REALTIME, p.next.cur.until), end);
	struct line_forms forms;
	line_seal(&p.next, &forms);
	CHECK(p.next.active);
	CHECK_EQ_U64(forms.cur[SERVED_REALTIME].span, 0);
	CHECK_EQ_U64(forms.prev[SERVED_REALTIME].span, 0);
	CHECK(forms.cur[SERVED_BOOTTIME].span > 0);
}

/* Readings whose median moves with the noise: a mean spread of 40 ns (noise of about
 * +/-200 ns) serves on, averaging more; 120 ns (+/-650 ns) stops the clock within a few
 * dozen re-synchronizations; on MONOTONIC, the whole line. */
static void a_noisy_clock_stops(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	for (int i = 0; i < 200; i++) {
		struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC_RAW] = 40;
		l = plan_from(&l, &a, l.expiry).next;
	}
	CHECK(track_serves(&l, SERVED_MONOTONIC_RAW));
	CHECK(track_noise_ns(&l.health[SERVED_MONOTONIC_RAW]) > 35 && track_noise_ns(&l.health[SERVED_MONOTONIC_RAW]) <= 40);
	struct line quiet = l;
	int rounds = 0;
	struct plan p;
	do {
		struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC_RAW] = 120;
		p = plan_from(&l, &a, l.expiry);
		l = p.next;
	} while (track_serves(&l, SERVED_MONOTONIC_RAW) && ++rounds < 200);
	printf("# a mean spread of 120 ns stopped the clock after %d re-synchronizations\n", rounds + 1);
	CHECK(rounds < 64);
	/* MONOTONIC too noisy stops the whole line. */
	l = quiet;
	for (rounds = 0; l.active && rounds < 200; rounds++) {
		struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC] = 200;
		p = plan_from(&l, &a, l.expiry);
		l = p.next;
	}
	CHECK(p.outcome == PLAN_STOP);
	CHECK(!l.active);
	for (int k = 0; k < TRACKS; k++)
		CHECK(l.health[k].stopped == TRACK_NOISY);
}

/* The kernel 2 us behind on one clock (frozen, stepped back): that clock stops, held; a
 * wall clock follows it back instead; MONOTONIC 2 us ahead steps forward. */
static void a_clock_proven_off_by_more_than_the_bound(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] -= 200000; /* beyond what a change of rate explains (31 us) */
	k.offset[SERVED_REALTIME] -= 2000;
	struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_BEHIND);
	CHECK(!p.next.health[SERVED_BOOTTIME].went_back_ns); /* its own readings ran on: frozen or slowed */
	CHECK(track_serves(&p.next, SERVED_REALTIME));
	CHECK(p.stepped & (1u << SERVED_REALTIME));
	int64_t real = (int64_t)(line_value(&p.next, SERVED_REALTIME, p.next.cur.start) -
				 kernel_at(&k, SERVED_REALTIME, p.next.cur.start));
	CHECK(real < 200 && real > -200);
	/* 2 us behind after a life: what a change of rate explains, and what a jump back
	 * would show alike. Slewed down to the kernel, never back, at the rate it had: the
	 * next interval tells. A kernel that runs on slow confirms it: its rate measured
	 * anew, over that interval. */
	struct line m = l;
	for (int i = 0; i < 6; i++) {
		a = anchor_of(&steady, m.expiry + 100, 0, 100);
		m = plan_from(&m, &a, m.expiry).next;
	}
	uint64_t from = m.health[SERVED_MONOTONIC].last_at;
	k = steady;
	double slow = 2000.0 / ((double)(m.expiry + 100 - from) * RATE);
	k.rate = RATE * (1 - slow);
	for (int c = 0; c < TRACKS; c++)
		k.offset[c] += (int64_t)((double)from * RATE * slow);
	a = anchor_of(&k, m.expiry + 100, 0, 100);
	p = plan_from(&m, &a, m.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(track_serves(&p.next, SERVED_BOOTTIME) && track_serves(&p.next, SERVED_MONOTONIC));
	CHECK(p.rate_changed == 0 && p.rate_pending == 3);
	CHECK(line_rate(&p.next, FAMILY_MONOTONIC) == line_rate(&m, FAMILY_MONOTONIC));
	check_no_step_back(&m, &p.next);
	/* ...where the line's rate was not measured since its start (a baseline), at once. */
	struct kernel early = steady;
	early.rate = RATE * (1 - slow);
	for (int c = 0; c < TRACKS; c++)
		early.offset[c] += (int64_t)(10000000 * RATE * slow);
	struct anchor b = anchor_of(&early, l.expiry + 100, 0, 100);
	struct plan q = plan_from(&l, &b, l.expiry);
	CHECK(q.rate_changed == 3 && q.rate_pending == 0);
	m = p.next;
	a = anchor_of(&k, m.expiry + 100, 0, 100);
	p = plan_from(&m, &a, m.expiry);
	CHECK(p.rate_changed == 3 && p.rate_pending == 0);
	CHECK(line_rate(&p.next, FAMILY_MONOTONIC) < RATE * (1 - slow * 0.999));
	CHECK(line_rate(&p.next, FAMILY_MONOTONIC) > RATE * (1 - slow * 1.001));
	check_no_step_back(&m, &p.next);
	/* Within the bound, or not proven beyond it by a wide reading: slewed, not stopped. */
	k = steady;
	k.offset[SERVED_BOOTTIME] -= 900;
	a = anchor_of(&k, l.expiry + 100, 0, 100);
	p = plan_from(&l, &a, l.expiry);
	CHECK(track_serves(&p.next, SERVED_BOOTTIME));
	k.offset[SERVED_BOOTTIME] -= 1000;
	a = anchor_of(&k, l.expiry + 100, 0, 1900);
	p = plan_from(&l, &a, l.expiry);
	CHECK(track_serves(&p.next, SERVED_BOOTTIME));
	/* MONOTONIC 2 us behind the kernel: a step forward, not a slew of 32 us. */
	k = steady;
	for (int c = 0; c < TRACKS; c++)
		k.offset[c] += 2000;
	a = anchor_of(&k, l.expiry + 100, 0, 100);
	p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_REANCHOR);
	check_no_step_back(&l, &p.next);
	int64_t mono = (int64_t)(line_value(&p.next, SERVED_MONOTONIC, p.next.cur.start) -
				 kernel_at(&k, SERVED_MONOTONIC, p.next.cur.start));
	CHECK(mono < 200 && mono > -200);
}

/* A reading that stands alone (its fellows failed, or came after a preemption) cannot be
 * told from one out of order: 2 us off, it neither stops nor steps a clock, it is counted
 * as no reading (the clock runs on blind once, and stops as unreadable if the next
 * anchor is no better); within the bound it corrects as any reading does. */
static void a_lone_reading_proves_no_fault(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] -= 2000;
	k.offset[SERVED_MONOTONIC] += 2000;
	struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
	a.lone = (1u << SERVED_BOOTTIME) | (1u << SERVED_MONOTONIC);
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.stepped == 0);
	for (int c = 0; c < TRACKS; c++)
		CHECK(track_serves(&p.next, c));
	CHECK(p.next.health[SERVED_BOOTTIME].misses == 1);
	CHECK(p.next.health[SERVED_MONOTONIC].misses == 1);
	/* Twice in a row: unreadable, not behind. */
	struct line once = p.next;
	a = anchor_of(&k, once.expiry + 100, 0, 100);
	a.lone = 1u << SERVED_BOOTTIME;
	p = plan_from(&once, &a, once.expiry);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_UNREADABLE);
	/* Within the bound: a correction like any other. */
	k = steady;
	k.offset[SERVED_BOOTTIME] -= 300;
	a = anchor_of(&k, l.expiry + 100, 0, 100);
	a.lone = 1u << SERVED_BOOTTIME;
	p = plan_from(&l, &a, l.expiry);
	CHECK(track_serves(&p.next, SERVED_BOOTTIME));
	CHECK(p.next.health[SERVED_BOOTTIME].misses == 0);
}

/* Two readings of three out of order make the median: a fault that not every reading
 * shows is none (the clock runs on blind, once; unreadable if the next anchor is no
 * better), and a disagreement within the bound is followed only in part. */
static void a_fault_is_what_every_reading_shows(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] -= 200000;
	k.offset[SERVED_REALTIME] -= 200000;
	k.offset[SERVED_MONOTONIC_RAW] += 200000;
	struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
	a.above_ns[SERVED_BOOTTIME] = 200000;     /* the highest reading agrees with the line */
	a.above_ns[SERVED_REALTIME] = 200000;
	a.below_ns[SERVED_MONOTONIC_RAW] = 200000;
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.stepped == 0);
	for (int c = 0; c < TRACKS; c++)
		CHECK(track_serves(&p.next, c));
	CHECK(p.next.health[SERVED_BOOTTIME].misses == 1);
	CHECK(p.next.health[SERVED_REALTIME].misses == 1);
	CHECK(p.next.health[SERVED_MONOTONIC_RAW].misses == 1);
	/* Again at the next anchor: unreadable. */
	struct line once = p.next;
	a = anchor_of(&k, once.expiry + 100, 0, 100);
	a.above_ns[SERVED_BOOTTIME] = 200000;
	p = plan_from(&once, &a, once.expiry);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_UNREADABLE);
	/* Every reading shows it: stopped as behind (a_clock_proven_off_by_more_than_the_bound). */
	a = anchor_of(&k, l.expiry + 100, 0, 100);
	a.above_ns[SERVED_BOOTTIME] = 300;
	p = plan_from(&l, &a, l.expiry);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_BEHIND);
	/* 900 ns off, one reading agreeing with the line: corrected only in part by the new
	 * segment's end, where a quiet anchor's error is removed. */
	k = steady;
	k.offset[SERVED_BOOTTIME] -= 900;
	a = anchor_of(&k, l.expiry + 100, 0, 100);
	p = plan_from(&l, &a, l.expiry);
	uint64_t end = p.next.cur.until;
	int64_t quiet = (int64_t)(line_value(&p.next, SERVED_BOOTTIME, end) - kernel_at(&k, SERVED_BOOTTIME, end));
	a.above_ns[SERVED_BOOTTIME] = 900;
	p = plan_from(&l, &a, l.expiry);
	int64_t split = (int64_t)(line_value(&p.next, SERVED_BOOTTIME, end) - kernel_at(&k, SERVED_BOOTTIME, end));
	printf("# 900 ns off at the anchor, left at the segment's end: %lld ns (quiet), %lld ns (readings split)\n",
	       (long long)quiet, (long long)split);
	CHECK(quiet < 200 && quiet > -200);
	CHECK(split > 300 && split < 900);
}

/* What a kernel read handed out past the old line's end, before a track stopped, is in
 * its hold. */
static void holds_take_in_the_floor(void)
{
	struct line old;
	first_line(&old, &steady, 10000000);
	uint64_t late = old.cur.until + LIFE / 4;
	struct anchor a = anchor_of(&steady, late + 100, 0, 100);
	old.health[SERVED_BOOTTIME].noise_x32 = 32 * 100; /* noisy for a while */
	a.spread_ns[SERVED_BOOTTIME] = 900;
	struct plan p = plan_from(&old, &a, late);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_NOISY);
	uint64_t floor = kernel_at(&steady, SERVED_MONOTONIC, late + 3000);
	struct line next = p.next;
	CHECK(line_apply_floor(&next, floor, 0));
	CHECK_EQ_U64(next.health[SERVED_BOOTTIME].hold_ns, line_kernel_read_value(&old, SERVED_BOOTTIME, floor));
	CHECK_EQ_U64(track_hold(&next, SERVED_BOOTTIME, late), line_kernel_read_value(&old, SERVED_BOOTTIME, floor));
	/* The whole line stopped: the same, from its own segment. */
	struct line stopped = old;
	line_stop(&stopped, TRACK_UNCOVERED);
	CHECK(line_apply_floor(&stopped, floor, 0));
	for (int k = 0; k < TRACKS; k++)
		CHECK_EQ_U64(stopped.health[k].hold_ns, line_kernel_read_value(&old, k, floor));
}

/* A rate reset on an anchor without MONOTONIC_RAW: RAW's rate is measured from the next
 * anchor that reads it, never against a reading it did not have. */
static void a_rate_is_measured_only_between_readings(void)
{
	struct line l;
	struct anchor a = anchor_of(&steady, 10000000, 0, 50);
	a.valid &= ~(1u << SERVED_MONOTONIC_RAW);
	a.ns[SERVED_MONOTONIC_RAW] = 0; /* what a failed call might leave: never used */
	CHECK(segment_first(&l, &a, &cfg));
	CHECK_EQ_U64(l.rate.ref_counter[FAMILY_RAW], 0);
	for (int i = 0; i < 30; i++) {
		struct anchor b = anchor_of(&steady, l.expiry + 100, 0, 100);
		l = plan_from(&l, &b, l.expiry).next;
	}
	CHECK(line_rate(&l, FAMILY_RAW) > RATE * (1 - 1e-6) && line_rate(&l, FAMILY_RAW) < RATE * (1 + 1e-6));
}

/* A jump the kernel made while nobody re-synchronized (the line lapsed) is not a rate:
 * measured over a baseline, 20 us in 2 ms would be 10,000 ppm. */
static void a_jump_over_a_lapse_is_not_a_rate(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	for (int i = 0; i < 12; i++) {
		struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
		l = plan_from(&l, &a, l.expiry).next;
	}
	double before = line_rate(&l, FAMILY_MONOTONIC);
	struct kernel jumped = steady;
	for (int k = 0; k < TRACKS; k++)
		jumped.offset[k] += 20000;
	uint64_t late = l.cur.until + LIFE;
	struct anchor a = anchor_of(&jumped, late, 0, 100);
	struct plan p = plan_from(&l, &a, late);
	CHECK(p.outcome == PLAN_STALE);
	CHECK(line_rate(&p.next, FAMILY_MONOTONIC) == before);
	/* ...and the baseline starts again after it: the next measurements are the rate. */
	l = p.next;
	for (int i = 0; i < 12; i++) {
		a = anchor_of(&jumped, l.expiry + 100, 0, 100);
		l = plan_from(&l, &a, l.expiry).next;
	}
	double after = line_rate(&l, FAMILY_MONOTONIC);
	CHECK(after > RATE * (1 - 1e-6) && after < RATE * (1 + 1e-6));
}

/* The tunables from the bound: what each protects holds for the values derived. */
static void plan_config_is_derived(void)
{
	struct plan_config c;
	struct plan_bounds b = {.bound_ns = 1000, .resync_ms = 1000, .ns_per_tick = RATE, .serves_realtime = true};
	CHECK(plan_config_derive(&c, &b));
	CHECK_EQ_U64(c.life_ticks, cfg.life_ticks);
	CHECK_EQ_U64(c.overlap_ticks, cfg.overlap_ticks);
	CHECK_EQ_U64(c.retry_first_ticks, cfg.retry_first_ticks);
	CHECK_EQ_U64(c.retry_most_ticks, cfg.retry_most_ticks);
	CHECK(c.rate_change_most == cfg.rate_change_most && c.max_rate_deviation == cfg.max_rate_deviation);
	CHECK(c.narrow_ns == cfg.narrow_ns && c.watchdog_ns == cfg.watchdog_ns);
	CHECK_EQ_U64(c.rate_confirm_ns, cfg.rate_confirm_ns);
	CHECK(c.quiet_anchors == cfg.quiet_anchors && c.full_readings == cfg.full_readings &&
	      c.resync_readings == cfg.resync_readings);
	/* A narrow reading is sought where a kernel read can be one: not measured, or cheaper
	 * than narrow_ns; not where one read costs more (a system call on a microVM). */
	CHECK(c.seek_narrow);
	b.kernel_read_ns = 26;
	CHECK(plan_config_derive(&c, &b) && c.seek_narrow);
	b.kernel_read_ns = c.narrow_ns;
	CHECK(plan_config_derive(&c, &b) && c.seek_narrow);
	b.kernel_read_ns = 1100;
	CHECK(plan_config_derive(&c, &b) && !c.seek_narrow);
	b.kernel_read_ns = 0;
	/* A segment is served for a life and its overlap: at the rate error allowed (NTP's
	 * slew and the estimate's own, max_rate_deviation each) it stays within the bound. */
	for (uint64_t bound = 100; bound <= 1000000; bound *= 10) {
		b.bound_ns = bound;
		CHECK(plan_config_derive(&c, &b));
		double served_ns = (double)(c.life_ticks + c.overlap_ticks) * RATE;
		CHECK(served_ns * c.max_rate_deviation <= (double)bound);
		CHECK(c.overlap_ticks >= 1 && c.overlap_ticks <= c.life_ticks / 8 + 1);
		/* A lead a change of rate left, up to what is confirmed before it is adopted,
		 * slewed away by the next anchor, overshoots past one as late as the overlap
		 * by at most the bound. */
		CHECK((double)c.rate_confirm_ns * (double)c.overlap_ticks <= (double)bound * (double)c.life_ticks);
		CHECK((double)c.life_ticks * RATE <= 4e6); /* REALTIME served: a step shows within 4 ms */
		/* The writer side's limits, each against what it protects. An anchor's widest
		 * reading is twice the bound; one brought from its farthest, at the largest rate
		 * error allowed, is off by a sixteenth of the bound. */
		CHECK_EQ_U64(c.anchor_widest_ns, 2 * bound);
		CHECK(c.anchor_farthest_ns * c.max_rate_deviation <= (double)bound / 16 * (1 + 1e-9));
		CHECK(c.anchor_farthest_ns * c.max_rate_deviation >= (double)bound / 16 * (1 - 1e-9));
		/* A kernel read moves the floor by a step of at most a sixteenth of the bound. */
		CHECK(c.kernel_read_step_ns * 16 <= bound && c.kernel_read_step_ns > 0);
		/* The readings fit the stack's room; a routine re-synchronization's median holds
		 * against one out of order, a full anchor's against three. */
		CHECK(c.readings_most <= ANCHOR_READINGS_ROOM);
		CHECK(c.resync_readings >= 3 && c.resync_readings % 2 == 1);
		CHECK(c.full_readings >= 7 && c.full_readings <= c.readings_most);
		CHECK(c.anchor_retakes >= 1 && c.write_attempts >= 1 && c.publish_attempts >= 1);
		CHECK(c.quiet_anchors >= 2);
		/* A fork child holds a stopped clock across at most a second of its kernel's
		 * going back: any more and the hold stands still for longer than a retry's cap. */
		CHECK_EQ_U64(c.hold_across_fork_ns, 1000000000);
	}
	/* The back-off doubles from its first value up to its cap, and never beyond. */
	CHECK_EQ_U64(plan_retry_after(&cfg, 0), cfg.retry_first_ticks);
	CHECK_EQ_U64(plan_retry_after(&cfg, 1), 2 * cfg.retry_first_ticks);
	CHECK_EQ_U64(plan_retry_after(&cfg, 1000), cfg.retry_most_ticks);
	b.ns_per_tick = 1e9; /* a life of no tick */
	CHECK(!plan_config_derive(&c, &b));
}

/* Tries to serve again with a line stopped whole, each at its retry time, against kernel
 * k; returns the outcome of the last, *tries how many it took (at most `most`). */
static struct plan resume_tries(struct line *l, const struct kernel *k, int most, int *tries)
{
	struct plan p = {.outcome = PLAN_STILL};
	for (*tries = 0; *tries < most && p.outcome == PLAN_STILL; ++*tries) {
		uint64_t t = l->health[SERVED_MONOTONIC].retry_at;
		struct anchor a = anchor_of(k, t + 100, 0, 100);
		struct plan_inputs in = {.old = l, .anchor = &a, .now = t, .cfg = &cfg};
		segment_resume(&in, &p);
		*l = p.next;
	}
	return p;
}

/* A kernel clock stopped as behind (frozen for a while) that runs on at a steady rate,
 * another than before (a migration), serves again at that rate after three tries, never
 * below what it handed out; one whose rate keeps changing does not, its back-off
 * doubling. */
static void a_stopped_line_serves_again_at_a_steady_rate(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	for (int c = 0; c < TRACKS; c++)
		k.offset[c] -= 400000; /* 400 us behind: frozen */
	struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.outcome == PLAN_STOP && !p.next.active);
	CHECK(line_may_resume(&p.next));
	CHECK_EQ_U64(p.next.health[SERVED_MONOTONIC].retry_at, l.expiry + cfg.retry_first_ticks);
	struct line stopped = p.next;
	uint64_t hold = track_hold(&stopped, SERVED_MONOTONIC, UINT64_MAX);
	/* From here at 4.8 % fast, starting 400 us behind. */
	struct kernel migrated = k;
	migrated.rate = RATE * 1.048;
	for (int c = 0; c < TRACKS; c++)
		migrated.offset[c] -= (int64_t)((double)(l.expiry + 100) * RATE * 0.048);
	int tries;
	struct line m = stopped;
	p = resume_tries(&m, &migrated, 10, &tries);
	printf("# stopped as behind, then 4.8 %% fast: served again after %d tries\n", tries);
	CHECK(p.outcome == PLAN_RESUME && tries == 2);
	CHECK(p.next.active && track_serves(&p.next, SERVED_MONOTONIC));
	CHECK(p.resumed == (1u << TRACKS) - 1);
	double r = line_rate(&p.next, FAMILY_MONOTONIC);
	CHECK(r > RATE * 1.0479 && r < RATE * 1.0481);
	uint64_t start = p.next.cur.start;
	CHECK(line_value(&p.next, SERVED_MONOTONIC, start) >= hold);
	CHECK(line_value(&p.next, SERVED_MONOTONIC, start - 1000) >= hold); /* before it: no lower */
	int64_t e = (int64_t)(line_value(&p.next, SERVED_MONOTONIC, start + LIFE) -
			      kernel_at(&migrated, SERVED_MONOTONIC, start + LIFE));
	CHECK(e >= 0 && e < 200);
	/* ...and planned on from there like any line. */
	a = anchor_of(&migrated, p.next.expiry + 100, 0, 100);
	struct plan q = plan_from(&p.next, &a, p.next.expiry);
	CHECK(q.outcome == PLAN_CONTINUE);
	/* A rate that changes between tries: stays stopped, each back-off twice the last. */
	struct kernel wobbly = migrated;
	m = stopped;
	uint64_t last_gap = 0;
	for (int i = 0; i < 6; i++) {
		wobbly.rate = RATE * (i % 2 ? 1.01 : 0.99);
		uint64_t t = m.health[SERVED_MONOTONIC].retry_at;
		a = anchor_of(&wobbly, t + 100, 0, 100);
		struct plan_inputs in = {.old = &m, .anchor = &a, .now = t, .cfg = &cfg};
		segment_resume(&in, &p);
		CHECK(p.outcome == PLAN_STILL && !p.next.active);
		uint64_t gap = p.next.health[SERVED_MONOTONIC].retry_at - t;
		CHECK(gap > last_gap || gap == cfg.retry_most_ticks);
		last_gap = gap;
		CHECK_EQ_U64(track_hold(&p.next, SERVED_MONOTONIC, UINT64_MAX), hold);
		m = p.next;
	}
	/* Not before its kernel is past what it handed out: a kernel a second behind. */
	struct kernel far = k;
	for (int c = 0; c < TRACKS; c++)
		far.offset[c] -= 1000000000;
	m = stopped;
	p = resume_tries(&m, &far, 3, &tries);
	CHECK(p.outcome == PLAN_STILL);
}

/* The hypervisor reports a migration mid-life: the line stops, every track held flat at
 * its value where the disruption was seen (not along the old host's rate to its end), its
 * first try after the shortest back-off whatever tries came before, and it serves again
 * at the new host's rate, never below the hold. */
static void a_disruption_holds_flat_and_measures_again(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	l.health[SERVED_MONOTONIC].retries = 5; /* earlier stops' back-off: not this cause's */
	uint64_t now = l.cur.start + LIFE / 2;
	struct kernel moved = steady;
	moved.rate = RATE * 0.95; /* 5 % slower from here */
	for (int c = 0; c < TRACKS; c++)
		moved.offset[c] += (int64_t)((double)now * RATE * 0.05);
	struct anchor a = anchor_of(&moved, now + 100, 0, 100);
	struct plan_inputs in = {.old = &l, .anchor = &a, .now = now, .cfg = &cfg};
	struct plan p;
	segment_stop_disrupted(&in, &p);
	CHECK(p.outcome == PLAN_STOP && !p.next.active && line_may_resume(&p.next));
	CHECK(p.next.health[SERVED_MONOTONIC].stopped == TRACK_DISRUPTED);
	CHECK_EQ_U64(p.next.health[SERVED_MONOTONIC].retry_at, now + cfg.retry_first_ticks);
	for (int k = 0; k < TRACKS; k++) {
		uint64_t at_now = line_value(&l, k, now);
		CHECK_EQ_U64(track_hold(&p.next, k, now), at_now);
		CHECK_EQ_U64(track_hold(&p.next, k, UINT64_MAX), at_now); /* flat: no lead that grows */
		CHECK(track_hold(&p.next, k, now - LIFE / 4) >= line_value(&l, k, now - LIFE / 4));
	}
	int tries;
	struct line m = p.next;
	struct plan q = resume_tries(&m, &moved, 10, &tries);
	printf("# disrupted, 5 %% slower: served again after %d tries\n", tries);
	CHECK(q.outcome == PLAN_RESUME && tries == 2);
	double r = line_rate(&q.next, FAMILY_MONOTONIC);
	CHECK(r > RATE * 0.9499 && r < RATE * 0.9501);
	CHECK(line_value(&q.next, SERVED_MONOTONIC, q.next.cur.start) >= track_hold(&p.next, SERVED_MONOTONIC, UINT64_MAX));
}

/* A line stopped as too noisy: one lucky quiet anchor does not bring it back, a few
 * quiet tries in a row do; noisy tries keep it stopped. */
static void a_noisy_line_needs_quiet_tries(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct plan p;
	for (int i = 0; i < 200 && l.active; i++) {
		struct anchor a = anchor_of(&steady, l.expiry + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC] = 400;
		p = plan_from(&l, &a, l.expiry);
		l = p.next;
	}
	CHECK(!l.active && l.health[SERVED_MONOTONIC].stopped == TRACK_NOISY);
	int quiet_tries = 0;
	for (int i = 0; i < 12; i++) {
		uint64_t t = l.health[SERVED_MONOTONIC].retry_at;
		struct anchor a = anchor_of(&steady, t + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC] = i < 4 ? 400 : 0; /* noisy four times, then quiet */
		struct plan_inputs in = {.old = &l, .anchor = &a, .now = t, .cfg = &cfg};
		segment_resume(&in, &p);
		if (i < 4)
			CHECK(p.outcome == PLAN_STILL);
		else
			quiet_tries++;
		l = p.next;
		if (p.outcome == PLAN_RESUME)
			break;
	}
	printf("# stopped as noisy: served again after %d quiet tries\n", quiet_tries);
	CHECK(p.outcome == PLAN_RESUME && quiet_tries >= 3);
}

/* An anchor of n readings of every clock, each bracketed by `width` ns of counter and
 * moved by a uniform amount in [-jitter, jitter]: as take_anchor takes them. */
static struct anchor jittered_anchor(const struct kernel *kern, uint64_t t, int n, int64_t jitter, uint64_t width,
				     uint64_t *rng)
{
	const struct reading_limits lim = {.ns_per_tick = RATE, .widest_ticks = 4000, .farthest_ticks = 200000};
	struct anchor a = {0};
	uint64_t ticks = (uint64_t)((double)width / RATE);
	for (int k = 0; k < TRACKS; k++) {
		struct clock_reading r[ANCHOR_READINGS_ROOM];
		for (int i = 0; i < n; i++) {
			uint64_t before = t + (uint64_t)(k * n + i) * (ticks + 20);
			int64_t moved = (int64_t)(xorshift64(rng) % (uint64_t)(2 * jitter + 1)) - jitter;
			r[i] = (struct clock_reading){.before = before, .after = before + ticks, .ok = true};
			r[i].ns = (uint64_t)((int64_t)kernel_at(kern, k, before + ticks / 2) + moved);
		}
		CHECK(anchor_track_from(&a, k, r, n, &lim));
	}
	a.counter = a.at[SERVED_MONOTONIC];
	return a;
}

/* A try of line l at its retry time as shim/resync.c's resume_line makes it: full
 * anchors, up to `most` while a stopped clock reads quiet (prove_quiet). */
static struct plan jittered_try(struct line *l, int most, int64_t jitter, uint64_t width, uint64_t *rng)
{
	uint64_t t = l->health[SERVED_MONOTONIC].retry_at;
	struct anchor a = jittered_anchor(&steady, t + 100, cfg.full_readings, jitter, width, rng);
	uint32_t due = tries_due(l, t);
	bool more = anchor_count_quiet_try(&a, NULL, due, &cfg);
	for (int taken = 1; more && taken < most; taken++) {
		uint64_t earlier[TRACKS];
		memcpy(earlier, a.spread_ns, sizeof earlier);
		a = jittered_anchor(&steady, a.counter + 40000, cfg.full_readings, jitter, width, rng);
		more = anchor_count_quiet_try(&a, earlier, due, &cfg);
	}
	struct plan_inputs in = {.old = l, .anchor = &a, .now = t, .cfg = &cfg};
	struct plan p;
	segment_resume(&in, &p);
	*l = p.next;
	return p;
}

/* A line stopped whole as too noisy (its readings spread 400 ns). */
static void noisy_stopped_line(struct line *l)
{
	first_line(l, &steady, 10000000);
	for (int i = 0; i < 200 && l->active; i++) {
		struct anchor a = anchor_of(&steady, l->expiry + 100, 0, 100);
		a.spread_ns[SERVED_MONOTONIC] = 400;
		*l = plan_from(l, &a, l->expiry).next;
	}
	CHECK(!l->active && l->health[SERVED_MONOTONIC].stopped == TRACK_NOISY);
}

/* FOUND: a +/-1 us reference (bats/hostile_adversary.bats) stopped as too noisy served
 * again, off by more than the bound, in a fifth of runs where its readings took 150 ns:
 * one anchor of seven readings reads quiet by chance (its lower-median spread), and two
 * such tries settled the running mean. A try now proves quiet on up to quiet_anchors
 * anchors, and on every reading of each (their disagreement). Counted: the lines of 400
 * stopped as noisy that serve again within their first 8 tries (about a second), with
 * the old proof (one anchor, its spread) and the new. */
static int resumptions_from(const struct line *from, int64_t jitter, uint64_t width, int most, bool disagreement,
			    uint64_t seed);

static int noisy_resumptions(int64_t jitter, uint64_t width, int most, bool disagreement, uint64_t seed)
{
	struct line stopped;
	noisy_stopped_line(&stopped);
	return resumptions_from(&stopped, jitter, width, most, disagreement, seed);
}

/* The same from line `stopped`, whatever stopped it. */
static int resumptions_from(const struct line *from, int64_t jitter, uint64_t width, int most, bool disagreement,
			    uint64_t seed)
{
	uint64_t rng = seed;
	struct line stopped = *from;
	int resumed = 0;
	for (int trial = 0; trial < 400; trial++) {
		struct line l = stopped;
		for (int i = 0; i < 8; i++) {
			struct plan p;
			if (disagreement) {
				p = jittered_try(&l, most, jitter, width, &rng);
			} else {
				uint64_t t = l.health[SERVED_MONOTONIC].retry_at;
				struct anchor a = jittered_anchor(&steady, t + 100, cfg.full_readings, jitter, width, &rng);
				struct plan_inputs in = {.old = &l, .anchor = &a, .now = t, .cfg = &cfg};
				segment_resume(&in, &p);
				l = p.next;
			}
			if (p.outcome == PLAN_RESUME) {
				resumed++;
				break;
			}
		}
	}
	return resumed;
}

static void a_noisy_clock_resumes_only_on_quiet_anchors(void)
{
	const uint64_t widths[] = {60, 150, 300};
	for (int w = 0; w < 3; w++) {
		int before = noisy_resumptions(1000, widths[w], 1, false, 7 + (uint64_t)w);
		int one = noisy_resumptions(1000, widths[w], 1, true, 7 + (uint64_t)w);
		int now = noisy_resumptions(1000, widths[w], cfg.quiet_anchors, true, 7 + (uint64_t)w);
		printf("# +/-1 us, brackets %llu ns: of 400 stopped as noisy, %d served again within 8 tries "
		       "(one anchor's spread: %d; one anchor, every reading: %d)\n",
		       (unsigned long long)widths[w], now, before, one);
		CHECK(now == 0);
		if (widths[w] >= 150)
			CHECK(before > 0); /* the hole this closes */
	}
	/* FOUND: a noisy clock stopped for another cause (as behind, by a reading the noise
	 * pulled low, before its running mean showed the noise) was tried on one anchor's
	 * spread too: make test saw one such resume under bats/hostile_adversary.bats F13. */
	struct line behind;
	noisy_stopped_line(&behind);
	behind.health[SERVED_MONOTONIC].stopped = TRACK_BEHIND;
	behind.health[SERVED_MONOTONIC].noise_x32 = 0;
	int before = resumptions_from(&behind, 1000, 150, 1, false, 5);
	int now = resumptions_from(&behind, 1000, 150, cfg.quiet_anchors, true, 5);
	printf("# +/-1 us, brackets 150 ns, stopped as behind: %d of 400 served again (one anchor's spread: %d)\n",
	       now, before);
	CHECK(now == 0 && before > 0);
	/* A reference that is quiet once more serves again at the first try or the second
	 * (the running mean halves toward each), its readings 60 or 300 ns wide. */
	for (int w = 0; w < 3; w += 2) {
		uint64_t rng = 11;
		struct line l;
		noisy_stopped_line(&l);
		int tries = 0;
		struct plan p = {.outcome = PLAN_STILL};
		while (p.outcome != PLAN_RESUME && tries < 8) {
			p = jittered_try(&l, cfg.quiet_anchors, 0, widths[w], &rng);
			tries++;
		}
		printf("# quiet again, brackets %llu ns: serving after %d tries\n", (unsigned long long)widths[w], tries);
		CHECK(p.outcome == PLAN_RESUME && tries <= 3);
	}
}

/* The tries a proof of quiet is for: clocks stopped for a cause that passes, at their own
 * retry time (all of them in a line stopped whole); each anchor's count raises a due
 * clock's spread to its readings' disagreement and to the try's earlier anchors'. */
static void a_quiet_proof_counts_every_reading(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	CHECK_EQ_U64(tries_due(&l, l.expiry), 0);
	l.health[SERVED_BOOTTIME].stopped = TRACK_NOISY;
	l.health[SERVED_BOOTTIME].retry_at = l.expiry + 1000;
	l.health[SERVED_MONOTONIC_RAW].stopped = TRACK_BEHIND; /* a noisy clock may stop so too */
	l.health[SERVED_MONOTONIC_RAW].retry_at = l.expiry + 2000;
	l.health[SERVED_REALTIME].stopped = TRACK_UNCOVERED; /* for good: never tried */
	CHECK_EQ_U64(tries_due(&l, l.expiry), 0);
	CHECK_EQ_U64(tries_due(&l, l.expiry + 1000), 1u << SERVED_BOOTTIME);
	CHECK_EQ_U64(tries_due(&l, l.expiry + 2000), (1u << SERVED_BOOTTIME) | (1u << SERVED_MONOTONIC_RAW));
	struct line whole = l;
	line_stop(&whole, TRACK_NOISY);
	CHECK_EQ_U64(tries_due(&whole, 0), (1u << SERVED_MONOTONIC) | (1u << SERVED_MONOTONIC_RAW) |
						(1u << SERVED_BOOTTIME));
	l.health[SERVED_MONOTONIC_RAW].stopped = TRACK_SERVING;
	l.health[SERVED_REALTIME].stopped = TRACK_SERVING;
	/* BOOTTIME's readings spread 0 (most agree) but lie 300 ns apart beyond the bracket
	 * (below + above - width): not quiet, and no further anchor is wanted. */
	uint32_t due = 1u << SERVED_BOOTTIME;
	struct anchor a = anchor_of(&steady, l.expiry + 2000, 0, 100);
	a.below_ns[SERVED_BOOTTIME] = 200;
	a.above_ns[SERVED_BOOTTIME] = 200;
	CHECK(!anchor_count_quiet_try(&a, NULL, due, &cfg));
	CHECK_EQ_U64(a.spread_ns[SERVED_BOOTTIME], 300);
	CHECK_EQ_U64(a.spread_ns[SERVED_MONOTONIC], 0); /* not due: untouched */
	/* Quiet: another anchor is wanted, and an earlier one's spread stands. */
	a = anchor_of(&steady, l.expiry + 2000, 0, 100);
	CHECK(anchor_count_quiet_try(&a, NULL, due, &cfg));
	const uint64_t earlier[TRACKS] = {0, 0, 80, 0};
	CHECK(!anchor_count_quiet_try(&a, earlier, due, &cfg));
	CHECK_EQ_U64(a.spread_ns[SERVED_BOOTTIME], 80);
	/* Taken into the plan: BOOTTIME stays stopped, its running mean raised. */
	a = anchor_of(&steady, l.expiry + 2000, 0, 100);
	a.below_ns[SERVED_BOOTTIME] = a.above_ns[SERVED_BOOTTIME] = 200;
	anchor_count_quiet_try(&a, NULL, due, &cfg);
	struct plan p = plan_from(&l, &a, l.expiry + 1000);
	CHECK(!(p.resumed & (1u << SERVED_BOOTTIME)) && !track_serves(&p.next, SERVED_BOOTTIME));
	/* In a line stopped whole, a clock stopped as noisy in its own right before serves
	 * again with MONOTONIC only once its own mean has settled. */
	struct line stopped = l;
	stopped.health[SERVED_BOOTTIME].noise_x32 = 32 * 400;
	line_stop(&stopped, TRACK_JUMPS);
	int tries;
	p = resume_tries(&stopped, &steady, 8, &tries);
	CHECK(p.outcome == PLAN_RESUME && track_serves(&p.next, SERVED_MONOTONIC));
	CHECK(!track_serves(&p.next, SERVED_BOOTTIME) && p.next.health[SERVED_BOOTTIME].stopped == TRACK_NOISY);
	CHECK_EQ_U64(track_noise_ns(&p.next.health[SERVED_BOOTTIME]), 200); /* halfway to 0 */
}

/* One clock stopped (BOOTTIME stepped back 2 ms, below its own last reading: its own
 * step back) serves again at a re-synchronization past its back-off, from its kernel's
 * value, never below its hold, while the others serve on. */
static void a_stopped_clock_serves_again(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	struct kernel k = steady;
	k.offset[SERVED_BOOTTIME] -= 2000000;
	struct anchor a = anchor_of(&k, l.expiry + 100, 0, 100);
	struct plan p = plan_from(&l, &a, l.expiry);
	CHECK(p.next.health[SERVED_BOOTTIME].stopped == TRACK_BEHIND);
	/* How far below its own last reading: what a held read weighs against its lead. */
	CHECK_EQ_U64(p.next.health[SERVED_BOOTTIME].went_back_ns, l.health[SERVED_BOOTTIME].last_ns - a.ns[SERVED_BOOTTIME]);
	uint64_t retry_at = p.next.health[SERVED_BOOTTIME].retry_at;
	CHECK_EQ_U64(retry_at, l.expiry + cfg.retry_first_ticks);
	l = p.next;
	int resumed_at = -1;
	for (int i = 0; i < 20 && resumed_at < 0; i++) {
		a = anchor_of(&k, l.expiry + 100, 0, 100);
		p = plan_from(&l, &a, l.expiry);
		CHECK(p.outcome == PLAN_CONTINUE);
		check_no_step_back(&l, &p.next);
		if (p.resumed) {
			resumed_at = i;
			CHECK(p.resumed == 1u << SERVED_BOOTTIME);
			CHECK(l.expiry >= retry_at);
			CHECK(track_serves(&p.next, SERVED_BOOTTIME));
			uint64_t hold = track_hold(&l, SERVED_BOOTTIME, UINT64_MAX);
			CHECK(line_value(&p.next, SERVED_BOOTTIME, p.next.cur.start) >= hold);
			CHECK_EQ_U64(p.next.health[SERVED_BOOTTIME].resumed_from, p.next.cur.start);
			CHECK(!track_serves_at(&p.next, SERVED_BOOTTIME, p.next.cur.start - 1));
			CHECK(track_serves_at(&p.next, SERVED_BOOTTIME, p.next.cur.start));
		}
		l = p.next;
	}
	/* BOOTTIME's kernel ran 2 ms behind its hold: back once it is past it. */
	printf("# BOOTTIME stopped 2 ms back: serving again at the %d-th re-synchronization\n", resumed_at);
	CHECK(resumed_at >= 0);
	/* A corrupt plan's stop does not pass. */
	CHECK(!track_stop_passes(TRACK_CORRUPT) && !track_stop_passes(TRACK_UNCOVERED));
}

/* MONOTONIC_RAW's kernel slowed by a fifth alone (a track serves at its family's rate,
 * and RAW's changes only with MONOTONIC's) stops as behind, and stays stopped while it
 * runs apart: each try found it past its hold and quiet, and it served again, stopped
 * again within an interval, served up to a fifth of an interval off each time (make test:
 * 100-200 times a second, 124 us off). Back at its family's rate (and past its hold), it
 * serves again, once a try has measured that rate. */
static void a_clock_running_apart_from_its_family_stays_stopped(void)
{
	struct line l;
	first_line(&l, &steady, 10000000);
	uint64_t slowed_from = l.expiry, back_at = 0;
	struct kernel k = steady;
	int stops = 0, resumes_slowed = 0, resumes_back = 0;
	for (int i = 0; i < 400; i++) {
		uint64_t when = l.expiry + 100;
		if (i == 60)
			back_at = when; /* from here on true time again, as a frozen clock's double does */
		struct anchor a = anchor_of(&k, when, 0, 100);
		if (!back_at)
			a.ns[SERVED_MONOTONIC_RAW] -= (uint64_t)((double)(when - slowed_from) * RATE / 5);
		struct plan p = plan_from(&l, &a, l.expiry);
		CHECK(p.next.active);
		CHECK(track_serves(&p.next, SERVED_MONOTONIC) && track_serves(&p.next, SERVED_BOOTTIME));
		stops += (p.next.stopped_now >> SERVED_MONOTONIC_RAW) & 1;
		if (p.resumed & (1u << SERVED_MONOTONIC_RAW))
			*(back_at ? &resumes_back : &resumes_slowed) += 1;
		l = p.next;
	}
	printf("# MONOTONIC_RAW slowed a fifth alone: stops %d, served again %d times while slowed, %d once back\n", stops,
	       resumes_slowed, resumes_back);
	CHECK(stops == 1);
	CHECK(resumes_slowed == 0);
	CHECK(resumes_back == 1);
	CHECK(track_serves(&l, SERVED_MONOTONIC_RAW));
}

/* A kernel whose rate wobbles +/-2 % against the counter every 3 ms (make soak's
 * wobble), starting at counter `from`: clock k's value at t. */
static uint64_t wobbled_at(int k, uint64_t from, uint64_t t)
{
	const uint64_t period = 6000000; /* 3 ms of ticks */
	uint64_t v = kernel_at(&steady, k, t);
	if (t <= from)
		return v;
	uint64_t since = t - from, periods = since / period, in = since % period;
	double gained = (double)(periods % 2 ? period - in : in) * RATE * 0.02;
	return v + (uint64_t)(int64_t)gained;
}

/* A clock whose reading cannot place it (a lone reading that disagrees: its fellows were
 * preempted) runs on blind for one interval. Where the same anchor shows MONOTONIC's
 * rate changed, a blind BOOTTIME or REALTIME (MONOTONIC plus an offset) that kept the
 * old line's error and went on at the new rate ran to twice the envelope by the next
 * anchor, with the rate flipping again (make soak: one REALTIME value 61 us below the
 * kernel's); it follows MONOTONIC's segment at its own offset instead. Over a wobble with
 * such an anchor at every other re-synchronization, every value of every serving clock
 * stays within the bound and 4 % of an interval, as MONOTONIC's does. */
static void a_blind_clock_follows_monotonic(void)
{
	uint64_t worst[TRACKS] = {0};
	uint64_t seed = 7212387263ull;
	int blind = 0;
	struct line l;
	first_line(&l, &steady, 10000000);
	uint64_t from = l.expiry + LIFE / 3;
	bool lone_before = false;
	for (int j = 0; j < 400; j++) {
		uint64_t when = l.expiry + xorshift64(&seed) % 4000;
		struct anchor a = anchor_of(&steady, when, 0, 100);
		for (int k = 0; k < TRACKS; k++)
			a.ns[k] = wobbled_at(k, from, when);
		int64_t off = (int64_t)(line_value(&l, SERVED_MONOTONIC, when) - a.ns[SERVED_MONOTONIC]);
		if (!lone_before && magnitude_i64(off) > cfg.bound_ns) {
			a.lone = (1u << SERVED_BOOTTIME) | (1u << SERVED_REALTIME);
			blind++;
		}
		lone_before = a.lone != 0;
		struct plan p = plan_from(&l, &a, when);
		if (p.outcome == PLAN_STOP) {
			/* Three disagreements in a row (the rate keeps changing): serves again
			 * once it settles; what is measured here is the serving line. */
			l = p.next;
			l.expiry = when + LIFE;
			continue;
		}
		for (uint64_t t = l.expiry; t < p.next.expiry; t += LIFE / 64)
			for (int k = 0; k < TRACKS; k++) {
				if (!track_serves(&p.next, k) || k == SERVED_MONOTONIC_RAW)
					continue;
				uint64_t m = magnitude_i64((int64_t)(line_value(&p.next, k, t) - wobbled_at(k, from, t)));
				worst[k] = m > worst[k] ? m : worst[k];
			}
		l = p.next;
	}
	double envelope = 1000 + 40000 * 1e-6 * (double)(LIFE + 2 * (LIFE / 8)) * RATE;
	printf("# wobble +/-2 %% every 3 ms, %d blind anchors: worst MONOTONIC %llu, BOOTTIME %llu, REALTIME %llu ns "
	       "(envelope %.0f)\n",
	       blind, (unsigned long long)worst[SERVED_MONOTONIC], (unsigned long long)worst[SERVED_BOOTTIME],
	       (unsigned long long)worst[SERVED_REALTIME], envelope);
	CHECK(blind > 20);
	for (int k = 0; k < TRACKS; k++)
		CHECK((double)worst[k] <= envelope);
}

int main(void)
{
	RUN(first_line_is_anchored);
	RUN(continuation_keeps_every_value);
	RUN(a_noisy_reference_is_damped);
	RUN(wide_anchors_move_the_line_less);
	RUN(a_lapsed_line_reanchors_without_a_fault);
	RUN(the_watchdog_stops_a_counter_that_ran_ahead);
	RUN(a_step_back_over_a_lapse_is_the_kernels_own);
	RUN(a_freeze_over_a_lapse_is_held);
	RUN(a_kernel_jump_reanchors_with_a_fresh_rate);
	RUN(a_rate_change_is_followed_at_once);
	RUN(a_rate_change_at_any_phase_keeps_its_envelope);
	RUN(a_blind_anchor_does_not_stretch_what_a_rate_explains);
	RUN(a_small_jump_is_not_a_rate);
	RUN(boottime_steps_forward_realtime_steps_both_ways);
	RUN(floors_hold_the_next_line_up);
	RUN(a_track_below_its_floor_stops_alone);
	RUN(a_stepped_wall_clock_stands_with_the_floor);
	RUN(a_time_namespace_is_noticed);
	RUN(the_hot_path_serves_prev_only_where_it_is_the_line);
	RUN(an_anchor_is_the_median_of_good_readings);
	RUN(first_line_starts_without_unread_or_noisy_clocks);
	RUN(an_unread_clock_continues_once_then_stops);
	RUN(a_noisy_clock_stops);
	RUN(a_clock_proven_off_by_more_than_the_bound);
	RUN(a_lone_reading_proves_no_fault);
	RUN(a_fault_is_what_every_reading_shows);
	RUN(holds_take_in_the_floor);
	RUN(a_rate_is_measured_only_between_readings);
	RUN(a_jump_over_a_lapse_is_not_a_rate);
	RUN(a_rate_change_over_lapsed_lines_is_adopted);
	RUN(plan_config_is_derived);
	RUN(a_stopped_line_serves_again_at_a_steady_rate);
	RUN(a_disruption_holds_flat_and_measures_again);
	RUN(a_stopped_clock_serves_again);
	RUN(a_clock_running_apart_from_its_family_stays_stopped);
	RUN(a_noisy_line_needs_quiet_tries);
	RUN(a_noisy_clock_resumes_only_on_quiet_anchors);
	RUN(a_quiet_proof_counts_every_reading);
	RUN(a_blind_clock_follows_monotonic);
	return unit_finish();
}
