/* The published line, its reader helpers and the hot path, inline so that the interposed
 * entry points pay no call. The storage is defined in shim/line.c; the writer side is in
 * shim/clock.c and the rooms its opening names, the slow part of a read in
 * shim/slow_path.c (clock_read_slow).
 *
 * The publication protocol (the state word, the slots, who may write which, why no
 * reader waits and time never goes back) is stated once, in shim/publish.c's opening
 * comment, beside the code that keeps it; a reader here keeps its side of it: it copies
 * a slot and validates the copy by reading the state again (line_read_retry). */
#ifndef SHIM_LINE_H
#define SHIM_LINE_H

#include "clocks.h"
#include "convert.h"
#include "counter.h"
#include "segment.h"

#include <stdatomic.h>
#include <stddef.h>
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
_Static_assert(offsetof(struct line_forms, prev) == offsetof(struct line_forms, cur) + sizeof(struct read_range[TRACKS]),
	       "a track's prev range is its cur range + TRACKS (clock_read_as)");

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
/* Three: the decision's buffers (shim/record.c) hold two builds' costs, each with its
 * read plan; what a decision writes in the common case stays on the first two. */
enum { FORK_WIPED_PAGES = 3 };
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
	uint8_t read_plan; /* how the served path reads the counter (clock_read_as) */
	/* The hypervisor's disruption marker (shim/disruption.h): where it is (NULL: no
	 * vmclock device watched, as on most hosts), and its value when the published line
	 * was anchored. A served read whose marker differs takes the slow path. */
	const uint64_t *disruption_marker;
	uint64_t disruption_seen;
};
_Static_assert(sizeof(struct clock_config) == 64, "the configuration fills its cache line, alone");

/* Hidden, so that every access is relative to the instruction pointer: the hot path
 * needs no pointer from the GOT to reach them. (A default-visibility extern is reached
 * through the GOT, and the linker does not relax that load for an object in .lbss, a
 * large-data section.) */
#pragma GCC visibility push(hidden)
extern struct line_slot line_slots[LINE_SLOTS];
extern struct fork_wiped wiped;
extern struct clock_config clock_config;
#pragma GCC visibility pop

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* The counter, read with the configured instruction (the writer and the slow path). */
static inline uint64_t read_counter(void)
{
	return counter_read_as((enum counter_read)(LOAD(clock_config.read_plan) & 3));
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
	READ_SLOW,   /* served, but only clock_read_slow() can say what: the rare cases, out
	              * of line (no line yet or a fork child, inactive, expired or past the
	              * hard end, a counter value before the line's ranges, or a line replaced
	              * while it was read) */
};

/* How the served path reads the counter (clock_config.read_plan): the instruction, an
 * enum counter_read, and with READ_COUNTER_FIRST, the counter before the line's loads
 * rather than after them. Which order is cheaper depends on the CPU: an ordered read
 * waits for the loads issued before it, so on a CPU that overlaps the loads after it
 * with its own latency (AMD EPYC measured) reading the counter first is cheaper, and on
 * one whose ordered read holds back the instructions after it (Intel Xeons, as reported)
 * loading first is. shim/cost.c measures every fenced plan and the decision keeps the
 * cheapest; where nothing was measured, DEFAULT_FENCED_PLAN. Any plan is correct for
 * any line: only the cost differs. */
enum {
	READ_COUNTER_FIRST = 4,
	DEFAULT_FENCED_PLAN = COUNTER_READ_LFENCE | READ_COUNTER_FIRST,
	READ_PLANS = 8,
	READ_PLAN_AS_CONFIGURED = -1, /* clock_read_as: as clock_config says */
};

static inline bool read_plan_valid(unsigned plan)
{
	return plan < READ_PLANS && (plan & 3) <= COUNTER_READ_RDTSCP;
}

/* The plan a read uses: the configured one, or the caller's (cost.c times each). */
static inline __attribute__((always_inline)) unsigned read_plan_for(int plan_override)
{
	return plan_override == READ_PLAN_AS_CONFIGURED ? LOAD(clock_config.read_plan) : (unsigned)plan_override;
}

/* The inline part of a read: the rare cases return READ_SLOW and the caller finishes
 * them out of line, so that no call and none of the slow path's code sits in line.
 *
 * A seqlock read: the state, the current range's bounds, the counter (first or after
 * the bounds, as the plan says), the form, the state again. The state names the slot,
 * so every later load is one step from an address known at once: no chain of dependent
 * loads (the state's address from the GOT, the state, the slot) sits between the
 * counter read and the result. Each range (struct read_range) is one cache line that
 * says which counter values it serves and how, so a read needs no other field of the
 * line, and few values are live at once: the path needs no stack frame.
 *
 * Fenced, the counter is read after every earlier load of the thread (before or after
 * the state load, as planned): a thread that saw another's value then reads that
 * value's line or a newer one, and a counter value no older; every line is pointwise at
 * or above the one before it (shim/publish.c says why that suffices, in either order).
 *
 * A new line's segment starts where the old one's hard end was, so for about one life
 * in two the counter is before cur.start: the prev range serves it, in line, wherever
 * line_seal() found no floor or clamp to apply (the branch is predicted: runs of each
 * last a life, and the prev range's loads issue under the prediction). One unsigned
 * compare per range sends every rare case to the slow path. */
