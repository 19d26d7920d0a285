/* The published line, its reader helpers and the hot path, inline so that the interposed
 * entry points pay no call. The storage is defined in shim/line.c; the writer side, and
 * the slow part of a read, are in shim/clock.c.
 *
 * Publication (the argument for each rule is in shim/clock.c):
 *  - Lines live in LINE_SLOTS slots. One 64-bit state word names the current slot and a
 *    version: (version << STATE_SLOT_BITS) | slot. Slot 0 never holds a line: it stays
 *    all zero, so a state of 0 (before the first line, and in a fork child, whose state
 *    page the kernel wipes) sends every read to the slow path at no extra cost.
 *  - A writer fills a slot nobody reads (claimed by compare-and-swap, never the current
 *    one) and publishes it by a compare-and-swap of the state that fails if anybody
 *    published, or a fallback committed, meanwhile: a stale writer's work is dropped.
 *  - A published slot is never modified until the state names another slot; a reader
 *    validates its copy by reading the state again (line_read_retry), so a slot that was
 *    freed and refilled while it read is never used.
 *  - Readers never wait. The hot path never writes; a reader that finds the line past
 *    its hard end reads the kernel's clock itself and may commit that value to the floor
 *    (clock_read_slow, fallback() in shim/clock.c). */
#ifndef SHIM_LINE_H
#define SHIM_LINE_H

#include "clocks.h"
#include "convert.h"
#include "counter.h"
#include "segment.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum { LINE_SLOTS = 16, STATE_SLOT_BITS = 4 };
#define STATE_VERSION_STEP ((uint64_t)1 << STATE_SLOT_BITS)

_Static_assert(LINE_SLOTS == 1 << STATE_SLOT_BITS, "the state word's slot field holds every slot");
_Static_assert(sizeof(struct line) % sizeof(uint64_t) == 0,
	       "lines are copied one 64-bit word at a time");
_Static_assert(_Alignof(struct line) == _Alignof(uint64_t), "a line is made of 64-bit words only");

/* A published line and its read forms (line_seal), both written before the state names
 * the slot and neither changed while it does. */
struct line_slot {
	_Alignas(64) struct line line;
	struct line_forms forms;
};
_Static_assert(sizeof(struct line_forms) % sizeof(uint64_t) == 0, "forms are 64-bit words too");

/* What a fork child must not inherit: the state (so it re-anchors before serving, in
 * case a time namespace moved its clocks), the slot claims (held by threads that do not
 * exist in the child) and the writer token. On pages of their own that the kernel wipes
 * in a fork child (MADV_WIPEONFORK).
 *
 * The rest of those pages is the decision's scratch (shim/record.c's record buffers):
 * the first read must write the first page anyway, and each fresh page costs a fault
 * (calib/load_page.h), so the records it reads share it. Nothing there outlives the
 * decision, which writes every buffer before reading it: a fork child that has to
 * decide afresh finds them zeroed (or, forked before the pages were marked, a copy),
 * and its own decision writes them again; nothing else reads them. Off the hot path's
 * cache lines: it starts two lines in. */
enum { FORK_WIPED_PAGES = 2 };
struct fork_wiped {
	/* One 16-byte pair, changed only by counter_cas_pair(): the state (which the hot
	 * path loads alone) and the floor, MONOTONIC's largest value a fallback handed out.
	 * Page-aligned, so that the structure fills a page of its own in .bss, at an address
	 * the hot path needs no pointer to reach. */
	_Alignas(4096) uint64_t state;
	uint64_t floor;
	_Atomic uint64_t writer_token;      /* counter value until which a writer has the turn */
	_Atomic uint32_t claim[LINE_SLOTS]; /* 1: being filled or published; 0: free */
	_Alignas(64) unsigned char decision_scratch[FORK_WIPED_PAGES * 4096 - 128];
};

/* Read by every call; a cache line of its own (the load page's writers stay off it). */
struct clock_config {
	_Alignas(64) uint8_t served_index[CLOCK_ID_LIMIT]; /* by clock id: served clock + 1; 0 not */
	bool fenced;
};
_Static_assert(sizeof(struct clock_config) == 64, "the configuration fills its cache line, alone");

extern struct line_slot line_slots[LINE_SLOTS];
extern struct fork_wiped wiped;
extern struct clock_config clock_config;

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static inline uint64_t read_counter_as(bool fenced)
{
	return fenced ? counter_read_ordered() : counter_read_unfenced();
}

/* The counter, read as the configuration says. */
static inline uint64_t read_counter(void)
{
	return read_counter_as(LOAD(clock_config.fenced));
}

