/* The re-synchronization plan over synthetic anchors: continuity, convergence, stale
 * lines, the watchdog's three outcomes, and the offsets' follow rules. */
#include "segment.h"
#include "unit.h"

/* A 2 GHz counter: 0.5 ns per tick. */
#define RATE 0.5L
#define LIFE 1000000ull /* 0.5 ms of ticks */
#define WATCHDOG 1000000ull

static struct line old;

static struct anchor anchor_at(uint64_t counter, int64_t kernel_minus_line)
{
	struct anchor a = {.counter = counter};
	for (int k = 0; k < TRACKS; k++)
		a.ns[k] = (uint64_t)((int64_t)line_value(&old, (enum track)k, counter) + kernel_minus_line);
	a.realtime_lo = a.realtime_hi = (int64_t)old.realtime_offset;
	a.boottime_lo = a.boottime_hi = (int64_t)old.boottime_offset;
	a.realtime_lo -= 50, a.realtime_hi += 50, a.boottime_lo -= 50, a.boottime_hi += 50;
	return a;
}

static struct plan plan_for(const struct anchor *a, uint64_t now, uint32_t reanchors)
{
	struct plan_inputs in = {.old = &old, .anchor = a, .now = now, .rate = {RATE, RATE},
				 .life_ticks = LIFE, .watchdog_ns = WATCHDOG, .reanchors_in_a_row = reanchors};
	struct plan p;
	segment_plan(&in, &p);
	return p;
}

static void setup(void)
{
	struct anchor a = {.counter = 10000000, .ns = {5000000000ull, 4000000000ull},
			   .realtime_lo = 1000, .realtime_hi = 1100, .boottime_lo = 200, .boottime_hi = 300};
	segment_first(&old, &a, RATE, LIFE);
}

static void first_line_is_anchored(void)
{
	setup();
	CHECK(old.active == 1);
	CHECK_EQ_U64(line_value(&old, TRACK_MONO, 10000000), 5000000000ull);
	CHECK_EQ_U64(line_value(&old, TRACK_MONO, 10000000 + 2000), 5000000000ull + 1000);
	CHECK_EQ_U64(old.expiry, 10000000 + LIFE);
	CHECK_EQ_U64(old.cur.until, 10000000 + 2 * LIFE);
	CHECK_EQ_U64(old.realtime_offset, 1050);
}

/* Values of the new publication never fall below the old one's at any counter value,
 * and equal them before the new segment starts. */
static void check_no_step_back(const struct line *next)
{
	for (uint64_t t = old.cur.start; t < next->cur.until + LIFE; t += 997) {
		uint64_t before = line_value(&old, TRACK_MONO, t);
		uint64_t after = line_value(next, TRACK_MONO, t);
		if (t < next->cur.start)
			CHECK(after == before);
		else
			CHECK(after >= line_value(&old, TRACK_MONO, next->cur.start));
		CHECK(line_value(next, TRACK_MONO, t + 997) >= after);
	}
}

static void agreeing_kernel_continues(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry + 10, 0);
	struct plan p = plan_for(&a, old.expiry + 10, 0);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.error_measured && p.error_ns == 0);
	CHECK_EQ_U64(p.next.cur.start, old.cur.until);
	CHECK_EQ_U64(p.next.cur.base[TRACK_MONO], line_value(&old, TRACK_MONO, old.cur.until));
	CHECK_EQ_U64(p.next.expiry, old.cur.until + LIFE);
	check_no_step_back(&p.next);
}

static void line_ahead_slews_back_to_the_kernel(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, -700); /* kernel 700 ns behind the line */
	struct plan p = plan_for(&a, old.expiry, 0);
	CHECK(p.outcome == PLAN_CONTINUE);
	CHECK(p.error_ns == 700);
	check_no_step_back(&p.next);
	/* At the next expiry the line meets the kernel's projection, within 2 ns. */
	uint64_t at = p.next.expiry;
	int64_t kernel = (int64_t)a.ns[TRACK_MONO] + (int64_t)((long double)(at - a.counter) * RATE);
	int64_t line = (int64_t)line_value(&p.next, TRACK_MONO, at);
	CHECK(line - kernel <= 2 && kernel - line <= 2);
}

static void line_behind_slews_forward(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, 900);
	struct plan p = plan_for(&a, old.expiry, 0);
	CHECK(p.outcome == PLAN_CONTINUE);
	uint64_t at = p.next.expiry;
	int64_t kernel = (int64_t)a.ns[TRACK_MONO] + (int64_t)((long double)(at - a.counter) * RATE);
	int64_t line = (int64_t)line_value(&p.next, TRACK_MONO, at);
	CHECK(line - kernel <= 2 && kernel - line <= 2);
}

