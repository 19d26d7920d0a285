#include "floor.h"

#include "convert.h"
#include "counter.h"
#include "refclock.h"

static struct conversion floor_conv;
static uint64_t floor_start, floor_base;

void floor_setup(uint64_t rate_millihz)
{
	conversion_from_rate(&floor_conv, rate_millihz);
	floor_start = counter_read_ordered();
	floor_base = refclock_now_ns(CLOCK_MONOTONIC);
}

static inline uint64_t floor_ns(bool fenced)
{
	uint64_t t = fenced ? counter_read_ordered() : counter_read_unfenced();
	return floor_base + conversion_apply(&floor_conv, t - floor_start);
}

__attribute__((noinline)) int floor_read(struct timespec *ts, bool fenced)
{
	ns_to_timespec(floor_ns(fenced), ts);
	return 0;
}

__attribute__((noinline)) int floor_read_tv(struct timeval *tv, bool fenced)
{
	uint64_t ns = floor_ns(fenced);
	tv->tv_sec = (time_t)(ns / 1000000000u);
	tv->tv_usec = (suseconds_t)(ns % 1000000000u / 1000u);
	return 0;
}
