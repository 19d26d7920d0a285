/* What a decision finds: whether this process serves clocks from the counter, from the
 * record that answers this boot, the verdict, the costs and the clock's start (the types
 * are decision_result.h's). Its rooms: what it finds (decision_find.c), the judgement and
 * the decision at a read (decision.c), the forced decision's measuring and keeping
 * (decision_forced.c). The gate (gate.h) decides when, holds the claim that lets one
 * decision run at a time in an address space, and publishes the outcome. */
#ifndef SHIM_DECISION_H
#define SHIM_DECISION_H

#include "decision_result.h"

#include <stdbool.h>

/* A decision that measures nothing: at a read, or a status query where measuring is not
 * allowed. It looks the answer up in a record and judges it, into *r (served and fenced
 * already set), every signal blocked under the gate's claim. Its code calls nothing that
 * measures or forks, and its stack stays within what the claim's page holds
 * (test/stack-usage.py holds it there). */
void decision_at_read(const struct decision_setup *s, struct decision_result *r);

/* A forced decision (a cold start at load, a status query where threads cannot be caught
 * in the estimator's fork): the same, and where no record answers, measured now in a child
 * process within the estimate budget, the costs measured on the opened path, and what was
 * measured kept in the per-user cache. */
void decision_forced(const struct decision_setup *s, struct decision_result *r);

/* True in the estimator's child (forked by a measuring decision) and its threads, which
 * carry on the decider's work and never decide. */
bool decision_measuring_in_child(void);

#endif
