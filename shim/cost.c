/* The benefit gate's measurement (cost.h). Owns the timing of the kernel's clock and of the
 * served paths; judges nothing (calib/benefit.c weighs the figures, the decision keeps them).
 *
 * It runs in the decision after clock_start opened the path, so the served path timed is
 * the real one (clock_read_as and, rarely, its slow part) on the real line, fenced and
 * unfenced by argument: the live configuration is never flipped. Blocks of the
 * four are interleaved round by round, so that a frequency change or an interruption hits
 * them alike, and each figure is the median of its rounds; the counter itself is the
 * timer, its own cost (an empty block) taken off. Rounds stop once about 50 us are spent,
 * which only a kernel clock that is a system call on a slow host reaches. */
#define _GNU_SOURCE
#include "cost.h"

#include "clock.h"
#include "line.h"
#include "real.h"

#include "benefit.h"
#include "cache.h"
#include "kernel_clock.h"

enum {
	CALLS = 32,         /* per block: long enough to amortize the timer's two reads, and to tell
	                     * plans apart where the counter advances in steps of tens of ticks */
	SYSCALL_CALLS = 2,  /* the system call costs ~100x more: fewer keep the budget */
	ROUNDS = 7,         /* the median of 7 shrugs off three interrupted blocks */
	MIN_ROUNDS = 3,
	/* The decision's check of the kernel's figure against the costs' (10 % apart or less,
	 * where the clocksources a host offers differ by 16 % and more): the cheapest of 3
	 * blocks of 16 calls, about 1.5 us. The cheapest, not the median: on a busy machine
	 * two blocks of three are interrupted often enough (a load average of 100 on 2 CPUs
	 * moved the median past 10 % five times running), and an interruption only adds. The
	 * counter's step (about 10 ns on the AMD EPYC measured) is 2 % of a call there. */
	NOW_ROUNDS = 3,
	NOW_CALLS = 16,
	BUDGET_NS = 50000,
};

typedef int read_fn(clockid_t, struct timespec *);

/* The served path as the entry points take it, without their stats, with a plan of its
 * own (the live configuration is never flipped). */
static inline __attribute__((always_inline)) int served_as(clockid_t clock, struct timespec *ts, int plan)
{
	unsigned served = 0;
	enum read_result r = clock_read_as(clock, ts, &served, plan, ts);
	if (r == READ_SLOW && clock_read_slow(served, ts))
		return 0;
	return r == READ_SERVED ? 0 : real_clock_gettime(clock, ts);
}

/* One function per plan: the plan a constant in each, as the entry points' own code has
 * it once the branch on the configuration is predicted. */
#define SERVED_WITH(plan_name, plan)                                                      \
	static __attribute__((noinline)) int served_##plan_name(clockid_t clock, struct timespec *ts) \
	{                                                                                  \
		return served_as(clock, ts, plan);                                         \
	}
SERVED_WITH(unfenced, COUNTER_READ_UNFENCED)
SERVED_WITH(lfence_after, COUNTER_READ_LFENCE)
SERVED_WITH(lfence_first, COUNTER_READ_LFENCE | READ_COUNTER_FIRST)
SERVED_WITH(rdtscp_after, COUNTER_READ_RDTSCP)
SERVED_WITH(rdtscp_first, COUNTER_READ_RDTSCP | READ_COUNTER_FIRST)

/* The fenced plans measured, and the function that reads with each. */
static const struct {
	uint8_t plan;
	bool needs_rdtscp;
	read_fn *read;
} fenced_plans[] = {
	{COUNTER_READ_LFENCE | READ_COUNTER_FIRST, false, served_lfence_first},
	{COUNTER_READ_LFENCE, false, served_lfence_after},
	{COUNTER_READ_RDTSCP | READ_COUNTER_FIRST, true, served_rdtscp_first},
	{COUNTER_READ_RDTSCP, true, served_rdtscp_after},
};
enum { FENCED_PLANS = sizeof fenced_plans / sizeof fenced_plans[0] };
_Static_assert(FENCED_PLANS == sizeof ((struct cost_ps *)0)->fenced_by_plan / sizeof(uint64_t),
	       "a cost for every fenced plan");

