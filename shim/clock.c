/* The served clocks: a published piecewise-linear map from counter to time, its hot path,
 * and its re-synchronization with the kernel's clocks.
 *
 * Invariants:
 *  - Publication is a two-copy latch: the writer fills the copy readers are not using,
 *    then bumps the sequence. A reader never waits for a writer, so a signal handler
 *    that interrupted its own thread's writer still completes.
 *  - Each publication carries two segments: the new one, starting at a counter value
 *    `start` that lies at or after the previous segment's hard end, and the previous one
 *    for counter values before `start`. Readers never evaluate a segment past its hard
 *    end (`until`, they clamp there). A new segment's base is never below the previous
 *    segment's value at its hard end. So every reader, whichever copy it saw, computes
 *    the same non-decreasing function of the counter, or that function clamped at an
 *    earlier point: per-thread monotonicity holds across re-synchronizations without
 *    any assumption about when the writer runs.
 *  - The hot path takes no lock, makes no system call, writes nothing shared.
 *  - One writer at a time, by try-lock; the others keep reading the current line.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "line.h"

#include "convert.h"
#include "counter.h"
#include "refclock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

struct published_line published;
struct clock_config clock_config;

/* The writer try-lock. A fork child must find it free: a thread of the parent may have
 * held it, and that thread does not exist in the child. It lives on a page of its own that
 * the kernel wipes in a fork child (MADV_WIPEONFORK), which costs nothing at load;
 * pthread_atfork would allocate, the first malloc of many processes (0.1-0.2 ms here).
 * Before clock_start, and where the kernel lacks the advice, it points at a static word
 * and pthread_atfork resets it. */
static _Atomic int fallback_lock;
static _Atomic int *writer_busy = &fallback_lock;

static void lock_reset_in_child(void)
{
	atomic_store(writer_busy, 0);
}

static void setup_fork_safe_lock(void)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED && madvise(page, 4096, MADV_WIPEONFORK) == 0) {
		writer_busy = page;
		return;
	}
	if (page != MAP_FAILED)
		munmap(page, 4096);
	pthread_atfork(NULL, NULL, lock_reset_in_child);
}

/* Writer-only state, guarded by writer_busy. */
enum { HISTORY = 16 };
static struct {
	long double rate[TRACKS];            /* the kernel's ns per tick, recently measured */
	struct {
		uint64_t counter, ns[TRACKS];
	} history[HISTORY];                  /* recent anchors, a ring */
	uint32_t history_next, history_used;
	uint64_t life_ticks;
	uint64_t reanchors_in_a_row;
	struct line current;                 /* what was last published */
} writer;

static struct {
	uint64_t watchdog_ns;
} config;

static _Atomic uint64_t resyncs, reanchors, fallbacks, largest_error_ns;

static void publish(const struct line *next)
{
	uint32_t seq = atomic_load_explicit(&published.seq, memory_order_relaxed);
	struct line *spare = &published.copy[(seq + 1) & 1];
	const uint64_t *from = (const uint64_t *)next;
	uint64_t *to = (uint64_t *)spare;
	for (size_t i = 0; i < sizeof *next / sizeof(uint64_t); i++)
		STORE(to[i], from[i]);
	atomic_store_explicit(&published.seq, seq + 1, memory_order_release);
	writer.current = *next;
}

/* The narrowest of three brackets of one kernel clock between two ordered counter reads. */
static void bracket(clockid_t clock, uint64_t *counter, uint64_t *width, uint64_t *ns)
{
	*width = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		struct timespec ts;
		uint64_t before = counter_read_ordered();
		real_clock_gettime(clock, &ts);
		uint64_t after = counter_read_ordered();
		if (after < before || after - before >= *width)
			continue;
		*width = after - before;
		*counter = before + (after - before) / 2;
		*ns = timespec_to_ns(&ts);
	}
}

