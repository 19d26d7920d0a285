/* The floor (cli/floor.c): which read plan it takes, and that its read form is renewed as
 * the shim's line is, so that it never does more than the shim's read. Pure: nothing here
 * is timed. */
#include "floor.h"
#include "unit.h"

#include "convert.h"
#include "counter.h"

enum { LFENCE_FIRST = 5, LFENCE_AFTER = 1, RDTSCP_FIRST = 6, RDTSCP_AFTER = 2 };

static void test_plan_is_the_shims(void)
{
	/* Whatever fenced plan the shim serves with, the fenced floor reads with it, even
	 * where the floor's own measurement would pick another. */
	uint64_t cost[FLOOR_PLANS] = {[LFENCE_FIRST] = 100, [LFENCE_AFTER] = 100, [RDTSCP_FIRST] = 1, [RDTSCP_AFTER] = 100};
	const int fenced[] = {LFENCE_FIRST, LFENCE_AFTER, RDTSCP_FIRST, RDTSCP_AFTER};
	for (int i = 0; i < 4; i++) {
		CHECK_EQ_U64(floor_plan_pick(true, fenced[i], NULL), fenced[i]);
		CHECK_EQ_U64(floor_plan_pick(true, fenced[i], cost), fenced[i]);
	}
	/* The unfenced floor: the unfenced shim's plan, and never a fenced one. */
	CHECK_EQ_U64(floor_plan_pick(false, 0, NULL), 0);
	CHECK_EQ_U64(floor_plan_pick(false, FLOOR_COUNTER_FIRST, NULL), FLOOR_COUNTER_FIRST);
	CHECK_EQ_U64(floor_plan_pick(false, RDTSCP_FIRST, NULL), 0);
	CHECK_EQ_U64(floor_plan_pick(false, FLOOR_NO_PLAN, NULL), 0);
}

static void test_plan_without_the_shim(void)
{
	/* No plan from the shim, or one of the other kind, or none at all: the cheapest
	 * measured, a tie keeping the shim's order; nothing measured, the shim's default. */
	uint64_t cost[FLOOR_PLANS] = {[LFENCE_FIRST] = 100, [LFENCE_AFTER] = 90, [RDTSCP_FIRST] = 80, [RDTSCP_AFTER] = 80};
	CHECK_EQ_U64(floor_plan_pick(true, FLOOR_NO_PLAN, cost), RDTSCP_FIRST);
	CHECK_EQ_U64(floor_plan_pick(true, 0, cost), RDTSCP_FIRST);
	CHECK_EQ_U64(floor_plan_pick(true, 3, cost), RDTSCP_FIRST); /* instruction 3: no plan */
	uint64_t lfence_only[FLOOR_PLANS] = {[LFENCE_FIRST] = 100, [LFENCE_AFTER] = 100};
	CHECK_EQ_U64(floor_plan_pick(true, FLOOR_NO_PLAN, lfence_only), LFENCE_FIRST);
	CHECK_EQ_U64(floor_plan_pick(true, FLOOR_NO_PLAN, NULL), LFENCE_FIRST);
}

static void test_plans_and_readers(void)
{
	for (int p = -1; p <= FLOOR_PLANS; p++) {
		bool valid = p >= 0 && p < FLOOR_PLANS && (p & 3) != 3;
		CHECK(floor_plan_valid(p) == valid);
		CHECK((floor_reader(p) != NULL) == valid);
		CHECK((floor_reader_tv(p) != NULL) == valid);
		CHECK(floor_plan_fenced(p) == (valid && (p & 3) != 0));
	}
	/* Each reader a function of its own: the plan is a constant in its code. */
	for (int p = 0; p < FLOOR_PLANS; p++)
		for (int q = p + 1; q < FLOOR_PLANS; q++)
			if (floor_plan_valid(p) && floor_plan_valid(q))
				CHECK(floor_reader(p) != floor_reader(q));
}

