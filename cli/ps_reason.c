/* The short forms of the reasons a process passes through: one table from the start of
 * each reason text the shim's decision writes (shim/gate.c's step 1, shim/decision.c,
 * calib/verdict.c, shim/clock.c, calib/libc_kind.c), and from each cause of a served
 * clock's stop, to a key that stays the same while the texts change. Keys are what
 * `tscshim ps` prints, --json's reason_key and stopped, --prometheus's reason and cause
 * labels: a dashboard keys on them. A text no row knows is "other" (the full text is
 * still in --json). */
#include "ps.h"

#include "clocks.h"

#include <string.h>

struct reason_row {
	const char *key;
	const char *starts;   /* the reason text begins with this; NULL: derived, not matched */
	int cause;            /* the enum tscshim_stop this key names; 0: none */
};

/* First match wins: the rows that begin with a TSCSHIM_ setting stand before the invalid
 * setting's, whose message begins with the variable's name. */
static const struct reason_row reasons[] = {
	{"disabled", "TSCSHIM_DISABLE=1", 0},
	{"no-clocks", "TSCSHIM_CLOCKS=none", 0},
	{"invalid-setting", "TSCSHIM_", 0},
	{"secure-execution", "secure execution", 0},
	{"other-libc", "built for ", 0},
	{"no-proc", "cannot read /proc/sys/kernel/random/boot_id", 0},
	{"no-affinity", "cannot read the CPU affinity", 0},
	{"no-record", "no record answers this process", 0},
	{"measurer-gone", "another process was measuring", 0},
	{"seccomp", "seccomp strict mode", 0},
	{"no-costs", "pass-through: the record holds no costs", 0},
	{"not-worth-it", "pass-through: ", 0},
	{"no-counter", "the CPU has no time-stamp counter", 0},
	{"not-invariant", "the CPU does not report an invariant TSC", 0},
	{"clocksource", "the kernel's clocksource is ", 0},
	{"rate-unknown", "the counter's rate is unknown", 0},
	{"no-estimate", "the estimator did not run", 0},
	{"inconclusive", "estimate inconclusive", 0},
	{"not-monotonic", "counters not monotonic", 0},
	{"inconsistent", "counters inconsistent", 0},
	{"max-shift", "maximum shift bound", 0},
	{"clock-start", "the re-synchronization interval rounds to zero", 0},
	{"clock-start", "could not publish the first line", 0},
	{"decider-died", "the thread deciding died", 0},
	/* A served clock stopped (at the start or since): the clock's tally says why, not the
	 * text. A process passes through for one of these when every clock it served stopped. */
	{"unreadable", NULL, TSCSHIM_STOP_UNREADABLE},
	{"noisy", NULL, TSCSHIM_STOP_NOISY},
	{"behind", NULL, TSCSHIM_STOP_BEHIND},
	{"jumps", NULL, TSCSHIM_STOP_JUMPS},
	{"affinity", NULL, TSCSHIM_STOP_UNCOVERED},
	{"corrupt", NULL, TSCSHIM_STOP_CORRUPT},
	/* An earlier build's block says only that serving stopped, not why (its widened
	 * affinity, stopped_uncovered, excepted). */
	{"watchdog", NULL, 0},
	{"other", NULL, 0},
};

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
	for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
		if (reasons[i].starts && strncmp(p->reason, reasons[i].starts, strlen(reasons[i].starts)) == 0)
			return reasons[i].key;
	return "other";
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