static inline __attribute__((always_inline)) enum read_result
clock_read_as(clockid_t id, struct timespec *ts, unsigned *served, int plan_override, const void *caller_out)
{
	/* Unlikely, so that a valid id falls through to the served test: a call the
	 * counter does not serve takes that test's one branch, no other. */
	if (__builtin_expect((unsigned)id >= CLOCK_ID_LIMIT, 0))
		return READ_PASS;
	/* Acquire (a plain load on x86): a thread that finds its clock served sees everything
	 * clock_start wrote before it opened the path (release), the configuration the slow
	 * path reads among it, even when the decision ran in another thread moments ago. */
	unsigned c = __atomic_load_n(&clock_config.served_index[id], __ATOMIC_ACQUIRE);
	if (!c)
		return READ_PASS;
	/* The caller's NULL pointer, tested after the served test (a call the counter does
	 * not serve takes one branch to its pass target, a NULL goes there too, to get what
	 * the real function does with it) and laundered (glibc declares it nonnull, so the
	 * compiler would drop the test). */
	__asm__("" : "+r"(caller_out));
	if (caller_out == NULL)
		return READ_PASS;
	c--;
	/* After that acquire: the plan clock_start set before it opened the path. */
	uint64_t t, w, from, span;
	const struct line_slot *s;
	const struct read_range *r;
	unsigned plan = read_plan_for(plan_override);
	if (plan & READ_COUNTER_FIRST) {
		t = counter_read_as((enum counter_read)(plan & 3));
		w = slot_read_begin(&s);
		r = &s->forms.cur[c];
		from = LOAD(r->from), span = LOAD(r->span);
	} else {
		w = slot_read_begin(&s);
		r = &s->forms.cur[c];
		from = LOAD(r->from), span = LOAD(r->span);
		/* The loads above stay above the counter read, unfenced too (order of issue);
		 * the plan is loaded again rather than kept in a register across them (either
		 * value is correct). */
		__asm__ __volatile__("" ::: "memory");
		t = counter_read_as((enum counter_read)(read_plan_for(plan_override) & 3));
	}
	if (__builtin_expect(t - from >= span, 0)) {
		/* Not in [cur.start, expiry): before cur.start, prev may serve it. Reached
		 * from r itself (prev[c] is cur[c] + TRACKS), so nothing else stays live. */
		r += TRACKS;
		if (t - LOAD(r->from) >= LOAD(r->span))
			goto slow;
	}
	/* The form, field by field in the order they are used, so that each value lives
	 * in a register only as long as it must: the multiply-shift is done on values not
	 * yet validated (harmless: a torn result is dropped), so that only its result and
	 * the bases live across the second load of the state (split_conversion_apply's
	 * steps; a pre-shift is only for counters slower than 1 GHz). Every value a slot
	 * holds, torn or not, is a field of some sealed form or 0, so the shifts are in range;
	 * masked all the same, which costs nothing (x86 masks shift counts itself). */
	uint64_t delta = t - LOAD(r->start);
	uint64_t pre_shift = LOAD(r->form.pre_shift);
	if (__builtin_expect(pre_shift != 0, 0)) {
		__asm__("" : "+r"(delta));
		delta <<= pre_shift & 63;
	}
	uint64_t mult = LOAD(r->form.mult), post_shift = LOAD(r->form.post_shift);
	uint64_t elapsed_ns = (uint64_t)(((unsigned __int128)delta * mult) >> 64) >> (post_shift & 63);
	uint64_t base_nsec = LOAD(r->form.base_nsec), base_sec = LOAD(r->form.base_sec);
	/* The decisions above may rest on a torn line; this validates them with the form. */
	if (__builtin_expect(line_read_retry(w), 0))
		goto slow;
	/* Where the hypervisor's vmclock is watched: a marker changed since the line was
	 * anchored (a migration) sends the read to the slow path, which stops the line and
	 * measures the rate again. After the counter read in program order: a guest is
	 * paused between instructions, so a counter read after the resume is followed by a
	 * marker load after it. Elsewhere one load of this cache line, which the served
	 * test brought in, and a branch that is never taken. */
	const uint64_t *marker = LOAD(clock_config.disruption_marker);
	if (__builtin_expect(marker != NULL, 0) &&
	    __atomic_load_n(marker, __ATOMIC_RELAXED) != LOAD(clock_config.disruption_seen))
		goto slow;
	split_conversion_store(base_sec, base_nsec + elapsed_ns, ts);
	*served = c; /* the caller's count of served calls */
	return READ_SERVED;
slow:
	/* clock_read_slow() reads the counter again: a later value is as good, and t would
	 * be one more register to keep to here. */
	*served = c;
	return READ_SLOW;
}

/* The read the entry points make: as configured. */
static inline __attribute__((always_inline)) enum read_result
clock_read(clockid_t id, struct timespec *ts, unsigned *served, const void *caller_out)
{
	return clock_read_as(id, ts, served, READ_PLAN_AS_CONFIGURED, caller_out);
}

#endif
