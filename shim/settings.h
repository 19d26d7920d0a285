/* The options as they were at load: read from the environment once, by the constructor,
 * and what the load's check of the records found (a cold start or not). The reads before
 * the decision ask two numbers; the decision takes the whole set, resolved then. */
#ifndef SHIM_SETTINGS_H
#define SHIM_SETTINGS_H

#include "decision.h"
#include "options.h"

#include <stdbool.h>
#include <stdint.h>

/* At load: the options, from the environment as it is then, and whether a record may
 * answer (one or two system calls: record.h); nothing written off the load page when no
 * TSCSHIM_ variable is set, nothing looked at with TSCSHIM_DISABLE=1 alone. Returns true
 * on a cold start (nothing recorded yet, the boot known): the caller decides at once,
 * before the program's threads exist to compete with the estimator. */
bool settings_load(void);

/* The constructor ran: the options are known. */
bool settings_loaded(void);

/* An option's value before the decision: the one parsed at load where a TSCSHIM_ variable
 * was set; else the table's default as options.h states it as a number, so that a process
 * that sets none and never decides parses nothing. */
uint64_t setting_before_decision(enum option_id id);

/* setting_before_decision(OPT_CLOCKS) on the load path: the served clocks (bit i: enum
 * served_clock i) whose reads count toward the decision. */
uint64_t settings_counted_clocks(void);

/* The options for the decision, resolved (the defaults parsed where no variable was set),
 * or NULL where they refuse it (secure execution, an invalid value, the other C library,
 * TSCSHIM_DISABLE=1, TSCSHIM_CLOCKS=none): then *r is that refusal. r->served and
 * r->fenced are set either way. Only the deciding thread calls it. */
const struct option_values *settings_for_decision(struct decision_result *r);

/* What the load found: a cold start (this decision may measure), no /proc (no boot id:
 * nothing can be trusted or kept). */
bool settings_cold_start(void);
bool settings_boot_unknown(void);

/* The message of a load under the other C library, or NULL (and NULL where a setting was
 * invalid: that one was said). Whether a setting was invalid (said at load). */
const char *settings_wrong_libc(void);
bool settings_invalid(void);

/* For the line at exit of a process that never decided: whether one is owed (a
 * TSCSHIM_VERBOSE process), the read the decision was due at, and why it never came. */
bool settings_say_at_exit(void);
const char *settings_never_decided_why(bool claim_held);

#endif
