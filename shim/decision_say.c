/* The decision's one verbose line (shim/decision_say.h): composes it from the result; decides nothing. */
#include "decision_say.h"

#include "cost.h"
#include "record.h"
#include "say.h"

#include "benefit.h"
#include "text.h"

#include <string.h>

static const char *source_words(enum tscshim_source s)
{
	switch (s) {
	case TSCSHIM_SOURCE_SYSTEM_RECORD: return "from the machine-wide record";
	case TSCSHIM_SOURCE_USER_CACHE: return "from the cache";
	case TSCSHIM_SOURCE_MEASURED: return "measured now";
	default: return "";
	}
}

/* The cost part: every figure, where it came from, and the setting. */
static void say_costs(struct text *t, const struct decision_result *r, const struct option_values *o)
{
	const struct cost_ps *c = &r->cost;
	if (!c->kernel || !o)
		return;
	text_add(t, "; per call: kernel ");
	cost_add_ns(t, c->kernel);
	text_add(t, " ns (");
	text_add(t, kernel_path_name(cost_kernel_path(c)));
	text_add(t, "), system call ");
	cost_add_ns(t, c->syscall);
	text_add(t, " ns, fenced ");
	cost_add_ns(t, c->fenced);
	text_add(t, " ns (");
	text_add(t, read_plan_name(cost_read_plan(c, true)));
	static const char *const plan_words[4] = {"; lfence first ", ", after ", "; rdtscp first ", ", after "};
	for (int p = 0; say_level >= 2 && p < 4; p++) {
		/* Every fenced plan measured (cost.c's order): what the choice was made from. */
		if (!c->fenced_by_plan[p])
			continue;
		text_add(t, plan_words[p]);
		cost_add_ns(t, c->fenced_by_plan[p]);
	}
	text_add(t, "), unfenced ");
	cost_add_ns(t, c->unfenced);
	text_add(t, r->costs_from_record ? " ns, from the record; TSCSHIM_SERVE=" : " ns, measured now; TSCSHIM_SERVE=");
	text_add(t, o->num[OPT_SERVE] == SERVE_ALWAYS ? "always" : "auto");
	text_add(t, ", TSCSHIM_MIN_GAIN_PCT=");
	text_add_u64(t, o->num[OPT_MIN_GAIN_PCT]);
}

/* "N us at clock read M", "... at load", "... when the status was asked for". */
static void say_when(struct text *t, const struct decision_result *r, bool at_load)
{
	text_add_u64(t, r->decide_ns / 1000);
	if (at_load) {
		text_add(t, " us at load (no record passed the checks at load)");
	} else if (r->at_read > 1) {
		text_add(t, " us at clock read ");
		text_add_u64(t, r->at_read);
	} else {
		text_add(t, r->at_read ? " us at the first clock read" : " us when the status was asked for");
	}
}

void decision_say(const struct decision_result *r, const struct option_values *o, bool at_load)
{
	char figures[400];
	struct text t = text_start(figures, sizeof figures);
	uint64_t rate = r->rate_millihz;
	text_add(&t, " (rate ");
	text_add_u64(&t, rate / 1000);
	text_add(&t, ".");
	text_add(&t, rate % 1000 < 100 ? (rate % 1000 < 10 ? "00" : "0") : "");
	text_add_u64(&t, rate % 1000);
	text_add(&t, " Hz");
	const char *source = source_words(r->source);
	text_add(&t, source[0] ? ", " : "");
	text_add(&t, source);
	text_add(&t, r->fenced ? ", fenced" : ", unfenced");
	text_add(&t, " reads, decided in ");
	say_when(&t, r, at_load);
	say_costs(&t, r, o);
	text_add(&t, ")");
	/* The benefit gate's reason starts "pass-through: ", which the line says already. */
	const char *reason = r->reason + (r->not_worth_it ? strlen("pass-through: ") : 0);
	const char *note = record_note();
	say(r->serving ? "serving from the TSC: " : "passing through: ", reason, figures, note[0] ? "; cache " : "",
	    note, NULL);
}
