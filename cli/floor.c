/* The floor (floor.h): the shim's read less its line, one reader per read plan, timed
 * as the shim times its own path; the plan it reads with, and the read form it renews. */
#include "floor.h"
#include "samples.h"

#include "convert.h"
#include "counter.h"
#include "refclock.h"

enum {
	/* How long the shim's lines live while it serves CLOCK_REALTIME (calib/segment.c, plan_config_derive), and
	 * so how long the floor keeps a form. */
	FLOOR_LIFE_NS = 4000000,
	/* The floor's own measurement of its plans, as the shim's gate measures its own
	 * (shim/cost.c): interleaved blocks of CALLS, the median of ROUNDS. */
	CALLS = 32,
	ROUNDS = 7,
};

static struct conversion floor_conversion;
static uint64_t floor_life_ticks;
/* The form every floor read reads, written by floor_renew(). Loaded and stored one 64-bit
 * word at a time, as the shim's line: a read that meets a renewal may mix two forms'
 * fields, each in range (the conversion's are the same in both), and the floor only
 * measures what a read costs. A cache line of its own, as the shim's ranges are. */
static _Alignas(64) struct floor_form floor_live;

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

bool floor_plan_valid(int plan)
{
	return plan >= 0 && plan < FLOOR_PLANS && (plan & 3) <= COUNTER_READ_RDTSCP;
}

bool floor_plan_fenced(int plan)
{
	return floor_plan_valid(plan) && (plan & 3) != COUNTER_READ_UNFENCED;
}

const char *floor_plan_name(int plan)
{
	static const char *const names[FLOOR_PLANS] = {
		[COUNTER_READ_UNFENCED] = "rdtsc, counter after the loads",
		[COUNTER_READ_UNFENCED | FLOOR_COUNTER_FIRST] = "rdtsc, counter first",
		[COUNTER_READ_LFENCE] = "lfence; rdtsc, counter after the loads",
		[COUNTER_READ_LFENCE | FLOOR_COUNTER_FIRST] = "lfence; rdtsc, counter first",
		[COUNTER_READ_RDTSCP] = "rdtscp, counter after the loads",
		[COUNTER_READ_RDTSCP | FLOOR_COUNTER_FIRST] = "rdtscp, counter first",
	};
	return floor_plan_valid(plan) ? names[plan] : "none";
}

/* The fenced plans in the order the shim's gate measures them, the default first
 * (shim/cost.c: a tie keeps the earlier). */
static const int fenced_plans[] = {
	COUNTER_READ_LFENCE | FLOOR_COUNTER_FIRST,
	COUNTER_READ_LFENCE,
	COUNTER_READ_RDTSCP | FLOOR_COUNTER_FIRST,
	COUNTER_READ_RDTSCP,
};
enum { FENCED_PLANS = sizeof fenced_plans / sizeof fenced_plans[0] };

int floor_plan_pick(bool fenced, int shim_plan, const uint64_t cost[FLOOR_PLANS])
{
	if (floor_plan_valid(shim_plan) && floor_plan_fenced(shim_plan) == fenced)
		return shim_plan;
	if (!fenced)
		return COUNTER_READ_UNFENCED;
	int best = fenced_plans[0];
	uint64_t best_cost = UINT64_MAX;
	for (int i = 0; i < FENCED_PLANS; i++) {
		uint64_t c = cost ? cost[fenced_plans[i]] : 0;
		if (c && c < best_cost) {
			best_cost = c;
			best = fenced_plans[i];
		}
	}
	return best;
}

bool floor_form_next(const struct floor_form *old, uint64_t now, const struct conversion *c,
		     uint64_t life_ticks, struct floor_form *out)
{
	*out = *old;
	if (now < old->until)
		return false;
	uint64_t base = old->base_ns + (now > old->start ? conversion_apply(c, now - old->start) : 0);
	struct split_conversion s;
	if (split_conversion_from(&s, base, c, conversion_max_delta(c)) != 0)
		return false;
	*out = (struct floor_form){.start = now, .until = now + life_ticks, .base_ns = base,
				   .base_sec = s.base_sec, .base_nsec = s.base_nsec, .mult = s.mult,
				   .pre_shift = s.pre_shift, .post_shift = s.post_shift};
	return true;
}

static void publish(const struct floor_form *f)
{
	STORE(floor_live.start, f->start);
	STORE(floor_live.base_ns, f->base_ns);
	STORE(floor_live.base_sec, f->base_sec);
	STORE(floor_live.base_nsec, f->base_nsec);
	STORE(floor_live.mult, f->mult);
	STORE(floor_live.pre_shift, f->pre_shift);
	STORE(floor_live.post_shift, f->post_shift);
	__atomic_store_n(&floor_live.until, f->until, __ATOMIC_RELEASE);
}

