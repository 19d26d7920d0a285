/* The short forms of the reasons a process passes through: one table from the start of
 * each reason text the shim's decision writes (shim/gate.c's step 1, shim/decision.c,
 * calib/verdict.c, shim/clock.c, calib/libc_kind.c) to a key that stays the same while
 * the texts change. Keys are what `tscshim ps` prints, --json's reason_key and
 * --prometheus's reason label: a dashboard keys on them. A text no row knows is
 * "other" (the full text is still in --json). */
#include "ps.h"

#include <string.h>

struct reason_row {
	const char *key;
	const char *starts;   /* the reason text begins with this; NULL: derived, not matched */
};

/* First match wins: the rows that begin with a TSCSHIM_ setting stand before the invalid
 * setting's, whose message begins with the variable's name. */
static const struct reason_row reasons[] = {
	{"disabled", "TSCSHIM_DISABLE=1"},
	{"no-clocks", "TSCSHIM_CLOCKS=none"},
	{"invalid-setting", "TSCSHIM_"},
	{"secure-execution", "secure execution"},
	{"other-libc", "built for "},
	{"no-proc", "cannot read /proc/sys/kernel/random/boot_id"},
	{"no-affinity", "cannot read the CPU affinity"},
	{"no-record", "no record answers this process"},
	{"measurer-gone", "another process was measuring"},
	{"seccomp", "seccomp strict mode"},
	{"no-costs", "pass-through: the record holds no costs"},
	{"not-worth-it", "pass-through: "},
	{"no-counter", "the CPU has no time-stamp counter"},
	{"not-invariant", "the CPU does not report an invariant TSC"},
	{"clocksource", "the kernel's clocksource is "},
	{"rate-unknown", "the counter's rate is unknown"},
	{"no-estimate", "the estimator did not run"},
	{"inconclusive", "estimate inconclusive"},
	{"not-monotonic", "counters not monotonic"},
	{"inconsistent", "counters inconsistent"},
	{"max-shift", "maximum shift bound"},
	{"clock-start", "the re-synchronization interval rounds to zero"},
	{"clock-start", "could not publish the first line"},
	{"decider-died", "the thread deciding died"},
	/* Serving stopped after the decision: the clock's tally says so, not the text. */
	{"watchdog", NULL},
	{"affinity", NULL},
	{"other", NULL},
};

const char *ps_reason_key(const struct ps_process *p)
{
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
