/* The served clocks' writer side, its door: starting the clock (clock_start: the fork
 * wiping of the state's pages, the line's tunables, the first line, then opening the
 * served clocks), closing it, and the counters of what happened (clock_counters). Owns
 * the fork wiping and the opening and closing of the served clocks
 * (clock_config.served_index). The rooms behind it, each one concern, lowest first
 * (shim/LAYERS): the shared state (shim/clock_state.c), anchors (shim/anchor.c), the
 * published line's slots and the publication protocol's rules (shim/publish.c),
 * re-synchronization, recovery and resumption (shim/resync.c), the slow part of a read
 * (shim/slow_path.c). The hot path and the reader helpers are in shim/line.h; the maths
 * of each plan in calib/segment.c. This file plans nothing, publishes nothing itself
 * and reads no clock: it calls recover() for the first line. */
#define _GNU_SOURCE
#include "clock.h"

#include "clock_state.h"
#include "disruption.h"
#include "line.h"
#include "resync.h"
#include "say.h"

#include "libc_kind.h"
#include "raw_syscall.h"

#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* ---- fork ---- */

static void wiped_reset_in_child(void)
{
	/* The state, the claims and the token; not the decision's scratch, which every
	 * decision writes before it reads, and whose second page the child would otherwise
	 * fault in for nothing. */
	memset(&wiped, 0, offsetof(struct fork_wiped, decision_scratch));
}

/* The page is .bss past the file's end: private and anonymous, so the kernel can wipe it
 * in a fork child. pthread_atfork, the alternative, would allocate: the first malloc of many
 * processes (0.1-0.2 ms), and it misses children made by a raw clone or _Fork. */
static void setup_fork_wiped(void)
{
	/* The system call itself (raw_syscall.h): libc's madvise is a page of libc few
	 * programs touch. */
	if (raw_syscall4(SYS_madvise, (long)&wiped, sizeof wiped, MADV_WIPEONFORK, 0) != 0)
		libc_atfork_child(wiped_reset_in_child);
}

/* ---- start and counters ---- */

int clock_start(const struct line_setup *setup, const char **err)
{
	clock_set_read_plan(setup->read_plan);
	covered = setup->covered;
	covers_every_cpu = setup->covers_every_cpu;
	if (!setup->wiped_marked)
		setup_fork_wiped();
	/* Every tunable of the line from the bound, in one place (calib/segment.c). */
	const struct plan_bounds bounds = {
		.bound_ns = setup->max_error_ns,
		.resync_ms = setup->resync_ms,
		.ns_per_tick = (double)setup->ns_per_tick,
		.serves_realtime = setup->served & (1u << SERVED_REALTIME),
		.kernel_read_ns = setup->kernel_read_ns,
	};
	if (!plan_config_derive(&plan_cfg, &bounds)) {
		*err = "the re-synchronization interval rounds to zero ticks";
		return -1;
	}

	/* Before the first anchor: a migration after it shows as a marker changed since.
	 * Where the device cannot be read, the clock serves without the watch (it says why). */
	if (setup->watch_disruption)
		disruption_watch_start();
	enum track_stop why;
	uint32_t serving;
	enum write_result r = recover(setup->signals_blocked, &why, &serving);
	if (r != WRITE_PUBLISHED) {
		*err = r != WRITE_NO_ANCHOR ? "could not publish the first line"
		       : why == TRACK_NOISY ? "the kernel's CLOCK_MONOTONIC is too noisy to hold the error bound"
					    : "the kernel's CLOCK_MONOTONIC gave no good reading (failed, out of order, "
					      "or slower than twice the error bound)";
		return -1;
	}
	started = true;
	/* Opened last, and only for the clocks whose first readings were good: until now
	 * every call went to the real function, and a clock that starts stopped never
	 * serves. */
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++) {
		if (!(setup->served & (1u << c)))
			continue;
		if (!(serving & (1u << c))) {
			if (say_level >= 1)
				say_brief("not serving ", clock_table[c].name, ": ",
					  track_stop_text((enum track_stop)atomic_load(&clock_tally.stop_cause[c])), NULL);
			continue;
		}
		served_at_start |= 1u << c;
		__atomic_store_n(&clock_config.served_index[clock_table[c].id], (uint8_t)(c + 1), __ATOMIC_RELEASE);
	}
	return 0;
}

void clock_set_read_plan(unsigned plan)
{
	/* Atomic: readers of a path opened before (a close, then a start) may load it. Any
	 * plan is correct for any line: only its cost differs. */
	__atomic_store_n(&clock_config.read_plan, (uint8_t)plan, __ATOMIC_RELAXED);
}

void clock_close(void)
{
	/* Every call goes to the real function again at the hot path's first test, which it
	 * makes anyway: passing through costs nothing more than before the clock started. */
	for (int id = 0; id < CLOCK_ID_LIMIT; id++)
		__atomic_store_n(&clock_config.served_index[id], 0, __ATOMIC_RELEASE);
	started = false;
}

void clock_counters(struct clock_counters *out)
{
	const struct line *l;
	uint64_t w = line_read_begin(&l);
	/* A fork child that has not read a clock yet has no line: it will take its parent's,
	 * which its own memory still holds (shadow_state names it), stopped or not. */
	if (w == 0)
		l = &line_slots[slot_of(atomic_load_explicit(&shadow_state, memory_order_acquire))].line;
	out->active = !started ? 0 : l == &line_slots[0].line ? 1 : (int)LOAD(l->active);
	out->mult = LOAD(l->cur.clk[SERVED_MONOTONIC].mult);
	out->shift = (uint32_t)LOAD(l->cur.clk[SERVED_MONOTONIC].shift);
	out->resyncs = atomic_load(&clock_tally.resyncs);
	out->reanchors = atomic_load(&clock_tally.reanchors);
	out->stops = atomic_load(&clock_tally.stops);
	out->kernel_reads = atomic_load(&clock_tally.kernel_reads);
	out->lost_writes = atomic_load(&clock_tally.lost_writes);
	out->largest_error_ns = atomic_load(&clock_tally.largest_error_ns);
	out->stopped_uncovered = atomic_load(&clock_tally.stopped_uncovered);
	out->served_at_start = served_at_start;
	out->stopped_clocks = (uint32_t)atomic_load(&clock_tally.stopped_clocks);
	for (int k = 0; k < TRACKS; k++)
		out->stop_cause[k] = (uint32_t)atomic_load(&clock_tally.stop_cause[k]);
	out->held_reads = atomic_load(&clock_tally.held_reads);
	out->unreadable_anchors = atomic_load(&clock_tally.unreadable_anchors);
	out->resumes = atomic_load(&clock_tally.resumes);
	out->disruption_watched = __atomic_load_n(&clock_config.disruption_marker, __ATOMIC_ACQUIRE) != NULL;
	out->disruptions = atomic_load(&clock_tally.disruptions);
}