/* A form as floor_form_next makes it from start, base and conversion c. */
static struct floor_form first_form(uint64_t start, uint64_t base, const struct conversion *c, uint64_t life)
{
	struct floor_form none = {.start = start, .until = 0, .base_ns = base}, f;
	CHECK(floor_form_next(&none, start, c, life, &f));
	return f;
}

/* ns the form gives delta ticks after its start, and whether the split had to carry. */
static uint64_t form_nsec(const struct floor_form *f, uint64_t delta)
{
	uint64_t high = (uint64_t)(((unsigned __int128)(delta << f->pre_shift) * f->mult) >> 64);
	return f->base_nsec + (high >> f->post_shift);
}

static void test_form_renewed(void)
{
	/* 2.5 GHz; 4 ms lives; a base 1 ms before the end of its second. */
	struct conversion c;
	conversion_from_rate(&c, 2500000000000ull);
	uint64_t life = 10000000, start = 1000000;
	uint64_t base = 7 * 1000000000ull + 999000000ull;
	struct floor_form f = first_form(start, base, &c, life);
	CHECK_EQ_U64(f.start, start);
	CHECK_EQ_U64(f.until, start + life);
	CHECK_EQ_U64(f.base_sec, 7);
	CHECK_EQ_U64(f.base_nsec, 999000000);

	/* Within its life: kept. */
	struct floor_form same;
	CHECK(!floor_form_next(&f, start + life - 1, &c, life, &same));
	CHECK_EQ_U64(same.start, f.start);
	CHECK_EQ_U64(same.base_ns, f.base_ns);

	/* 10.001 s on, a form never renewed carries into the next second on every read (the
	 * shim's read does that only in a life that straddles a second); renewed, it starts
	 * there, its value carried on (18.000 s), and a read within its life does not. */
	uint64_t now = start + 25002500000ull;
	CHECK(form_nsec(&f, now - start) >= NSEC_PER_SEC);
	struct floor_form next;
	CHECK(floor_form_next(&f, now, &c, life, &next));
	CHECK_EQ_U64(next.start, now);
	CHECK_EQ_U64(next.until, now + life);
	CHECK_EQ_U64(next.base_ns, base + conversion_apply(&c, now - start));
	CHECK_EQ_U64(next.base_sec * NSEC_PER_SEC + next.base_nsec, next.base_ns);
	CHECK_EQ_U64(next.mult, f.mult);
	CHECK_EQ_U64(next.post_shift, f.post_shift);
	CHECK(form_nsec(&next, life - 1) - next.base_nsec <= 4000000);
	CHECK(form_nsec(&next, life - 1) < NSEC_PER_SEC);
}

static void test_reads(void)
{
	/* Every reader after floor_setup: a timespec or timeval in range, never going back
	 * within one plan (one thread). rdtscp's plans only where the CPU has it. */
	floor_setup(2500000000000ull);
	floor_renew();
	bool rdtscp = counter_has_rdtscp();
	for (int p = 0; p < FLOOR_PLANS; p++) {
		if (!floor_plan_valid(p) || (!rdtscp && (p & 3) == COUNTER_READ_RDTSCP))
			continue;
		struct timespec a, b;
		struct timeval tv;
		CHECK(floor_reader(p)(&a) == 0);
		CHECK(floor_reader(p)(&b) == 0);
		CHECK(floor_reader_tv(p)(&tv) == 0);
		CHECK(a.tv_nsec >= 0 && a.tv_nsec < 1000000000 && b.tv_nsec >= 0 && b.tv_nsec < 1000000000);
		CHECK(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
		CHECK(b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec));
	}
}

int main(void)
{
	unit_run("the floor reads with the shim's plan, of its own kind", test_plan_is_the_shims);
	unit_run("without the shim's plan, the cheapest measured or the default", test_plan_without_the_shim);
	unit_run("a reader for each valid plan, none for the others", test_plans_and_readers);
	unit_run("the floor's form is renewed after its life, its value carried on", test_form_renewed);
	unit_run("every reader reads", test_reads);
	return unit_finish();
}
