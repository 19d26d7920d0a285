/* tscshim_status(), tscshim_status_sized() and the stats line at exit (shim/status.h). Owns
 * the answer's layout; reads the gate's result, the clock's tallies and the counts, and
 * writes none of them (a query that forces the decision asks the gate for it). */
#include "status.h"
#include "load_page.h"

#include "build_id.h"
#include "clock.h"
#include "export.h"
#include "gate.h"
#include "line.h"
#include "stats.h"

#include "segment.h"
#include "stats_line.h"
#include "text.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Where each version's fields end: a caller built against version v passes a struct of
 * at least STATUS_V<v>_END bytes. tscshim_status() fills version 1's and no more. */
#define STATUS_END_OF(field) (offsetof(struct tscshim_status, field) + sizeof((struct tscshim_status *)0)->field)
#define STATUS_V1_END STATUS_END_OF(stats_write_failures)
#define STATUS_V2_END STATUS_END_OF(passed_while_deciding)
#define STATUS_V3_END STATUS_END_OF(cost_fenced_plan)
#define STATUS_V4_END STATUS_END_OF(unreadable_anchors)
#define STATUS_V5_END STATUS_END_OF(resumes)
#define STATUS_V6_END STATUS_END_OF(disruptions)
_Static_assert(TSCSHIM_STATUS_VERSION == 6 && STATUS_V6_END == sizeof(struct tscshim_status),
	       "a field appended to struct tscshim_status starts a new version: give it its end "
	       "here and in status_version_filled()");

_Static_assert((int)TSCSHIM_STOP_UNREADABLE == (int)TRACK_UNREADABLE && (int)TSCSHIM_STOP_NOISY == (int)TRACK_NOISY &&
		       (int)TSCSHIM_STOP_BEHIND == (int)TRACK_BEHIND && (int)TSCSHIM_STOP_JUMPS == (int)TRACK_JUMPS &&
		       (int)TSCSHIM_STOP_UNCOVERED == (int)TRACK_UNCOVERED && (int)TSCSHIM_STOP_CORRUPT == (int)TRACK_CORRUPT &&
		       (int)TSCSHIM_STOP_DISRUPTED == (int)TRACK_DISRUPTED &&
		       (int)TRACK_STOP_CAUSES == (int)TSCSHIM_STOP_DISRUPTED + 1 && (int)SERVED_CLOCK_COUNT <= (int)TSCSHIM_STAT_CLOCKS,
	       "the public causes are segment.h's, in its order");

static void copy_reason(struct tscshim_status *out, const char *text)
{
	text_line(out->reason, sizeof out->reason, text, NULL);
}

void status_fill(struct tscshim_status *out)
{
	memset(out, 0, sizeof *out);
	out->version = TSCSHIM_STATUS_VERSION;
	out->max_shift_ns = UINT64_MAX;
	out->build_id = shim_build_id();
	out->stats_write_failures = stats_write_failures();
	if (stats_enabled) {
		uint64_t total[STAT_CLOCKS][2];
		stats_totals(total);
		for (int c = 0; c < STAT_CLOCKS; c++) {
			out->served[c] = total[c][1];
			out->calls[c] = total[c][0] + total[c][1];
		}
	}
	out->passed_while_deciding = gate_passed_while_deciding();
	if (!gate_decided()) {
		copy_reason(out, "not decided: no served clock has been read yet");
		return;
	}
	const struct decision_result *g = &gate_result;
	struct clock_counters cc;
	clock_counters(&cc);
	out->decided = 1;
	out->active = cc.active;
	if (g->serving && !cc.active) {
		char why[TSCSHIM_REASON_SIZE];
		text_line(why, sizeof why, "stopped serving: ",
			  track_stop_text((enum track_stop)cc.stop_cause[SERVED_MONOTONIC]), NULL);
		copy_reason(out, why);
	} else {
		copy_reason(out, g->reason);
	}
	out->rate_millihz = g->rate_millihz;
	out->max_shift_ns = g->max_shift_ns;
	out->mult = cc.mult;
	out->shift = cc.shift;
	/* The clocks the decision serves that the counter does not (stopped at the start or
	 * since, or the whole line stopped). */
	uint32_t stopped = g->serving ? (cc.active ? cc.stopped_clocks : g->served) & g->served : 0;
	out->served_clocks = g->served & ~stopped;
	out->stopped_clocks = stopped;
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++)
		out->stop_cause[c] = stopped & (1u << c) ? cc.stop_cause[c] : TSCSHIM_STOP_NONE;
	out->held_reads = cc.held_reads;
	out->unreadable_anchors = cc.unreadable_anchors;
	out->resumes = cc.resumes;
	out->disruption_watched = cc.disruption_watched;
	out->disruptions = cc.disruptions;
	out->fenced = g->fenced;
	out->from_cache = g->source == TSCSHIM_SOURCE_SYSTEM_RECORD || g->source == TSCSHIM_SOURCE_USER_CACHE;
	out->resyncs = cc.resyncs;
	out->fallbacks = cc.stops + cc.reanchors;
	out->source = (int)g->source;
	out->costs_from_record = g->costs_from_record;
	out->not_worth_it = g->not_worth_it;
	out->stopped_uncovered = cc.stopped_uncovered;
	out->decide_ns = g->decide_ns;
	out->cost_kernel_ps = g->cost.kernel;
	out->cost_syscall_ps = g->cost.syscall;
	out->cost_fenced_ps = g->cost.fenced;
	out->cost_unfenced_ps = g->cost.unfenced;
	out->cost_build = g->cost_build;
	/* The plan the costs' fenced figure is of, as the read uses it: a record's unusable
	 * plan reads as the default the served path took instead. */
	out->cost_fenced_plan = g->cost.fenced ? cost_read_plan(&g->cost, true) : 0;
	out->read_plan = cc.active ? __atomic_load_n(&clock_config.read_plan, __ATOMIC_RELAXED) : 0;
	out->reanchors = cc.reanchors;
	out->stops = cc.stops;
	out->largest_error_ns = cc.largest_error_ns;
	out->kernel_reads = cc.kernel_reads;
	out->lost_writes = cc.lost_writes;
}

