/* The state block: what a process's shim shows to a reader outside the process
 * (`tscshim ps`), which reads it from the process's memory without stopping, signalling
 * or asking the process anything.
 *
 * The shim (shim/visible.c) keeps one block in its initialized data, on the load page
 * (calib/load_page.h), and marks where it lies with an ELF note in its image: the note
 * "tscshim", type STATE_NOTE_TYPE, whose 8-byte descriptor is the block's address less
 * the descriptor's own (a link-time constant: no relocation, nothing written at load).
 * A reader finds the image's program headers in the process (the mapping of the
 * library's first page), its PT_NOTE segments, this note, and so the block: no symbol
 * table is needed, so a stripped library (Debian's packages) and a library file deleted
 * or replaced since the process loaded it are read alike.
 *
 * The block holds addresses in the process (of the published decision, the count of
 * reads before it, the clock's tally and the stats' slots, each filled by the loader's
 * relocation of the load page, which it writes anyway) and where each field lies in the
 * object it points at, so that a reader built from another tree reads the fields it
 * knows and no others: nothing of the shim's private structures is assumed.
 *
 * Versions: `layout` changes only where a field's meaning or width changes (a reader of
 * another layout reads nothing more: "another version"); fields are otherwise only
 * appended, and `size` says which a block has. The widths below are the layout's: the
 * shim asserts them at compile time.
 *
 * Layout 2 (this one) is layout 1 with two fields appended and one meaning changed:
 * the decision's reason as a number (enum state_reason: a reader keys on it, never on the
 * text, which stays for people), the tally's resumes, and stopped_clocks meaning the
 * clocks stopped now (a bit is cleared when its clock serves again), where layout 1's
 * only grew. A reader of layout 2 reads layout 1's blocks as well (their reason from the
 * text). */
#ifndef CALIB_STATE_BLOCK_H
#define CALIB_STATE_BLOCK_H

#include <stdint.h>

#define STATE_BLOCK_MAGIC "tscstate" /* 8 bytes, no terminating NUL kept */
#define STATE_NOTE_NAME "tscshim"    /* the note's name, with its NUL: 8 bytes */
enum {
	STATE_NOTE_TYPE = 0x54534331, /* "TSC1" */
	STATE_BLOCK_LAYOUT = 2,
	STATE_BLOCK_LAYOUT_1 = 1,     /* still read: an earlier build's */
};

/* Why a decision came out as it did: the number the block carries (in_reason.code), which
 * the shim and `tscshim ps` share, beside the text (`reason`) for people and the verbose
 * line. Values are never reused or renumbered: a reader built before a value was added
 * reads it as one it does not know ("other"). */
enum state_reason {
	STATE_REASON_UNKNOWN = 0,          /* none set (a decision path this build missed) */
	STATE_REASON_RELIABLE = 1,         /* serving: reliable, and worth it or always */
	STATE_REASON_DISABLED = 2,         /* TSCSHIM_DISABLE=1 */
	STATE_REASON_NO_CLOCKS = 3,        /* TSCSHIM_CLOCKS=none */
	STATE_REASON_INVALID_SETTING = 4,  /* a TSCSHIM_ variable's value */
	STATE_REASON_SECURE_EXECUTION = 5, /* AT_SECURE */
	STATE_REASON_OTHER_LIBC = 6,       /* the library built for the other C library */
	STATE_REASON_NO_PROC = 7,          /* no boot id: no /proc */
	STATE_REASON_NO_AFFINITY = 8,
	STATE_REASON_NO_RECORD = 9,        /* none answered at a read, where nothing is measured */
	STATE_REASON_MEASURER_GONE = 10,
	STATE_REASON_SECCOMP = 11,         /* strict mode: the estimator cannot run */
	STATE_REASON_NO_COSTS = 12,
	STATE_REASON_NOT_WORTH_IT = 13,    /* the benefit gate */
	STATE_REASON_NO_COUNTER = 14,
	STATE_REASON_NOT_INVARIANT = 15,
	STATE_REASON_CLOCKSOURCE = 16,     /* TSCSHIM_REQUIRE_TSC_CLOCKSOURCE=1 */
	STATE_REASON_RATE_UNKNOWN = 17,
	STATE_REASON_NO_ESTIMATE = 18,
	STATE_REASON_INCONCLUSIVE = 19,
	STATE_REASON_NOT_MONOTONIC = 20,
	STATE_REASON_INCONSISTENT = 21,
	STATE_REASON_MAX_SHIFT = 22,       /* TSCSHIM_MAX_SKEW_NS */
	STATE_REASON_CLOCK_START = 23,     /* the clock's first line could not be set up */
	STATE_REASON_DECIDER_DIED = 24,
	STATE_REASONS
};