/* Reader helpers, as the kernel's vDSO has them: begin returns the state and the slot
 * (or line) it names; after the fields are loaded, retry says whether they may be torn. */
static inline uint64_t slot_read_begin(const struct line_slot **s)
{
	uint64_t w = __atomic_load_n(&wiped.state, __ATOMIC_ACQUIRE);
	*s = &line_slots[w & (LINE_SLOTS - 1)];
	return w;
}

static inline uint64_t line_read_begin(const struct line **l)
{
	const struct line_slot *s;
	uint64_t w = slot_read_begin(&s);
	*l = &s->line;
	return w;
}

static inline bool line_read_retry(uint64_t w)
{
	atomic_thread_fence(memory_order_acquire);
	return __atomic_load_n(&wiped.state, __ATOMIC_RELAXED) != w;
}

/* What the inline part of a read found. */
enum read_result {
	READ_PASS,   /* not served: call the real function */
	READ_SERVED, /* *ts filled from the counter */
	READ_SLOW,   /* served, but only clock_read_slow() can say what: see the pending read */
};

/* What clock_read_slow() (shim/clock.h) needs to finish a READ_SLOW: the rare cases, out
 * of line (no line yet or a fork child, inactive, expired or past the hard end, a counter
 * value before the line's segments, or a line replaced while it was read). */
struct pending_read {
	unsigned clock; /* enum served_clock */
	uint64_t t;     /* the counter value read */
};

/* clock_read_as's fence: 0 unfenced, 1 fenced, or as clock_config says. */
enum { FENCE_AS_CONFIGURED = -1 };

/* The inline part of a read: the rare cases return READ_SLOW and the caller finishes
 * them out of line, so that no call and none of the slow path's code sits in line.
 * The counter is read before the line: every publication describes the same function of
 * the counter or one pointwise above it (calib/segment.h), so the order does not change
 * the value's guarantees, and the line's loads overlap the ordered read instead of
 * preceding it. A new line's segment starts where the old one's hard end was, so for
 * about one life in two the counter is before cur.start: prev serves it here, in line,
 * wherever line_seal() found no floor or clamp to apply. One unsigned compare per
 * segment sends every rare case to the slow path. */
static inline __attribute__((always_inline)) enum read_result
clock_read_as(clockid_t id, struct timespec *ts, struct pending_read *pending, int fence)
{
	if ((unsigned)id >= CLOCK_ID_LIMIT)
		return READ_PASS;
	/* Acquire (a plain load on x86): a thread that finds its clock served sees everything
	 * clock_start wrote before it opened the path (release), the configuration the slow
	 * path reads among it, even when the decision ran in another thread moments ago. */
	unsigned c = __atomic_load_n(&clock_config.served_index[id], __ATOMIC_ACQUIRE);
	if (!c)
		return READ_PASS;
	c--;
	/* After that acquire: the fence clock_start set before it opened the path. */
	bool fenced = fence == FENCE_AS_CONFIGURED ? LOAD(clock_config.fenced) : fence != 0;

	uint64_t t = read_counter_as(fenced);
	const struct line_slot *s;
	uint64_t w = slot_read_begin(&s);
	const struct line *l = &s->line;
	uint64_t start = LOAD(l->cur.start);
	const struct split_conversion *p = &s->forms.cur[c];
	if (__builtin_expect(t - start >= LOAD(l->expiry) - start, 0)) {
		/* Before cur.start: prev serves [prev_direct_from, cur.start) in line. A value
		 * past expiry is not in that range either (prev_direct_from <= cur.start). */
		uint64_t from = LOAD(l->prev_direct_from);
		if (t - from >= start - from)
			goto slow;
		start = LOAD(l->prev.start);
		p = &s->forms.prev[c];
	}
	struct split_conversion form = {
		.base_sec = LOAD(p->base_sec),
		.base_nsec = LOAD(p->base_nsec),
		.mult = LOAD(p->mult),
		.pre_shift = LOAD(p->pre_shift),
		.post_shift = LOAD(p->post_shift),
	};
	/* The decisions above may rest on a torn line; this validates them with the form. */
	if (__builtin_expect(line_read_retry(w), 0))
		goto slow;
	split_conversion_apply(&form, t - start, ts);
	return READ_SERVED;
slow:
	pending->clock = c;
	pending->t = t;
	return READ_SLOW;
}

/* The read the entry points make: fenced or not as configured. */
static inline __attribute__((always_inline)) enum read_result
clock_read(clockid_t id, struct timespec *ts, struct pending_read *pending)
{
	return clock_read_as(id, ts, pending, FENCE_AS_CONFIGURED);
}

#endif