const char *read_plan_name(unsigned plan)
{
	static const char *const names[READ_PLANS] = {
		[COUNTER_READ_LFENCE | READ_COUNTER_FIRST] = "lfence, counter first",
		[COUNTER_READ_LFENCE] = "lfence, counter after the line's loads",
		[COUNTER_READ_RDTSCP | READ_COUNTER_FIRST] = "rdtscp, counter first",
		[COUNTER_READ_RDTSCP] = "rdtscp, counter after the line's loads",
	};
	return plan < READ_PLANS && names[plan] ? names[plan] : "unfenced";
}
_Static_assert(DEFAULT_FENCED_PLAN == (COUNTER_READ_LFENCE | READ_COUNTER_FIRST),
	       "the first plan measured is the default");

static __attribute__((noinline)) int system_call(clockid_t clock, struct timespec *ts)
{
	return kernel_clock_gettime(clock, ts);
}

/* Ticks for n calls, the timer's two ordered reads included. */
static uint64_t block(read_fn *fn, clockid_t clock, int n)
{
	struct timespec ts;
	uint64_t before = counter_read_ordered();
	for (int i = 0; i < n; i++)
		fn(clock, &ts);
	uint64_t after = counter_read_ordered();
	return after > before ? after - before : 0;
}

/* Inlined where the decision calls it, so that it lies on the decision's pages (shim/decision_path.ld). */
__attribute__((always_inline)) static inline uint64_t median(uint64_t *v, int n)
{
	for (int i = 1; i < n; i++) /* insertion sort: seven values */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return v[n / 2];
}

/* ps per call of a block of n calls that took `ticks`, the timer's cost taken off. */
__attribute__((always_inline)) static inline uint64_t block_ps(uint64_t ticks, uint64_t timer, int n,
								long double ps_per_tick)
{
	uint64_t m = ticks > timer ? ticks - timer : 0;
	return (uint64_t)((long double)m * ps_per_tick / n + 0.5L);
}

/* ps per call of the least block (ticks sorted), within what a record holds. Out of the
 * way of the decision's pages (shim/decision_path.ld): it runs only on a loaded machine. */
__attribute__((cold, noinline)) static uint64_t least_block_ps(const uint64_t *sorted, uint64_t timer, int n,
								  long double ps_per_tick)
{
	uint64_t ps = block_ps(sorted[0], timer, n, ps_per_tick);
	return ps < CACHE_COST_MAX_PS ? ps : CACHE_COST_MAX_PS;
}

/* ps per call of the median block, the timer's median cost taken off; at least 1 ps, so
 * that a figure that was measured is never read as "not measured". */
static uint64_t per_call_ps(uint64_t *ticks, int rounds, uint64_t timer, int n, long double ps_per_tick)
{
	uint64_t ps = block_ps(median(ticks, rounds), timer, n, ps_per_tick);
	/* More than a record can hold (a millisecond a call): most rounds were preempted on a
	 * loaded machine, as the system call's blocks of two can be. A preemption only ever
	 * adds, so the least block is the call's, and the record is written, not refused. */
	if (ps > CACHE_COST_MAX_PS)
		ps = least_block_ps(ticks, timer, n, ps_per_tick);
	return ps ? ps : 1;
}

/* ps per call of the cheapest block: what the call itself costs. For the system call,
 * whose blocks are two calls: the first calls of a kind in a process cost several times
 * the rest, and a busy machine interrupts many blocks (a cold start's median was 3.3x the
 * call, a CI run's 13x), and a median so inflated misplaced the kernel's clock between
 * the vDSO and a system call (benefit_kernel_path). */
