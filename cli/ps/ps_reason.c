/* The short forms of the reasons a process passes through: one table from each reason
 * code the shim's decision writes (enum state_reason, calib/state_block.h), and from each
 * cause of a served clock's stop, to a key that stays the same while the texts change.
 * An earlier build's block (layout 1) has no code: its key comes from the start of its
 * text, the `starts` column, which that build's texts begin with. Keys are what
 * `tscshim ps` prints, --json's reason_key and stopped, --prometheus's reason and cause
 * labels: a dashboard keys on them. A code or text no row knows is "other" (the full text
 * is still in --json). */
#include "ps.h"

#include "clocks.h"

#include <string.h>

struct reason_row {
	const char *key;
	int code;             /* the enum state_reason this key names; 0: none */
	const char *starts;   /* a layout-1 text begins with this; NULL: not matched */
	int cause;            /* the enum tscshim_stop this key names; 0: none */
};

/* First match wins: the rows that begin with a TSCSHIM_ setting stand before the invalid
 * setting's, whose message begins with the variable's name. */
static const struct reason_row reasons[] = {
	{"disabled", STATE_REASON_DISABLED, "TSCSHIM_DISABLE=1", 0},
	{"no-clocks", STATE_REASON_NO_CLOCKS, "TSCSHIM_CLOCKS=none", 0},
	{"invalid-setting", STATE_REASON_INVALID_SETTING, "TSCSHIM_", 0},
	{"secure-execution", STATE_REASON_SECURE_EXECUTION, "secure execution", 0},
	{"other-libc", STATE_REASON_OTHER_LIBC, "built for ", 0},
	{"no-proc", STATE_REASON_NO_PROC, "cannot read /proc/sys/kernel/random/boot_id", 0},
	{"no-affinity", STATE_REASON_NO_AFFINITY, "cannot read the CPU affinity", 0},
	{"no-record", STATE_REASON_NO_RECORD, "no record answers this process", 0},
	{"measurer-gone", STATE_REASON_MEASURER_GONE, "another process was measuring", 0},
	{"seccomp", STATE_REASON_SECCOMP, "seccomp strict mode", 0},
	{"no-costs", STATE_REASON_NO_COSTS, "pass-through: the record holds no costs", 0},
	{"not-worth-it", STATE_REASON_NOT_WORTH_IT, "pass-through: ", 0},
	{"no-counter", STATE_REASON_NO_COUNTER, "the CPU has no time-stamp counter", 0},
	{"not-invariant", STATE_REASON_NOT_INVARIANT, "the CPU does not report an invariant TSC", 0},
	{"clocksource", STATE_REASON_CLOCKSOURCE, "the kernel's clocksource is ", 0},
	{"rate-unknown", STATE_REASON_RATE_UNKNOWN, "the counter's rate is unknown", 0},
	{"no-estimate", STATE_REASON_NO_ESTIMATE, "the estimator did not run", 0},
	{"inconclusive", STATE_REASON_INCONCLUSIVE, "estimate inconclusive", 0},
	{"not-monotonic", STATE_REASON_NOT_MONOTONIC, "counters not monotonic", 0},
	{"inconsistent", STATE_REASON_INCONSISTENT, "counters inconsistent", 0},
	{"max-shift", STATE_REASON_MAX_SHIFT, "maximum shift bound", 0},
	{"clock-start", STATE_REASON_CLOCK_START, "the re-synchronization interval rounds to zero", 0},
	{"clock-start", 0, "could not publish the first line", 0},
	{"decider-died", STATE_REASON_DECIDER_DIED, "the thread deciding died", 0},
	/* A served clock stopped (at the start or since): the clock's tally says why, not the
	 * text. A process passes through for one of these when every clock it served stopped. */
	{"unreadable", 0, NULL, TSCSHIM_STOP_UNREADABLE},
	{"noisy", 0, NULL, TSCSHIM_STOP_NOISY},
	{"behind", 0, NULL, TSCSHIM_STOP_BEHIND},
	{"jumps", 0, NULL, TSCSHIM_STOP_JUMPS},
	{"affinity", 0, NULL, TSCSHIM_STOP_UNCOVERED},
	{"corrupt", 0, NULL, TSCSHIM_STOP_CORRUPT},
	{"disrupted", 0, NULL, TSCSHIM_STOP_DISRUPTED},
	/* An earlier build's block says only that serving stopped, not why (its widened
	 * affinity, stopped_uncovered, excepted). */
	{"watchdog", 0, NULL, 0},
	{"other", 0, NULL, 0},
};

const char *ps_reason_code_key(uint32_t code)
{
	for (size_t i = 0; code != 0 && i < sizeof reasons / sizeof *reasons; i++)
		if ((uint32_t)reasons[i].code == code)
			return reasons[i].key;
	return "other";
}

const char *ps_reason_text_key(const char *text)
{
	for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
		if (reasons[i].starts && strncmp(text, reasons[i].starts, strlen(reasons[i].starts)) == 0)
			return reasons[i].key;
	return "other";
}

const char *ps_stop_key(uint64_t cause)
{
	for (size_t i = 0; cause != 0 && i < sizeof reasons / sizeof *reasons; i++)
		if ((uint64_t)reasons[i].cause == cause)
			return reasons[i].key;
	return "other";
}

const char *ps_reason_key(const struct ps_process *p)
{
	if (p->serving && p->stops_known) {
		/* MONOTONIC's stop stops the whole line, with one cause for every clock it still
		 * served: its cause is the line's. Else the first clock's that stopped. */
		uint32_t stopped = p->stopped_clocks & p->served;
		if (!stopped)
			return "other"; /* a decision that served no clock at all */
		unsigned c = stopped & (1u << SERVED_MONOTONIC) ? SERVED_MONOTONIC : (unsigned)__builtin_ctz(stopped);
		return ps_stop_key(p->stop_cause[c]);
	}
	if (p->serving && p->stopped_uncovered)
		return "affinity";
	if (p->serving)
		return "watchdog";
	return p->reason_code_known ? ps_reason_code_key(p->reason_code) : ps_reason_text_key(p->reason);
}

const char *ps_reason_key_at(size_t i)
{
	/* Each key once, in the table's order (clock-start has two rows). */
	for (size_t row = 0, seen = 0; row < sizeof reasons / sizeof *reasons; row++) {
		if (row > 0 && strcmp(reasons[row].key, reasons[row - 1].key) == 0)
			continue;
		if (seen++ == i)
			return reasons[row].key;
	}
	return NULL;
}
