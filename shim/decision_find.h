/* The decision under way, and what it finds (shim/decision_find.c): its frame (struct
 * decision), the look-ups a question needs, and the record that answers this boot and CPU
 * set. For the decisions' files alone (shim/decision.c, shim/decision_forced.c): the gate
 * knows only decision.h. */
#ifndef SHIM_DECISION_FIND_H
#define SHIM_DECISION_FIND_H

#include "decision_result.h"
#include "record.h"
#include "record_load.h"

#include "cache.h"
#include "steps.h"
#include "system.h"
#include "text.h"

#include <stdbool.h>

/* A decision under way: a frame of judged_at_read or decision_forced. The look-ups a
 * question needs are made once, where it is asked (the key says which were made). */
struct decision {
	struct decision_setup s;        /* what the gate gave (a measurement may find the signals
					 * unblocked again after its fork) */
	const struct option_values *o;
	struct decision_result *r;
	struct cache_key key;
	struct cache_record record;     /* the record that answers, once one does */
	enum tscshim_source source;     /* where it came from; NONE: none answers (yet) */
	bool inconclusive;              /* the cache's record is inconclusive */
	const char *cache_path;         /* the per-user cache, NULL for none: cache_path_of */
	bool cache_path_known;          /* cache_path is made (only where a step needs it) */
	struct cpu_mask cpus;           /* key.cpus points here once read */
	char boot_id[sizeof ((struct cache_record *)0)->boot_id]; /* key.boot_id, once read */
	char clocksource[CACHE_CLOCKSOURCE_MAX + 1]; /* "" where /sys cannot tell */
	bool clocksource_read;
	const char *lookup_failed;      /* why a look-up the decision needed failed */
	enum state_reason lookup_failed_code;
};

/* The three below are inline where each decision calls them, as they were when the
 * decision was one file: the decision runs no function more (shim/decision_path.ld), and a
 * decision at a read no frame more on the claim's page (test/stack-usage.py). */

/* A decision begins: its frame, from what the gate gave. */
static inline void begin(struct decision *d, const struct decision_setup *s, struct decision_result *r)
{
	*d = (struct decision){.s = *s, .o = s->o, .r = r};
}

/* The per-user cache's path, made at its first need: a decision from the machine-wide
 * record has none (making it asks XDG_RUNTIME_DIR's owner: a system call). */
static inline const char *cache_path_of(struct decision *d)
{
	if (!d->cache_path_known) {
		d->cache_path = record_cache_path(d->o);
		d->cache_path_known = true;
	}
	return d->cache_path;
}

/* The decision ends here, passing through, saying why (the code for readers, the text for
 * people). */
static inline void pass_through(struct decision *d, enum state_reason code, const char *reason)
{
	text_line(d->r->reason, sizeof d->r->reason, reason, NULL);
	d->r->reason_code = code;
	d->r->serving = false;
}

/* The kernel's clocksource (three system calls under /sys), "" where /sys cannot tell. */
static inline const char *read_clocksource(struct decision *d)
{
	if (!d->clocksource_read) {
		if (read_current_clocksource(d->clocksource, sizeof d->clocksource) != 0)
			d->clocksource[0] = '\0';
		d->clocksource_read = true;
		STEP("decision: the clocksource's name read");
	}
	return d->clocksource;
}

/* The steps that find, each in a line (shim/decision_find.c says how). Hidden, so that a
 * call from the other decision files is a direct one, as it was in one file, not one
 * through the GOT (a byte more each, on the decision's pages). */
#pragma GCC visibility push(hidden)
bool key_of_this_boot(struct decision *d, bool forced); /* false: passing through */
bool answer_in(struct decision *d, const struct record_text *t, struct cache_record *out);
bool record_for_this_boot(struct decision *d, bool forced); /* into d->record, d->source */
#pragma GCC visibility pop

#endif