static uint64_t cheapest_per_call_ps(uint64_t *ticks, int rounds, uint64_t timer, int n, long double ps_per_tick)
{
	median(ticks, rounds); /* sorts */
	uint64_t ps = block_ps(ticks[0], timer, n, ps_per_tick);
	ps = ps < CACHE_COST_MAX_PS ? ps : CACHE_COST_MAX_PS;
	return ps ? ps : 1;
}

#ifdef TSCSHIM_TEST_HOOKS
static bool forced_costs(struct cost_ps *out);
#endif

uint64_t cost_kernel_now_ps(clockid_t clock, uint64_t rate_millihz)
{
#ifdef TSCSHIM_TEST_HOOKS
	struct cost_ps forced;
	if (forced_costs(&forced))
		return forced.kernel;
#endif
	/* The costs are kept per boot and CPU set, but how the kernel's clock is read depends
	 * on this process too (another library preloaded before us) and on the clocksource
	 * the kernel uses now. Measured as cost_measure measures it (blocks of calls, the
	 * timer's cost taken off), so that the two compare. A kernel clock that is a system call
	 * (its first call says so) in one block of SYSCALL_CALLS: any set measured through a
	 * system call applies then, and the path is told by the geometric mean of a vDSO read
	 * and the call, or three vDSO reads where that is less (benefit_same_kernel_path),
	 * which a preemption, only adding, never moves a system call below. */
	uint64_t empty[NOW_ROUNDS], kernel[NOW_ROUNDS]; /* on the stack: a page of .bss is a fault of its own */
	long double ps_per_tick = 1000 * ns_per_tick_at(rate_millihz);
	uint64_t first = block(real_clock_gettime, clock, 1);
	bool system_call = (long double)first * ps_per_tick > 1e6L;
	int calls = system_call ? SYSCALL_CALLS : NOW_CALLS, rounds = system_call ? 1 : NOW_ROUNDS;
	for (int r = 0; r < rounds; r++) {
		empty[r] = block(served_lfence_first, clock, 0);
		kernel[r] = block(real_clock_gettime, clock, calls);
	}
	uint64_t least = kernel[0], timer = empty[0];
	for (int r = 1; r < rounds; r++) {
		least = kernel[r] < least ? kernel[r] : least;
		timer = empty[r] < timer ? empty[r] : timer;
	}
	return per_call_ps(&least, 1, timer, calls, ps_per_tick);
}

bool cost_still_applies(uint64_t now_ps, const struct cost_ps *cached)
{
	struct cost then = {.kernel_ns = cached->kernel / 1e3,
			    .syscall_ns = cached->syscall / 1e3,
			    .fenced_ns = cached->fenced / 1e3};
	return benefit_same_kernel_path(now_ps / 1e3, &then);
}

#ifdef TSCSHIM_TEST_HOOKS
/* The test build only: TSCSHIM_TEST_COSTS="KERNEL,SYSCALL,FENCED,UNFENCED[,PLAN]" (ps;
 * PLAN a fenced read plan, shim/line.h) stands in for the measurement, so that tests
 * stage a gain at the margin and see what a record makes of it, and serve with each
 * plan; KERNEL also for the decision's timing of the kernel's clock (cost_kernel_now_ps),
 * which on a real host agrees with the record's only as well as the host's speed holds
 * still. */
#include <stdlib.h>
static bool forced_costs(struct cost_ps *out)
{
	const char *text = getenv("TSCSHIM_TEST_COSTS");
	uint64_t v[5] = {0};
	int i = 0;
	for (; text && *text && i < 5; i++) {
		char *end;
		v[i] = strtoull(text, &end, 10);
		text = *end == ',' ? end + 1 : *end == '\0' ? end : NULL;
	}
	if (!text || *text || i < 4)
		return false;
	*out = (struct cost_ps){v[0], v[1], v[2], v[3], (uint8_t)v[4], {0}};
	return true;
}
#endif

