#include "floor.h"

#include "convert.h"
#include "counter.h"
#include "refclock.h"

/* The shim's read form (calib/convert.h), so that the floor is its arithmetic exactly. */
static struct split_conversion floor_form;
static uint64_t floor_start;

void floor_setup(uint64_t rate_millihz)
{
	struct conversion c;
	conversion_from_rate(&c, rate_millihz);
	floor_start = counter_read_ordered();
	split_conversion_from(&floor_form, refclock_now_ns(CLOCK_MONOTONIC), &c, conversion_max_delta(&c));
}

static inline void floor_timespec(bool fenced, struct timespec *ts)
{
	uint64_t t = fenced ? counter_read_ordered() : counter_read_unfenced();
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
