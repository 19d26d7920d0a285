/* The decision: whether this process serves clocks from the counter, taken once, at the
 * TSCSHIM_DECIDE_AFTER-th read of a clock the options would serve (1000 by default; or
 * at a status query), not at load (but for a cold start, which measures at load: no read
 * ever measures). The reads before it go to the kernel's clock. A
 * program that reads such a clock fewer times never decides, and pays for the shim only
 * what loading it costs (gate_load) and a count per read: a decision costs what tens of
 * thousands of cheaper reads win back, which such a program would never make.
 *
 * Its steps, cheapest refusal first, are gate.c's functions, one per step. */
#ifndef SHIM_GATE_H
#define SHIM_GATE_H

#include "cost.h"

#include "tscshim.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* What the decision found. Written only by the deciding thread, before the phase becomes
 * decided (release); read by others only after gate_decided() (acquire). */
struct gate_result {
	/* The decision's outcome: the counter path was opened and kept (serving), as decided.
	 * Not the clock's own state afterwards (clock_counters: the watchdog may stop it), nor
	 * the stats line's "active" (that one). */
	bool serving;
	bool not_worth_it;       /* reliable, but the benefit gate closed the path again */
	bool fenced;
	uint32_t served;         /* bit set of enum served_clock */
	uint64_t rate_millihz;   /* 0 if unknown */
	uint64_t max_shift_ns;   /* UINT64_MAX if unknown */
	enum tscshim_source source;
	struct cost_ps cost;     /* all 0 when the benefit gate did not run */
	uint64_t cost_build;     /* the build the costs belong to */
	bool costs_from_record;
	uint64_t decide_ns;      /* how long the read that decided took to decide */
	uint64_t prepared_ns;    /* and the parts run at reads before it, together */
	uint32_t prepared_reads; /* at so many reads */
	char reason[TSCSHIM_REASON_SIZE];
};
extern struct gate_result gate_result;

/* At load, from the constructor: the options, from the environment as it is then, and
 * whether a record may answer (one to three stat calls); no file read, no CPUID, nothing
 * written when no TSCSHIM_ variable is set. Returns true on a cold start (nothing
 * recorded yet): the caller decides at once, gate_decide_if_due(CLOCK_MONOTONIC, true),
 * before the program's threads exist to compete with the estimator. */
bool gate_load(void);

/* True once the decision was made (acquire: gate_result may be read). */
bool gate_decided(void);

/* Reads of a served clock that found the decision under way in another thread and
 * passed through to the kernel meanwhile. */
uint64_t gate_passed_while_deciding(void);

/* A call of `clock` found no counter path: the one trigger of the decision (the due
 * read, the cold start at load with force, a status query with force). Runs the decision
 * if none was made, this clock is one the options would serve, and the decision is due
 * at this read (any clock, at once, with force). Returns true when the decision is made
 * (now or earlier): dispatch the call again. Returns false before the decision is due,
 * while it is under way in another thread, before the constructor ran, or for a clock
 * that does not decide: pass this call through.
 *
 * Async-signal-safe and bounded: the decision runs on a stack of its own (a small
 * alternate signal stack suffices), every signal blocked meanwhile (no handler runs
 * inside it, jumps out of it or cancels it); it never waits on another thread (a call
 * that finds the decision claimed passes through, with no system call); one address
 * space runs one decision at a time (a vfork or CLONE_VM child finds the claim held; a
 * fork child finds it free and decides for itself); a decider that dies leaves a
 * process that passes through. At a read it measures nothing (the estimator and the cost
 * measurement run only in a cold start at load, within the estimate budget). */
bool gate_decide_if_due(clockid_t clock, bool force);

#endif