void cost_measure(clockid_t clock, uint64_t rate_millihz, struct cost_ps *out)
{
#ifdef TSCSHIM_TEST_HOOKS
	if (forced_costs(out))
		return;
#endif
	/* Static: the decision's stack is small (it may be a signal's), and this runs once. */
	static uint64_t empty[ROUNDS], kernel[ROUNDS], sys[ROUNDS], unfenced[ROUNDS], fenced[FENCED_PLANS][ROUNDS];
	/* Which fenced plan is cheapest depends on the CPU, so each is timed where the CPU
	 * can run it (rdtscp: one CPUID leaf, asked only here). */
	bool has_rdtscp = counter_has_rdtscp();
	long double ps_per_tick = 1000 * ns_per_tick_at(rate_millihz);
	uint64_t budget = (uint64_t)(BUDGET_NS * 1000.0L / ps_per_tick);
	/* A first round, not counted, brings code and line into the caches. */
	block(real_clock_gettime, clock, 1);
	block(served_unfenced, clock, 1);
	for (int p = 0; p < FENCED_PLANS; p++)
		if (has_rdtscp || !fenced_plans[p].needs_rdtscp)
			block(fenced_plans[p].read, clock, 1);
	uint64_t began = counter_read_ordered();
	int r = 0;
	while (r < ROUNDS && (r < MIN_ROUNDS || counter_read_ordered() - began < budget)) {
		empty[r] = block(served_lfence_first, clock, 0);
		kernel[r] = block(real_clock_gettime, clock, CALLS);
		for (int p = 0; p < FENCED_PLANS; p++)
			fenced[p][r] = has_rdtscp || !fenced_plans[p].needs_rdtscp
					       ? block(fenced_plans[p].read, clock, CALLS) : UINT64_MAX;
		unfenced[r] = block(served_unfenced, clock, CALLS);
		sys[r] = block(system_call, clock, SYSCALL_CALLS);
		r++;
	}
	uint64_t timer = median(empty, r);
	out->kernel = per_call_ps(kernel, r, timer, CALLS, ps_per_tick);
	out->syscall = cheapest_per_call_ps(sys, r, timer, SYSCALL_CALLS, ps_per_tick);
	out->unfenced = per_call_ps(unfenced, r, timer, CALLS, ps_per_tick);
	out->fenced = UINT64_MAX;
	out->fenced_plan = 0;
	for (int p = 0; p < FENCED_PLANS; p++) {
		if (!has_rdtscp && fenced_plans[p].needs_rdtscp)
			continue;
		/* Strictly cheaper to replace the one before: ties keep the default order. */
		uint64_t ps = per_call_ps(fenced[p], r, timer, CALLS, ps_per_tick);
		out->fenced_by_plan[p] = ps;
		if (ps < out->fenced) {
			out->fenced = ps;
			out->fenced_plan = fenced_plans[p].plan;
		}
	}
}

enum kernel_path cost_kernel_path(const struct cost_ps *c)
{
	struct cost ns = {.kernel_ns = c->kernel / 1e3, .syscall_ns = c->syscall / 1e3};
	return benefit_kernel_path(&ns);
}

void cost_add_ns(struct text *t, uint64_t ps)
{
	uint64_t tenths = (ps + 50) / 100;
	text_add_u64(t, tenths / 10);
	char frac[3] = {'.', (char)('0' + tenths % 10), '\0'};
	text_add(t, frac);
}

void cost_describe(struct text *t, const struct cost_ps *c, uint64_t counter_ps)
{
	text_add(t, "the kernel's clock costs ");
	cost_add_ns(t, c->kernel);
	text_add(t, cost_kernel_path(c) == KERNEL_PATH_SYSCALL ? " ns here (a system call), the counter "
							      : " ns here, the counter ");
	cost_add_ns(t, counter_ps);
	text_add(t, " ns");
}

bool cost_pays(const struct cost_ps *c, bool fenced, unsigned min_gain_pct)
{
	return benefit_pays(c->kernel / 1e3, (fenced ? c->fenced : c->unfenced) / 1e3, min_gain_pct);
}