static void stale_line_reanchors_without_fault(void)
{
	setup();
	uint64_t late = old.cur.until + 50 * LIFE;
	struct anchor a = anchor_at(late, 0); /* the old line is clamped there: kernel is ahead */
	a.ns[TRACK_MONO] = line_value(&old, TRACK_MONO, old.cur.until) + (uint64_t)(50 * LIFE * RATE);
	struct plan p = plan_for(&a, late, 0);
	CHECK(p.outcome == PLAN_STALE);
	CHECK(!p.error_measured);
	CHECK_EQ_U64(p.next.cur.start, late);
	CHECK_EQ_U64(p.next.cur.base[TRACK_MONO], a.ns[TRACK_MONO]);
	CHECK(p.next.active == 1);
}

static void kernel_far_ahead_reanchors_forward(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, 5 * (int64_t)WATCHDOG); /* e.g. a paused VM */
	struct plan p = plan_for(&a, old.expiry, 0);
	CHECK(p.outcome == PLAN_REANCHOR);
	CHECK(p.next.active == 1);
	uint64_t kernel_at_start = a.ns[TRACK_MONO] + (uint64_t)((long double)(p.next.cur.start - a.counter) * RATE);
	CHECK_EQ_U64(p.next.cur.base[TRACK_MONO], kernel_at_start);
	check_no_step_back(&p.next);
}

static void third_reanchor_in_a_row_stops(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, 5 * (int64_t)WATCHDOG);
	CHECK(plan_for(&a, old.expiry, 1).outcome == PLAN_REANCHOR);
	struct plan p = plan_for(&a, old.expiry, 2);
	CHECK(p.outcome == PLAN_STOP);
	CHECK(p.next.active == 0);
}

static void counter_ahead_stops(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, -2 * (int64_t)WATCHDOG);
	struct plan p = plan_for(&a, old.expiry, 0);
	CHECK(p.outcome == PLAN_STOP);
	CHECK(p.next.active == 0);
	CHECK(p.error_ns == 2 * (int64_t)WATCHDOG);
}

static void offsets_follow_only_proven_steps(void)
{
	setup();
	struct line l = old;
	struct anchor a = anchor_at(old.expiry, 0);
	/* jitter within the bracket: unchanged */
	a.realtime_lo = 1030, a.realtime_hi = 1090;
	offsets_refresh(&l, &a);
	CHECK_EQ_U64(l.realtime_offset, 1050);
	/* a wall-clock step of +0.5 s seen through a narrow bracket: followed */
	a.realtime_lo = 500001000, a.realtime_hi = 500001100;
	offsets_refresh(&l, &a);
	CHECK_EQ_U64(l.realtime_offset, 500001050);
	/* a preempted measurement (wide bracket) that excludes the offset: ignored */
	a.realtime_lo = 500100000, a.realtime_hi = 500200000;
	offsets_refresh(&l, &a);
	CHECK_EQ_U64(l.realtime_offset, 500001050);
	/* BOOTTIME: forward with a narrow bracket; never back */
	a.boottime_lo = 9000, a.boottime_hi = 9100;
	offsets_refresh(&l, &a);
	CHECK_EQ_U64(l.boottime_offset, 9050);
	a.boottime_lo = 100, a.boottime_hi = 120;
	offsets_refresh(&l, &a);
	CHECK_EQ_U64(l.boottime_offset, 9050);
}

static void raw_track_is_planned_alike(void)
{
	setup();
	struct anchor a = anchor_at(old.expiry, 0);
	a.ns[TRACK_RAW] += 300; /* RAW's kernel ahead by 300 ns */
	struct plan p = plan_for(&a, old.expiry, 0);
	CHECK(p.outcome == PLAN_CONTINUE);
	uint64_t at = p.next.expiry;
	int64_t kernel = (int64_t)a.ns[TRACK_RAW] + (int64_t)((long double)(at - a.counter) * RATE);
	int64_t line = (int64_t)line_value(&p.next, TRACK_RAW, at);
	CHECK(line - kernel <= 2 && kernel - line <= 2);
}

int main(void)
{
	RUN(first_line_is_anchored);
	RUN(agreeing_kernel_continues);
	RUN(line_ahead_slews_back_to_the_kernel);
	RUN(line_behind_slews_forward);
	RUN(stale_line_reanchors_without_fault);
	RUN(kernel_far_ahead_reanchors_forward);
	RUN(third_reanchor_in_a_row_stops);
	RUN(counter_ahead_stops);
	RUN(offsets_follow_only_proven_steps);
	RUN(raw_track_is_planned_alike);
	return unit_finish();
}
