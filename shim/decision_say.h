/* The decision in one line, for TSCSHIM_VERBOSE: its outcome and reason, the rate, where
 * it came from, when and how long it took, and every cost figure with the setting they
 * were judged by. */
#ifndef SHIM_DECISION_SAY_H
#define SHIM_DECISION_SAY_H

#include "decision.h"

#include "options.h"

#include <stdbool.h>

/* The line for a published decision r (when: at load on a cold start; else at
 * r->at_read, 0 being a status query). o: the options it was made with, NULL where they
 * refused it. */
void decision_say(const struct decision_result *r, const struct option_values *o, bool at_load);

#endif
