/* The floor: the cheapest form of the shim's own work on a served read, which the shim's
 * rows are compared with. It is the shim's read less its line: the counter read with one
 * of the shim's read plans, and the shim's arithmetic on it (subtract, one multiply-shift,
 * the split into a timespec or timeval, calib/convert.h), on a read form it renews as the
 * shim renews its line's. `tscshim bench` times it beside each shim variant, in the same
 * process, with the plan that shim serves with; `tscshim calib` times it as the shim's
 * benefit gate times the shim's own path, with the plan the shim's measurement kept.
 *
 * What it leaves out, and so what the shim's row over it measures: the served test, the
 * state and the range loads, the range check, the state's second load, the counting. */
#ifndef CLI_FLOOR_H
#define CLI_FLOOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* A read plan as struct tscshim_status's read_plan encodes it (include/tscshim.h, the
 * shim's own encoding, shim/line.h): bits 0-1 the instruction (enum counter_read: 0
 * rdtsc, 1 lfence; rdtsc, 2 rdtscp), FLOOR_COUNTER_FIRST set where the counter is read
 * before the loads of the form rather than after them (the shim's: before or after its
 * line's loads). */
enum { FLOOR_COUNTER_FIRST = 4, FLOOR_PLANS = 8, FLOOR_NO_PLAN = -1 };

bool floor_plan_valid(int plan);
/* Whether a plan's read is ordered (lfence; rdtsc or rdtscp). */
bool floor_plan_fenced(int plan);
/* "rdtscp, counter first", "lfence; rdtsc, counter after the loads", ...; "none" where
 * the plan is not valid. */
const char *floor_plan_name(int plan);

/* The plan a floor reads with, fenced or not as its row: the shim's own (shim_plan, from
 * its status or its cost measurement) where it is one of that kind; else the cheapest of
 * the plans measured (cost_ps[plan], ps per read, 0 where not measured: the fenced plans
 * in the shim's order of preference, a tie keeping the earlier), and where none was, the
 * shim's default (lfence; rdtsc, counter first). Unfenced without the shim's plan:
 * rdtsc after the loads, the shim's unfenced plan. Pure. */
int floor_plan_pick(bool fenced, int shim_plan, const uint64_t cost_ps[FLOOR_PLANS]);

/* Once before any read: the conversion at rate_millihz. */
void floor_setup(uint64_t rate_millihz);

/* Renews the read form once it is older than the shim's line lives (4 ms, as the shim's
 * lines live while it serves CLOCK_REALTIME): a form that outlives its second makes every
 * read normalize the split (a division by 10^9), which the shim's reads almost never do.
 * Outside the timed blocks: before each one. Any thread; one renews, the others read the
 * old form meanwhile. */
void floor_renew(void);

/* One function per plan, the plan a constant in each, as the shim's entry points have it
 * once their branch on the plan is predicted; called through the pointer as the shim's
 * entry points are through the GOT. NULL for a plan that is not valid. */
typedef int floor_fn(struct timespec *ts);
typedef int floor_tv_fn(struct timeval *tv);
floor_fn *floor_reader(int plan);

/* Ticks for n calls of fn, the form renewed first and the timer's two ordered reads
 * included (shim/cost.c's block). */
uint64_t floor_block(floor_fn *fn, int n);
floor_tv_fn *floor_reader_tv(int plan);

/* The plan for a floor beside a shim that serves with shim_plan (FLOOR_NO_PLAN: none):
 * floor_plan_pick(), measuring the floor's own fenced plans only where the shim's cannot
 * stand (about 100 us; rdtscp's plans only where the CPU has it). After floor_setup(). */
int floor_plan_for(bool fenced, int shim_plan);

/* The form as the floor keeps it: exported for the unit test of its renewal. */
struct floor_form {
	uint64_t start;       /* the counter value the form's base is of */
	uint64_t until;       /* renewed from here on */
	uint64_t base_ns;     /* the value at start */
	uint64_t base_sec, base_nsec, mult, pre_shift, post_shift; /* calib/convert.h's split form */
};
/* The form after `now`, from the one before, at the conversion (mult, shift) and a life of
 * life_ticks: the same one where now is before its until, else one based at now, its
 * value carried on from the old form. Returns whether it was renewed. Pure. */
struct conversion;
bool floor_form_next(const struct floor_form *old, uint64_t now, const struct conversion *c,
		     uint64_t life_ticks, struct floor_form *out);

#endif
