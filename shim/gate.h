/* The decision: whether this process serves clocks from the counter, taken once, at the
 * TSCSHIM_DECIDE_AFTER-th read of a clock the options would serve (1000 by default; or
 * at a status query), not at load (but for a cold start, which measures at load: no read
 * ever measures). The reads before it go to the kernel's clock. A
 * program that reads such a clock fewer times never decides, and pays for the shim only
 * what loading it costs (gate_load) and a count per read: a decision costs what tens of
 * thousands of cheaper reads win back, which such a program would never make.
 *
 * The gate: when a decision runs (the due read, load, a status query), the claim that
 * lets one part of it run at a time in an address space, its own stack, and the one
 * publication. Its steps are decision.c's. */
#ifndef SHIM_GATE_H
#define SHIM_GATE_H

#include "decision.h"

#include "tscshim.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The decision as published (decision.h): written once, by publish (gate.c). */
extern struct decision_result gate_result;

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