/* The first `size` bytes of the whole status. Out of line, after the decision: the
 * status's copy and the decision's frames are never on the stack together. */
static __attribute__((noinline)) void copy_status(struct tscshim_status *out, size_t size)
{
	struct tscshim_status all;
	status_fill(&all);
	memcpy(out, &all, size < sizeof all ? size : sizeof all);
}

SHIM_EXPORT int tscshim_status(struct tscshim_status *out)
{
	gate_decide_if_due(CLOCK_MONOTONIC, true);
	copy_status(out, STATUS_V1_END);
	return 0;
}

/* The version a caller's size gets: the newest whose fields all fit in it (a size between
 * two versions' ends fills the older one whole and part of the newer), or -1 when not even
 * version 1's fit. */
static int status_version_filled(size_t size)
{
	if (size >= STATUS_V6_END)
		return 6;
	if (size >= STATUS_V5_END)
		return 5;
	if (size >= STATUS_V4_END)
		return 4;
	if (size >= STATUS_V3_END)
		return 3;
	if (size >= STATUS_V2_END)
		return 2;
	return size >= STATUS_V1_END ? 1 : -1;
}

SHIM_EXPORT int tscshim_status_sized(struct tscshim_status *out, size_t size)
{
	int version = status_version_filled(size);
	if (version < 0)
		return -1;
	gate_decide_if_due(CLOCK_MONOTONIC, true);
	copy_status(out, size);
	return version;
}

/* Its first name, kept for programs built against 0.2: the same function. */
SHIM_EXPORT int tscshim_status_v2(struct tscshim_status *out, size_t size)
	__attribute__((alias("tscshim_status_sized")));

/* The stats line, from the same status a query gets (without deciding: a process that
 * never read a served clock says decided=0). */
static void write_stats(void)
{
	struct tscshim_status s;
	status_fill(&s);
	char text[1024];
	int len = snprintf(text, sizeof text, STATS_LINE_PREFIX "pid=%d active=%d decided=%d", (int)getpid(),
			   s.active, s.decided);
	for (int c = 0; c < STAT_CLOCKS && len < (int)sizeof text; c++)
		len += snprintf(text + len, sizeof text - (size_t)len, " %s=%llu/%llu", stats_clock_name(c),
				(unsigned long long)s.served[c], (unsigned long long)s.calls[c]);
	if (len < (int)sizeof text)
		len += snprintf(text + len, sizeof text - (size_t)len,
				" resyncs=%llu reanchors=%llu stops=%llu largest_error_ns=%llu"
				" kernel_reads=%llu lost_writes=%llu passed_while_deciding=%llu\n",
				(unsigned long long)s.resyncs, (unsigned long long)s.reanchors,
				(unsigned long long)s.stops, (unsigned long long)s.largest_error_ns,
				(unsigned long long)s.kernel_reads, (unsigned long long)s.lost_writes,
				(unsigned long long)s.passed_while_deciding);
	if (len > (int)sizeof text - 1)
		len = (int)sizeof text - 1;
	stats_write(text, (size_t)len);
}

/* Runs at exit in every process: on the load path's pages. */
LOAD_PATH __attribute__((destructor)) static void stats_at_exit(void)
{
	if (stats_enabled)
		write_stats();
}