static void take_anchor(struct anchor *a)
{
	uint64_t raw_counter, raw_width, raw_ns, width;
	bracket(CLOCK_MONOTONIC, &a->counter, &width, &a->ns[TRACK_MONO]);
	bracket(CLOCK_MONOTONIC_RAW, &raw_counter, &raw_width, &raw_ns);
	/* Bring RAW to the same counter point, a few hundred ns away, on its own slope. */
	long double shift = ((long double)raw_counter - (long double)a->counter) * writer.rate[TRACK_RAW];
	a->ns[TRACK_RAW] = (uint64_t)((long double)raw_ns - shift);

	uint64_t narrowest = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		struct timespec m1, r, b, m2;
		real_clock_gettime(CLOCK_MONOTONIC, &m1);
		real_clock_gettime(CLOCK_REALTIME, &r);
		real_clock_gettime(CLOCK_BOOTTIME, &b);
		real_clock_gettime(CLOCK_MONOTONIC, &m2);
		uint64_t lo = timespec_to_ns(&m1), hi = timespec_to_ns(&m2);
		if (hi - lo >= narrowest)
			continue;
		narrowest = hi - lo;
		a->realtime_lo = (int64_t)(timespec_to_ns(&r) - hi);
		a->realtime_hi = (int64_t)(timespec_to_ns(&r) - lo);
		a->boottime_lo = (int64_t)(timespec_to_ns(&b) - hi);
		a->boottime_hi = (int64_t)(timespec_to_ns(&b) - lo);
	}
}

static void remember_anchor(const struct anchor *a)
{
	writer.history[writer.history_next].counter = a->counter;
	for (int k = 0; k < TRACKS; k++)
		writer.history[writer.history_next].ns[k] = a->ns[k];
	writer.history_next = (writer.history_next + 1) % HISTORY;
	if (writer.history_used < HISTORY)
		writer.history_used++;
}

/* Called with writer_busy held. `now` is the caller's counter reading. */
static void resync(uint64_t now)
{
	struct anchor a;
	take_anchor(&a);

	/* The kernel's rate over a short recent baseline (at least 4 lives, about 2 ms at
	 * the default bound): long enough that bracket jitter matters little (~15 ppm), short
	 * enough to follow a frequency change by NTP or adjtimex within milliseconds. */
	for (uint32_t i = 1; i <= writer.history_used; i++) {
		uint32_t at = (writer.history_next + HISTORY - i) % HISTORY;
		uint64_t baseline = a.counter - writer.history[at].counter;
		if (baseline >= 4 * writer.life_ticks) {
			for (int k = 0; k < TRACKS; k++)
				writer.rate[k] = (long double)(a.ns[k] - writer.history[at].ns[k]) /
						 (long double)baseline;
			break;
		}
	}
	remember_anchor(&a);

	struct plan_inputs in = {
		.old = &writer.current,
		.anchor = &a,
		.now = now,
		.rate = {writer.rate[TRACK_MONO], writer.rate[TRACK_RAW]},
		.life_ticks = writer.life_ticks,
		.watchdog_ns = config.watchdog_ns,
		.reanchors_in_a_row = writer.reanchors_in_a_row,
	};
	struct plan plan;
	segment_plan(&in, &plan);
	if (plan.error_measured) {
		uint64_t magnitude = plan.error_ns < 0 ? (uint64_t)-plan.error_ns : (uint64_t)plan.error_ns;
		if (magnitude > atomic_load(&largest_error_ns))
			atomic_store(&largest_error_ns, magnitude);
	}
	if (plan.outcome == PLAN_REANCHOR || (plan.outcome == PLAN_STOP && plan.error_ns < 0)) {
		atomic_fetch_add(&reanchors, 1);
		writer.reanchors_in_a_row++;
	} else {
		writer.reanchors_in_a_row = 0;
	}
	if (plan.outcome == PLAN_STOP)
		atomic_fetch_add(&fallbacks, 1);
	else
		atomic_fetch_add(&resyncs, 1);
	publish(&plan.next);
}

bool clock_try_resync(uint64_t now)
{
	if (atomic_exchange_explicit(writer_busy, 1, memory_order_acquire) != 0)
		return false;
	/* Another caller may have finished a re-synchronization meanwhile. */
	if (now >= writer.current.expiry && writer.current.active)
		resync(now);
	atomic_store_explicit(writer_busy, 0, memory_order_release);
	return true;
}

