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

/* Not reached: the hot path hands its rare cases back as READ_SLOW. */
int clock_read_slow(unsigned clock, struct timespec *ts, uint64_t t)
{
	(void)clock, (void)ts, (void)t;
	return 0;
}

#define GHZ_MILLIHZ 1000000000000ull /* a 1 GHz counter: one tick per ns */
#define BASE 5000000000000ull        /* ns at the previous segment's start */

static void segment_at(struct segment *s, uint64_t start, uint64_t until, uint64_t base)
{
	struct conversion c;
	conversion_from_rate(&c, GHZ_MILLIHZ);
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
	line_seal(&l);
	return l;
}

static void publish(const struct line *l)
{
	line_slots[1].line = *l;
	wiped.state = STATE_VERSION_STEP | 1;
}

static enum read_result read_mono(struct timespec *ts)
{
	struct pending_read pending;
	return clock_read(CLOCK_MONOTONIC, ts, &pending);
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
	line_seal(&l);
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
	line_seal(&l);
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
	struct pending_read pending;
	CHECK(clock_read(CLOCK_PROCESS_CPUTIME_ID, &ts, &pending) == READ_PASS);
	CHECK(clock_read(-1, &ts, &pending) == READ_PASS);
}

int main(void)
{
	clock_config.served_index[CLOCK_MONOTONIC] = SERVED_MONOTONIC + 1;
	clock_config.fenced = true;
	RUN(before_the_current_segment_prev_serves_in_line);
	RUN(a_floor_on_prev_sends_the_read_to_the_slow_path);
	RUN(a_clamp_on_prev_sends_the_read_to_the_slow_path);
	RUN(the_current_segment_serves_until_expiry);
	RUN(no_line_or_an_unserved_clock);
	return unit_finish();
}
