/* The gate: when the decision runs, the claim that lets one decision run at a time in an
 * address space, the stack it runs on, and its one publication. What a decision finds is
 * decision.h's; the options as they were at load, settings.h's.
 *
 * A process decides at the TSCSHIM_DECIDE_AFTER-th read of a clock the options would serve
 * (1000 by default), at a status query, or at load when nothing is recorded (a cold start),
 * not before: the reads before it go to the kernel's clock, and a program that reads such
 * a clock fewer times pays only for being loaded and a count per read. No read measures
 * anything; only a cold start at load, or a status query, may. */
#ifndef SHIM_GATE_H
#define SHIM_GATE_H

#include "decision.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The decision as published: written once, by publish (gate.c), then read only. */
extern struct decision_result gate_result;

/* The phase: undecided, or decided (gate_result published). Set once, by gate.c. */
enum { GATE_UNDECIDED, GATE_DECIDED };
/* Hidden, so that the inline test below needs no pointer from the GOT (as line.h's). */
#pragma GCC visibility push(hidden)
extern _Atomic uint32_t gate_phase;
#pragma GCC visibility pop

/* True once the decision was made (acquire: gate_result may be read). Inline: the
 * undecided pass target asks it at every call of a clock the counter never serves. */
static inline bool gate_decided(void)
{
	return atomic_load_explicit(&gate_phase, memory_order_acquire) == GATE_DECIDED;
}

/* Reads of a served clock that found the decision under way in another thread and passed
 * through to the kernel meanwhile. */
uint64_t gate_passed_while_deciding(void);

/* A call of `clock` found no counter path: the one trigger of the decision (the due read;
 * with force, the cold start at load or a status query). Runs the decision if none was
 * made, the clock is one the options would serve, and the decision is due at this read
 * (any clock, at once, with force). Returns true when the decision is made (now or
 * earlier): dispatch the call again. Returns false before the decision is due, while it
 * is under way in another thread, before the constructor ran, or for a clock that does not
 * decide: pass this call through.
 *
 * Async-signal-safe and bounded: the decision runs on a stack of its own (a small
 * alternate signal stack suffices), every signal blocked meanwhile (no handler runs inside
 * it, jumps out of it or cancels it); it never waits on another thread (a call that finds
 * the decision claimed passes through, with no system call); one address space runs one
 * decision at a time (a vfork or CLONE_VM child finds the claim held; a fork child finds it
 * free and decides for itself); a decider that dies leaves a process that passes through. */
bool gate_decide_if_due(clockid_t clock, bool force);

#endif
