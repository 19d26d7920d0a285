/* What a decision is given (struct decision_setup, by the gate) and what it finds (struct
 * decision_result, which the gate publishes): the types alone, for the decision's rooms
 * and for those that read its outcome. The decision itself is decision.h's. */
#ifndef SHIM_DECISION_RESULT_H
#define SHIM_DECISION_RESULT_H

#include "cost.h"

#include "options.h"
#include "state_block.h"
#include "tscshim.h"

#include <stdbool.h>
#include <stdint.h>

/* What a decision found. Written only by the deciding thread, before the gate's phase
 * becomes decided (release); read by others only after gate_decided() (acquire). */
struct decision_result {
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
	uint64_t decide_ns;      /* how long the read (or query, or load) that decided took to decide */
	uint64_t at_read;        /* the read that decided, 0: at load or a status query */
	/* Why, as a number (enum state_reason, calib/state_block.h): what `tscshim ps` keys
	 * on; `reason` says the same for people. Set wherever reason is. */
	uint32_t reason_code;
	char reason[TSCSHIM_REASON_SIZE];
};

/* What the gate gives a decision. */
struct decision_setup {
	const struct option_values *o; /* resolved, and not refused (settings.h) */
	bool boot_unknown;             /* no /proc at load: no boot id, no record trusted */
	bool signals_blocked;          /* the caller blocked every signal for the call */
	bool wiped_marked;             /* the kernel marks the fork-wiped pages already */
};

#endif