struct state_block {
	char magic[8];           /* STATE_BLOCK_MAGIC */
	uint32_t layout;         /* STATE_BLOCK_LAYOUT */
	uint32_t size;           /* sizeof the block as built: fields are only appended */
	/* The published decision's address: 0 while undecided. Written once, last, after the
	 * decision is whole (release): a reader that finds it set reads a decision that no
	 * longer changes. A fork child inherits it with its parent's decision. */
	uint64_t decision;
	/* 1: the decision was made at load (a cold start); written before `decision`. */
	uint32_t decided_at_load;
	uint32_t reserved;
	/* Addresses in the process. */
	uint64_t reads_before_decision; /* uint64_t: reads of served clocks while undecided,
	                                 * shared by each thread a batch of 64 at a time */
	uint64_t tally;                 /* the clock's counters, each a uint64_t (in_tally) */
	uint64_t stats_enabled;         /* bool (1 byte): TSCSHIM_STATS is set, so calls are counted */
	uint64_t stats_slots;           /* the first of in_stats.slot_count per-thread slots */
	/* Where the decision's fields lie, from `decision`: bool (1 byte) serving,
	 * not_worth_it, fenced; uint32_t served (bit c: enum served_clock c); int32_t source
	 * (enum tscshim_source); uint64_t decide_ns, at_read (0: at load or a status query);
	 * reason, a NUL-terminated text of reason_size bytes. `size`: the decision's. */
	struct {
		uint16_t size, serving, not_worth_it, fenced, served, source, decide_ns, at_read, reason,
			reason_size;
	} in_decision;
	/* Where the tally's counters lie, from `tally` (each a uint64_t that only grows). */
	struct {
		uint16_t size, resyncs, reanchors, stops, kernel_reads, lost_writes, largest_error_ns,
			stopped_uncovered;
	} in_tally;
	/* The stats' slots: slot_count of slot_size bytes; in each, the uint64_t count of
	 * calls of stat clock c (stats_line.h: the served clocks, then every other) that were
	 * (s = 1) or were not (s = 0) served lies at counts + (c * 2 + s) * 8; `clocks` of them. */
	struct {
		uint16_t slot_count, slot_size, clocks, counts;
	} in_stats;
	uint32_t reserved2;
	/* Appended (a block of at least STATE_BLOCK_STOPS_SIZE has them): where the per-clock
	 * stops lie in the tally, each a uint64_t: stopped_clocks (bit c: enum served_clock c
	 * stopped now, layout 2; at the start or since, layout 1; bits of clocks the decision
	 * did not serve mean nothing), stop_causes of stop_cause from stop_cause on (why clock c stopped: enum
	 * tscshim_stop, include/tscshim.h), and held_reads (reads of a stopped clock answered
	 * at what it had served). A smaller block, an earlier build of layout 1, says only
	 * that serving stopped, not which clocks or why. */
	struct {
		uint16_t stopped_clocks, stop_cause, stop_causes, held_reads;
	} in_stops;
	/* Layout 2: where the decision's reason code lies, from `decision` (uint32_t, enum
	 * state_reason), and the tally's resumes (uint64_t: times a stopped clock served
	 * again), from `tally`. */
	struct {
		uint16_t code, resumes;
	} in_reason;
	/* Layout 2, where earlier builds left 0 (reserved): where the tally's disruptions lie
	 * (uint64_t: times the hypervisor's vmclock marker stopped the counter), from
	 * `tally`; 0: not known (a counter never lies at the tally's start, resyncs' place). */
	struct {
		uint16_t disruptions, reserved;
	} in_vmclock;
};

/* Layout 1's size, up to reserved2: a block smaller than this is not one. */
#define STATE_BLOCK_V1_SIZE 112u
/* With in_stops: a block at least this large says which clocks stopped, and why (every
 * block of layout 2 has them). */
#define STATE_BLOCK_STOPS_SIZE 120u
/* Layout 2's size, through in_vmclock: a block of layout 2 smaller than this is not one. */
#define STATE_BLOCK_V2_SIZE 128u

#endif
