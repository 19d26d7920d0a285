/* The published line and the hot path that reads it, inline so that the interposed entry
 * points pay no call. See shim/clock.c for the invariants. */
#ifndef SHIM_LINE_H
#define SHIM_LINE_H

#include "convert.h"
#include "counter.h"
#include "segment.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct published_line {
	_Atomic uint32_t seq;
	struct line copy[2];
};

struct clock_config {
	_Atomic uint32_t served_ids; /* bit per clockid (< 32) served from the counter */
	bool fenced;
};

extern struct published_line published;
extern struct clock_config clock_config;

/* Takes the writer try-lock and re-synchronizes if the line is still expired. Returns
 * false if another caller holds the lock. */
bool clock_try_resync(uint64_t now);

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

static inline uint64_t read_counter(void)
{
	return clock_config.fenced ? counter_read_ordered() : counter_read_unfenced();
}

/* The rare cases, out of line: inactive, expired, or a counter value before the current
 * segment (a thread preempted between its read and its load of the line). */
int clock_read_slow(clockid_t clock, struct timespec *ts, uint64_t t);

static inline void ns_to_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

/* 1 with *ts filled when the clock is served from the counter; 0: call the real function.
 * The counter is read before the line: every publication describes the same function of
 * the counter (or that function clamped earlier), so the order does not change the value,
 * and the line's loads then overlap the ordered read instead of preceding it. Nothing the
 * fast path loads depends on the counter value; one unsigned compare sends every rare
 * case to clock_read_slow(). */
static inline int clock_read(clockid_t clock, struct timespec *ts)
{
	uint32_t served = atomic_load_explicit(&clock_config.served_ids, memory_order_relaxed);
	if ((unsigned)clock >= 32 || !((served >> clock) & 1))
		return 0;
	enum track k = clock == CLOCK_MONOTONIC_RAW ? TRACK_RAW : TRACK_MONO;

	uint64_t t = read_counter();
	uint32_t seq = atomic_load_explicit(&published.seq, memory_order_acquire);
	const struct line *p = &published.copy[seq & 1];
	uint64_t start = LOAD(p->cur.start);
	uint64_t base = LOAD(p->cur.base[k]);
	uint64_t mult = LOAD(p->cur.mult[k]);
	uint64_t shift = LOAD(p->cur.shift[k]);
	uint64_t active = LOAD(p->active);
	uint64_t expiry = LOAD(p->expiry);
	uint64_t offset = clock == CLOCK_REALTIME ? LOAD(p->realtime_offset)
			: clock == CLOCK_BOOTTIME ? LOAD(p->boottime_offset) : 0;
	atomic_thread_fence(memory_order_acquire);
	if (__builtin_expect(atomic_load_explicit(&published.seq, memory_order_relaxed) != seq ||
			     !active || t - start >= expiry - start, 0))
		return clock_read_slow(clock, ts, t);
	struct conversion c = {.mult = mult, .shift = (uint32_t)shift};
	ns_to_timespec(base + conversion_apply(&c, t - start) + offset, ts);
	return 1;
}

#endif
