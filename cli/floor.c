#include "floor.h"

#include "convert.h"
#include "counter.h"
#include "refclock.h"

/* The shim's read form (calib/convert.h), so that the floor is its arithmetic exactly. */
static struct split_conversion floor_form;
static uint64_t floor_start;
/* The cheaper ordered read on this CPU, as the shim's cost measurement finds it: the
 * fenced floor is what the shim could reach with its own best plan. */
static enum counter_read floor_ordered = COUNTER_READ_LFENCE;

/* Ticks for n ordered reads of one kind. */
static uint64_t ordered_reads(enum counter_read how, int n)
{
	uint64_t before = counter_read_ordered();
	for (int i = 0; i < n; i++)
		(void)counter_read_as(how);
	return counter_read_ordered() - before;
}

static enum counter_read cheaper_ordered_read(void)
{
	if (!counter_has_rdtscp())
		return COUNTER_READ_LFENCE;
	uint64_t lfence = UINT64_MAX, rdtscp = UINT64_MAX;
	for (int round = 0; round < 15; round++) { /* interleaved; the best of each */
		uint64_t l = ordered_reads(COUNTER_READ_LFENCE, 256), r = ordered_reads(COUNTER_READ_RDTSCP, 256);
		lfence = l < lfence ? l : lfence;
		rdtscp = r < rdtscp ? r : rdtscp;
	}
	return rdtscp < lfence ? COUNTER_READ_RDTSCP : COUNTER_READ_LFENCE;
}

void floor_setup(uint64_t rate_millihz)
{
	struct conversion c;
	conversion_from_rate(&c, rate_millihz);
	floor_ordered = cheaper_ordered_read();
	floor_start = counter_read_ordered();
	split_conversion_from(&floor_form, refclock_now_ns(CLOCK_MONOTONIC), &c, conversion_max_delta(&c));
}

const char *floor_ordered_read(void)
{
	return floor_ordered == COUNTER_READ_RDTSCP ? "rdtscp" : "lfence; rdtsc";
}

static inline void floor_timespec(bool fenced, struct timespec *ts)
{
	uint64_t t = counter_read_as(fenced ? floor_ordered : COUNTER_READ_UNFENCED);
	split_conversion_apply(&floor_form, t - floor_start, ts);
}

__attribute__((noinline)) int floor_read(struct timespec *ts, bool fenced)
{
	floor_timespec(fenced, ts);
	return 0;
}

__attribute__((noinline)) int floor_read_tv(struct timeval *tv, bool fenced)
{
	struct timespec ts;
	floor_timespec(fenced, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
	return 0;
}