void floor_renew(void)
{
	uint64_t now = counter_read_unfenced();
	uint64_t until = __atomic_load_n(&floor_live.until, __ATOMIC_ACQUIRE);
	/* One thread renews: the one that moves until out of reach meanwhile. */
	if (now < until ||
	    !__atomic_compare_exchange_n(&floor_live.until, &until, UINT64_MAX, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return;
	struct floor_form old = {
		.start = LOAD(floor_live.start), .until = until, .base_ns = LOAD(floor_live.base_ns),
		.base_sec = LOAD(floor_live.base_sec), .base_nsec = LOAD(floor_live.base_nsec),
		.mult = LOAD(floor_live.mult), .pre_shift = LOAD(floor_live.pre_shift),
		.post_shift = LOAD(floor_live.post_shift),
	}, next;
	if (!floor_form_next(&old, now, &floor_conversion, floor_life_ticks, &next))
		next.until = now + floor_life_ticks; /* no form at this rate: keep the old one */
	publish(&next);
}

void floor_setup(uint64_t rate_millihz)
{
	conversion_from_rate(&floor_conversion, rate_millihz);
	floor_life_ticks = (uint64_t)(FLOOR_LIFE_NS / ns_per_tick_at(rate_millihz));
	uint64_t now = counter_read_ordered();
	struct floor_form first = {.start = now, .until = 0, .base_ns = refclock_now_ns(CLOCK_MONOTONIC)}, next;
	floor_form_next(&first, now, &floor_conversion, floor_life_ticks, &next);
	publish(&next);
}

/* A read with plan: the counter first or after the form's base, then the shim's steps in
 * the shim's order (shim/line.h's clock_read_as, less its line: no served test, no state,
 * no range loads or check, no second load of the state). */
static inline __attribute__((always_inline)) void floor_timespec(int plan, struct timespec *ts)
{
	uint64_t t, start;
	if (plan & FLOOR_COUNTER_FIRST) {
		t = counter_read_as((enum counter_read)(plan & 3));
		start = LOAD(floor_live.start);
	} else {
		start = LOAD(floor_live.start);
		__asm__ __volatile__("" ::: "memory"); /* the load above stays above the read */
		t = counter_read_as((enum counter_read)(plan & 3));
	}
	uint64_t delta = t - start;
	uint64_t pre_shift = LOAD(floor_live.pre_shift);
	if (__builtin_expect(pre_shift != 0, 0)) {
		__asm__("" : "+r"(delta));
		delta <<= pre_shift & 63;
	}
	uint64_t mult = LOAD(floor_live.mult), post_shift = LOAD(floor_live.post_shift);
	uint64_t elapsed_ns = (uint64_t)(((unsigned __int128)delta * mult) >> 64) >> (post_shift & 63);
	split_conversion_store(LOAD(floor_live.base_sec), LOAD(floor_live.base_nsec) + elapsed_ns, ts);
}

/* Not inlined, so that each costs a call as the shim's entry points do. */
#define FLOOR_WITH(plan)                                                                   \
	static __attribute__((noinline)) int floor_ts_##plan(struct timespec *ts)          \
	{                                                                                  \
		floor_timespec(plan, ts);                                                  \
		return 0;                                                                  \
	}                                                                                  \
	static __attribute__((noinline)) int floor_tv_##plan(struct timeval *tv)           \
	{                                                                                  \
		struct timespec ts;                                                        \
		floor_timespec(plan, &ts);                                                 \
		tv->tv_sec = ts.tv_sec;                                                    \
		tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);                            \
		return 0;                                                                  \
	}
FLOOR_WITH(0)
FLOOR_WITH(1)
FLOOR_WITH(2)
FLOOR_WITH(4)
FLOOR_WITH(5)
FLOOR_WITH(6)
_Static_assert(FLOOR_COUNTER_FIRST == 4 && COUNTER_READ_LFENCE == 1 && COUNTER_READ_RDTSCP == 2,
	       "the plans above are tscshim.h's read_plan values");

static floor_fn *const readers[FLOOR_PLANS] = {
	[0] = floor_ts_0, [1] = floor_ts_1, [2] = floor_ts_2, [4] = floor_ts_4, [5] = floor_ts_5, [6] = floor_ts_6,
};
static floor_tv_fn *const readers_tv[FLOOR_PLANS] = {
	[0] = floor_tv_0, [1] = floor_tv_1, [2] = floor_tv_2, [4] = floor_tv_4, [5] = floor_tv_5, [6] = floor_tv_6,
};

floor_fn *floor_reader(int plan)
{
	return floor_plan_valid(plan) ? readers[plan] : NULL;
}

floor_tv_fn *floor_reader_tv(int plan)
{
	return floor_plan_valid(plan) ? readers_tv[plan] : NULL;
}

uint64_t floor_block(floor_fn *fn, int n)
{
	struct timespec ts;
	floor_renew();
	uint64_t before = counter_read_ordered();
	for (int i = 0; i < n; i++)
		fn(&ts);
	uint64_t after = counter_read_ordered();
	return after > before ? after - before : 0;
}


int floor_plan_for(bool fenced, int shim_plan)
{
	if (!fenced || (floor_plan_valid(shim_plan) && floor_plan_fenced(shim_plan)))
		return floor_plan_pick(fenced, shim_plan, NULL);
	bool has_rdtscp = counter_rdtscp_runs();
	uint64_t ticks[FENCED_PLANS][ROUNDS], cost[FLOOR_PLANS] = {0};
	for (int p = 0; p < FENCED_PLANS; p++) /* a first round, not counted: caches */
		if (has_rdtscp || (fenced_plans[p] & 3) != COUNTER_READ_RDTSCP)
			floor_block(readers[fenced_plans[p]], CALLS);
	for (int r = 0; r < ROUNDS; r++)
		for (int p = 0; p < FENCED_PLANS; p++)
			ticks[p][r] = has_rdtscp || (fenced_plans[p] & 3) != COUNTER_READ_RDTSCP
					      ? floor_block(readers[fenced_plans[p]], CALLS) : 0;
	for (int p = 0; p < FENCED_PLANS; p++)
		if (ticks[p][0]) /* measured: the median block, at least 1 (0 is "not measured") */
			cost[fenced_plans[p]] = samples_median_ticks(ticks[p], ROUNDS) + 1;
	return floor_plan_pick(true, shim_plan, cost);
}
