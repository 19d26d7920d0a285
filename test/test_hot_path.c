/* The production hot path (shim/line.h's clock_read) over synthetic published lines: the
 * current segment, the previous one served in line only where line_seal() allows it (no
 * floor binds, no clamp applies), and every other case sent to the slow path. The shim's
 * globals are this test's own, so the lines are exactly what each case says. */
#include "line.h"
#include "unit.h"

#include <string.h>

struct line_slot line_slots[LINE_SLOTS];
struct fork_wiped wiped;
struct clock_config clock_config;
static struct line_forms forms; /* what line_seal derives for the checks before publish */

/* Not reached: the hot path hands its rare cases back as READ_SLOW. */
int clock_read_slow(unsigned clock, struct timespec *ts)
{
	(void)clock, (void)ts;
	return 0;
}

#define GHZ_MILLIHZ 1000000000000ull /* a 1 GHz counter: one tick per ns */
#define BASE 5000000000000ull        /* ns at the previous segment's start */

static uint64_t rate_millihz = GHZ_MILLIHZ;

static void segment_at(struct segment *s, uint64_t start, uint64_t until, uint64_t base)
{
	struct conversion c;
	conversion_from_rate(&c, rate_millihz);
	s->start = start;
	s->until = until;
	for (int k = 0; k < TRACKS; k++)
		s->clk[k] = (struct track_params){.base = base, .mult = c.mult, .shift = c.shift};
}

/* prev from now - 1 ms to now + 1 s; cur from cur_start on. */
static struct line line_around(uint64_t now, uint64_t cur_start)
{
	struct line l;
	memset(&l, 0, sizeof l);
	l.active = 1;
	segment_at(&l.prev, now - 1000000, now + 1000000000, BASE);
	segment_at(&l.cur, cur_start, cur_start + 2000000000, BASE + (cur_start - (now - 1000000)));
	l.expiry = cur_start + 1000000000;
	line_seal(&l, &forms);
	return l;
}

/* As a writer does: sealed, with its read forms, into a slot the state then names. */
static void publish(struct line *l)
{
	line_seal(l, &line_slots[1].forms);
	line_slots[1].line = *l;
	wiped.state = STATE_VERSION_STEP | 1;
}

static enum read_result read_mono(struct timespec *ts)
{
	unsigned served;
	return clock_read(CLOCK_MONOTONIC, ts, &served, ts);
}

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static void before_the_current_segment_prev_serves_in_line(void)
{
	uint64_t now = counter_read_ordered();
	struct line l = line_around(now, now + 500000000); /* cur starts in 0.5 s */
	CHECK_EQ_U64(l.prev_direct_from, l.prev.start);
	publish(&l);
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SERVED);
	/* prev at 1 ns per tick from BASE at now - 1 ms: the read lies 1 ms and a bit on. */
	uint64_t v = ns_of(&ts);
	CHECK(v >= BASE + 1000000 && v < BASE + 1000000 + 100000000);
}

static void a_floor_on_prev_sends_the_read_to_the_slow_path(void)
{
	uint64_t now = counter_read_ordered();
	struct line l = line_around(now, now + 500000000);
	l.prev_floor[SERVED_MONOTONIC] = BASE + 2000000000; /* what a fallback handed out */
	line_seal(&l, &forms);
	CHECK_EQ_U64(l.prev_direct_from, l.cur.start);
	publish(&l);
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SLOW);
}

static void a_clamp_on_prev_sends_the_read_to_the_slow_path(void)
{
	uint64_t now = counter_read_ordered();
	struct line l = line_around(now, now + 500000000);
	l.prev.until = now - 500000; /* prev ended before now: its value is clamped there */
	line_seal(&l, &forms);
	publish(&l);
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SLOW);
}

static void the_current_segment_serves_until_expiry(void)
{
	uint64_t now = counter_read_ordered();
	struct line l = line_around(now, now - 500000); /* cur began 0.5 ms ago */
	publish(&l);
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SERVED);
	l.expiry = now - 1000; /* expired: a writer's turn */
	publish(&l);
	CHECK(read_mono(&ts) == READ_SLOW);
}

static void no_line_or_an_unserved_clock(void)
{
	memset(&wiped, 0, sizeof wiped); /* a fork child, or before the first line */
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SLOW);
	unsigned served;
	CHECK(clock_read(CLOCK_PROCESS_CPUTIME_ID, &ts, &served, &ts) == READ_PASS);
	CHECK(clock_read(-1, &ts, &served, &ts) == READ_PASS);
}

/* What the hot path hands out is the line's value (line_value) at a counter value taken
 * during the call, through cur and through prev, at an odd rate and with bases a few ns
 * before a second ends, so that values cross into the next second. */
/* Whatever the read plan (unfenced, lfence; rdtsc or rdtscp where the CPU has it; the
 * counter before or after the line's loads), in the current segment and in prev's range. */
static void served_values_are_the_lines(void)
{
	rate_millihz = 2449999999937ull;
	for (int k = 0; k < 2 * READ_PLANS; k++) {
		unsigned plan = (unsigned)k / 2;
		if (!read_plan_valid(plan) || ((plan & 3) == COUNTER_READ_RDTSCP && !counter_has_rdtscp()))
			continue;
		clock_config.read_plan = (uint8_t)plan;
		uint64_t now = counter_read_ordered();
		struct line l;
		memset(&l, 0, sizeof l);
		l.active = 1;
		uint64_t prev_start = now - 1000, cur_start = k % 2 ? now - 500 : now + 1000000000;
		segment_at(&l.prev, prev_start, now + 2000000000, 41 * 1000000000ull - 300);
		segment_at(&l.cur, cur_start, cur_start + 2000000000, 41 * 1000000000ull - 100);
		l.expiry = cur_start + 1000000000;
		line_seal(&l, &forms);
		publish(&l);
		for (int i = 0; i < 1000; i++) {
			struct timespec ts;
			uint64_t before = counter_read_ordered();
			CHECK(read_mono(&ts) == READ_SERVED);
			uint64_t after = counter_read_ordered();
			CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
			uint64_t v = ns_of(&ts);
			CHECK(v >= line_value(&l, SERVED_MONOTONIC, before));
			CHECK(v <= line_value(&l, SERVED_MONOTONIC, after));
		}
	}
	rate_millihz = GHZ_MILLIHZ;
	clock_config.read_plan = DEFAULT_FENCED_PLAN;
}

/* A current segment whose values would pass 2^63 ns has no read form: line_seal stops
 * the line (only a corrupt plan gets there), and every read goes to the slow path. */
static void a_line_no_read_form_covers_is_stopped(void)
{
	uint64_t now = counter_read_ordered();
	struct line l = line_around(now, now - 500000);
	l.expiry = l.cur.start + (1ull << 63) + 2; /* past 2^63 ticks of 1 ns */
	line_seal(&l, &forms);
	CHECK(l.active == 0);
	publish(&l);
	struct timespec ts;
	CHECK(read_mono(&ts) == READ_SLOW);
}

int main(void)
{
	clock_config.served_index[CLOCK_MONOTONIC] = SERVED_MONOTONIC + 1;
	clock_config.read_plan = DEFAULT_FENCED_PLAN;
	RUN(before_the_current_segment_prev_serves_in_line);
	RUN(a_floor_on_prev_sends_the_read_to_the_slow_path);
	RUN(a_clamp_on_prev_sends_the_read_to_the_slow_path);
	RUN(the_current_segment_serves_until_expiry);
	RUN(no_line_or_an_unserved_clock);
	RUN(served_values_are_the_lines);
	RUN(a_line_no_read_form_covers_is_stopped);
	return unit_finish();
}