int clock_start(const struct line_setup *setup, char *err, size_t err_size)
{
	clock_config.fenced = setup->fenced;
	setup_fork_safe_lock();
	/* Beyond this the disagreement is not drift but a broken counter or a paused VM. */
	config.watchdog_ns = setup->max_error_ns * 100 > 1000000 ? setup->max_error_ns * 100 : 1000000;

	writer.rate[TRACK_MONO] = writer.rate[TRACK_RAW] = setup->ns_per_tick;
	/* A segment is used for two lives (to its expiry, then until the next segment takes
	 * over); in that time the kernel may slew by 500 ppm and our rate may be off by a
	 * little: keep 2 lives x 1000 ppm within the error bound. */
	long double life_ns = (long double)setup->max_error_ns / (2 * 1000e-6L);
	if (life_ns > (long double)setup->resync_ms * 1e6L)
		life_ns = (long double)setup->resync_ms * 1e6L;
	if (setup->served & (1u << SERVED_REALTIME) && life_ns > 4e6L)
		life_ns = 4e6L; /* a wall-clock step shows within 2 lives: under 10 ms */
	writer.life_ticks = (uint64_t)(life_ns / setup->ns_per_tick);
	if (writer.life_ticks == 0) {
		snprintf(err, err_size, "the re-synchronization interval rounds to zero ticks");
		return -1;
	}

	struct anchor a;
	take_anchor(&a);
	remember_anchor(&a);

	struct line first;
	segment_first(&first, &a, setup->ns_per_tick, writer.life_ticks);
	publish(&first);
	/* Opened last: until now every call went to the real function. */
	uint32_t by_id = 0;
	static const clockid_t ids[SERVED_CLOCK_COUNT] = {
		[SERVED_MONOTONIC] = CLOCK_MONOTONIC, [SERVED_MONOTONIC_RAW] = CLOCK_MONOTONIC_RAW,
		[SERVED_BOOTTIME] = CLOCK_BOOTTIME, [SERVED_REALTIME] = CLOCK_REALTIME};
	for (int i = 0; i < SERVED_CLOCK_COUNT; i++)
		if (setup->served & (1u << i))
			by_id |= 1u << ids[i];
	atomic_store_explicit(&clock_config.served_ids, by_id, memory_order_release);
	return 0;
}

int clock_read_slow(clockid_t clock, struct timespec *ts, uint64_t t)
{
	enum track k = clock == CLOCK_MONOTONIC_RAW ? TRACK_RAW : TRACK_MONO;
	for (;;) {
		uint32_t seq = atomic_load_explicit(&published.seq, memory_order_acquire);
		const struct line *p = &published.copy[seq & 1];
		const struct segment *sp = t >= LOAD(p->cur.start) ? &p->cur : &p->prev;
		struct segment s;
		s.start = LOAD(sp->start);
		s.until = LOAD(sp->until);
		s.base[k] = LOAD(sp->base[k]);
		s.mult[k] = LOAD(sp->mult[k]);
		s.shift[k] = LOAD(sp->shift[k]);
		uint64_t active = LOAD(p->active);
		uint64_t expiry = LOAD(p->expiry);
		uint64_t offset = clock == CLOCK_REALTIME ? LOAD(p->realtime_offset)
				: clock == CLOCK_BOOTTIME ? LOAD(p->boottime_offset) : 0;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&published.seq, memory_order_relaxed) != seq)
			continue; /* a writer published twice meanwhile: read again */
		if (!active)
			return 0;
		if (t >= expiry && clock_try_resync(t)) {
			/* We published a new line: take a fresh reading on it. */
			t = read_counter();
			continue;
		}
		ns_to_timespec(segment_value(&s, k, t) + offset, ts);
		return 1;
	}
}

void clock_counters(struct clock_counters *out)
{
	uint32_t seq = atomic_load_explicit(&published.seq, memory_order_acquire);
	const struct line *p = &published.copy[seq & 1];
	out->active = (int)LOAD(p->active);
	out->mult = LOAD(p->cur.mult[TRACK_MONO]);
	out->shift = (uint32_t)LOAD(p->cur.shift[TRACK_MONO]);
	out->resyncs = atomic_load(&resyncs);
	out->reanchors = atomic_load(&reanchors);
	out->fallbacks = atomic_load(&fallbacks);
	out->largest_error_ns = atomic_load(&largest_error_ns);
}
