/* The state block (calib/state_block.h), its note, and the count of reads before the
 * decision it points at. Everything here is initialized data: the loader relocates the
 * addresses at load, on the load page, which loading the shim writes anyway; no code
 * runs at load. */
#include "visible.h"
#include "load_page.h"

#include "clock.h"
#include "stats.h"

#include <stddef.h>

ON_LOAD_PAGE _Atomic uint64_t reads_before_decision;

/* A field's offset in its object. */
#define FIELD(type, field) ((uint16_t)offsetof(type, field))
/* The width the layout gives each field (calib/state_block.h): the build stops where the
 * shim's type no longer has it, and a reader is never handed a field of another width
 * (a new width is a new layout). */
#define WIDTH(type, field, width) \
	_Static_assert(sizeof(((type *)0)->field) == (width), #type "." #field ": not the width the block's layout says")
WIDTH(struct decision_result, serving, 1);
WIDTH(struct decision_result, not_worth_it, 1);
WIDTH(struct decision_result, fenced, 1);
WIDTH(struct decision_result, served, 4);
WIDTH(struct decision_result, source, 4);
WIDTH(struct decision_result, decide_ns, 8);
WIDTH(struct decision_result, at_read, 8);
WIDTH(struct decision_result, reason_code, 4);
WIDTH(struct clock_tally, resyncs, 8);
WIDTH(struct clock_tally, reanchors, 8);
WIDTH(struct clock_tally, stops, 8);
WIDTH(struct clock_tally, kernel_reads, 8);
WIDTH(struct clock_tally, lost_writes, 8);
WIDTH(struct clock_tally, largest_error_ns, 8);
WIDTH(struct clock_tally, stopped_uncovered, 8);
WIDTH(struct clock_tally, stopped_clocks, 8);
WIDTH(struct clock_tally, stop_cause[0], 8);
WIDTH(struct clock_tally, held_reads, 8);
WIDTH(struct clock_tally, resumes, 8);
WIDTH(struct clock_tally, disruptions, 8);
WIDTH(struct stats_slot, count, STAT_CLOCKS * 2 * 8);

_Static_assert(offsetof(struct state_block, in_stops) == STATE_BLOCK_V1_SIZE &&
		       offsetof(struct state_block, in_reason) == STATE_BLOCK_STOPS_SIZE &&
		       sizeof(struct state_block) == STATE_BLOCK_V2_SIZE,
	       "a field appended to the block goes at its end, with a define of the size that has it; "
	       "STATE_BLOCK_V1_SIZE and STATE_BLOCK_STOPS_SIZE stay layout 1's");
/* A stopped clock's bit and cause are the served clock's: a cause is enum track_stop,
 * which shim/status.c asserts is the public enum tscshim_stop a reader decodes. */
_Static_assert(SERVED_CLOCK_COUNT <= 32, "stopped_clocks' bits are the decision's served clocks");
_Static_assert(sizeof(struct decision_result) <= UINT16_MAX && sizeof(struct clock_tally) <= UINT16_MAX &&
		       sizeof(struct stats_slot) <= UINT16_MAX,
	       "the block gives sizes in 16 bits");
_Static_assert(sizeof(stats_enabled) == 1 && sizeof(reads_before_decision) == 8, "the layout's widths");

__attribute__((used)) ON_LOAD_PAGE struct state_block visible_block = {
	.magic = STATE_BLOCK_MAGIC,
	.layout = STATE_BLOCK_LAYOUT,
	.size = sizeof(struct state_block),
	.reads_before_decision = (uint64_t)(uintptr_t)&reads_before_decision,
	.tally = (uint64_t)(uintptr_t)&clock_tally,
	.stats_enabled = (uint64_t)(uintptr_t)&stats_enabled,
	.stats_slots = (uint64_t)(uintptr_t)stats_slots,
	.in_decision =
		{
			.size = sizeof(struct decision_result),
			.serving = FIELD(struct decision_result, serving),
			.not_worth_it = FIELD(struct decision_result, not_worth_it),
			.fenced = FIELD(struct decision_result, fenced),
			.served = FIELD(struct decision_result, served),
			.source = FIELD(struct decision_result, source),
			.decide_ns = FIELD(struct decision_result, decide_ns),
			.at_read = FIELD(struct decision_result, at_read),
			.reason = FIELD(struct decision_result, reason),
			.reason_size = sizeof(((struct decision_result *)0)->reason),
		},
	.in_tally =
		{
			.size = sizeof(struct clock_tally),
			.resyncs = FIELD(struct clock_tally, resyncs),
			.reanchors = FIELD(struct clock_tally, reanchors),
			.stops = FIELD(struct clock_tally, stops),
			.kernel_reads = FIELD(struct clock_tally, kernel_reads),
			.lost_writes = FIELD(struct clock_tally, lost_writes),
			.largest_error_ns = FIELD(struct clock_tally, largest_error_ns),
			.stopped_uncovered = FIELD(struct clock_tally, stopped_uncovered),
		},
	.in_stats =
		{
			.slot_count = STATS_SLOTS,
			.slot_size = sizeof(struct stats_slot),
			.clocks = STAT_CLOCKS,
			.counts = FIELD(struct stats_slot, count),
		},
	.in_stops =
		{
			.stopped_clocks = FIELD(struct clock_tally, stopped_clocks),
			.stop_cause = FIELD(struct clock_tally, stop_cause),
			.stop_causes = sizeof(((struct clock_tally *)0)->stop_cause) / 8,
			.held_reads = FIELD(struct clock_tally, held_reads),
		},
	.in_reason =
		{
			.code = FIELD(struct decision_result, reason_code),
			.resumes = FIELD(struct clock_tally, resumes),
		},
	.in_vmclock = {.disruptions = FIELD(struct clock_tally, disruptions)},
};

/* The note that says where the block is: its descriptor holds the block's address less
 * the descriptor's own, which the static link resolves (R_X86_64_PC64 to a hidden
 * symbol): no relocation at load, and the note's page is never written. "R" (retain):
 * --gc-sections keeps it, and through it the block. */
__asm__(".pushsection .note.tscshim, \"aR\", @note\n"
	"\t.balign 4\n"
	"\t.long 8\n"                         /* namesz: "tscshim" and its NUL */
	"\t.long 8\n"                         /* descsz */
	"\t.long 0x54534331\n"                /* type: STATE_NOTE_TYPE */
	"\t.asciz \"" STATE_NOTE_NAME "\"\n"
	"\t.quad visible_block - .\n"
	"\t.popsection\n");
_Static_assert(STATE_NOTE_TYPE == 0x54534331 && sizeof(STATE_NOTE_NAME) == 8, "the note above spells them");
