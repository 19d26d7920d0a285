/* The options as they were at load (shim/settings.h): read once by the constructor, handed to
 * the reads before the decision and, resolved, to the decision. Owns the parsed options and
 * the load's verdict on them (refused, cold start, no /proc); decides nothing and reads no
 * record (the load's check is shim/record_load.c's). */
#define _GNU_SOURCE
#include "settings.h"
#include "load_page.h"
#include "steps.h"

#include "environment.h"
#include "record.h"
#include "record_load.h"
#include "say.h"
#include "stats.h"

#include "libc_kind.h"
#include "options.h"
#include "text.h"

#include <string.h>
#include <sys/auxv.h>

/* The options as they were at load: the values on the load page (TSCSHIM_DISABLE=1 then
 * costs no page of its own). Paths given in the environment are copied: a program may
 * later change its environment or write over the strings (setproctitle does); defaults
 * are the table's own strings. */
static struct {
	struct option_values values;
	bool loaded;           /* the constructor ran: before, pass through and do not decide */
	bool variables_set;    /* a TSCSHIM_ variable was set: values holds them */
	bool disabled_alone;   /* TSCSHIM_DISABLE=1 was the only one: nothing parsed */
	bool wrong_libc;       /* the other C library: wrong_libc_message says why */
	bool cold_start;       /* no record passed the load's check: the decision at load may measure */
	bool boot_unknown;     /* no /proc at load: no record can be trusted or kept */
	bool verbose_at_exit;  /* TSCSHIM_VERBOSE: a process that never decides says so at exit */
	const char *invalid;   /* the options' message when one was invalid, else NULL */
} settings ON_LOAD_PAGE;
static char options_message[256];
static char wrong_libc_message[160];
/* The path values given in the environment, one after another: on the load page, as a
 * setting such as TSCSHIM_CACHE is common. The parser bounds each below OPTION_TEXT_MAX;
 * a path that no longer fits (three long ones) is read where the environment keeps it. */
static char options_paths[2 * OPTION_TEXT_MAX] ON_LOAD_PAGE;

/* The constants the load path compares with, on the load page (load_page.h). */
static char variable_prefix[] ON_LOAD_PAGE = "TSCSHIM_";
static char runtime_dir_variable[] ON_LOAD_PAGE = "XDG_RUNTIME_DIR";
static char disable_alone[] ON_LOAD_PAGE = "TSCSHIM_DISABLE=1";
static char system_record_default[] ON_LOAD_PAGE = OPTION_SYSTEM_RECORD_DEFAULT;
static char cache_default[] ON_LOAD_PAGE = OPTION_CACHE_DEFAULT;

/* Our own compares (calib/environment.h): a process that never reads a clock should not
 * pay for faulting in libc's getenv and strcmp. */
LOAD_PATH static bool same_text(const char *a, const char *b)
{
	for (; *a && *a == *b; a++, b++)
		;
	return *a == *b;
}

static const char *environment_at_load(const char *name)
{
	extern char **environ;
	return environment_value(environ, name);
}

/* Whether this process measures at load: no record can answer it, so it measures now,
 * before the program's own threads exist to compete with the estimator for the CPUs; a
 * warm one leaves the decision to the due read, which never measures. Without /proc the
 * boot cannot be known, and a measurement could never be kept: nothing is measured, and
 * the decision passes through, saying so. */
LOAD_PATH static bool must_measure_at_load(bool refused, const char *system_record, const char *cache,
					   const char *xdg_runtime_dir)
{
	STEP("load: options read");
	if (refused || settings.wrong_libc || record_may_answer(system_record, cache, xdg_runtime_dir))
		return false;
	settings.boot_unknown = !record_boot_known();
	settings.cold_start = !settings.boot_unknown;
	return settings.cold_start;
}

/* The path values given in the environment, copied onto the load page. */
static void keep_paths(struct option_values *v)
{
	size_t used = 0;
	for (int id = 0; id < OPTION_COUNT; id++) {
		const char *text = v->text[id];
		size_t len = strlen(text);
		if (!v->from_environment[id] || len == 0 || used + len + 1 > sizeof options_paths)
			continue;
		memcpy(options_paths + used, text, len + 1);
		v->text[id] = options_paths + used;
		used += len + 1;
	}
}

LOAD_PATH bool settings_load(void)
{
	extern char **environ;
	settings.loaded = true;
	/* setuid and the like: the environment belongs to someone else (the decision says so
	 * and passes through). */
	if (getauxval(AT_SECURE))
		return false;
	/* Preloaded into a program of the other C library: nothing measured at load. The
	 * message goes off the load page only then. */
	char why[sizeof wrong_libc_message];
	if (libc_check(why, sizeof why) != 0) {
		settings.wrong_libc = true;
		text_line(wrong_libc_message, sizeof wrong_libc_message, why, NULL);
	}
	int variables = 0;
	bool disabled = false;
	const char *xdg = NULL;
	for (char **e = environ; e && *e; e++) {
		if (environment_entry_starts_with(*e, variable_prefix)) {
			variables++;
			disabled = disabled || same_text(*e, disable_alone);
		}
		xdg = xdg ? xdg : environment_entry_value(*e, runtime_dir_variable);
	}
	/* The common case, a machine-wide install: nothing written, the defaults parsed by the
	 * decision if ever. */
	if (variables == 0)
		return must_measure_at_load(false, system_record_default, cache_default, xdg);
	if (variables == 1 && disabled) {
		/* The A/B baseline: nothing to parse, nothing to look for. */
		settings.disabled_alone = true;
		return false;
	}
	settings.variables_set = true;
	if (options_load(&settings.values, environment_at_load, options_message, sizeof options_message) != 0) {
		settings.invalid = options_message;
		say(settings.invalid, "; passing every call to the real clock", NULL);
		return false;
	}
	keep_paths(&settings.values);
	say_level = (unsigned)settings.values.num[OPT_VERBOSE];
	settings.verbose_at_exit = say_level >= 1;
	if (settings.verbose_at_exit)
		say_keep_stderr();
	/* At load, so that stderr is compared with the one the process had then. */
	stats_setup(settings.values.text[OPT_STATS]);
	const struct option_values *o = &settings.values;
	return must_measure_at_load(o->num[OPT_DISABLE] != 0 || o->num[OPT_CLOCKS] == 0, o->text[OPT_SYSTEM_RECORD],
				    o->text[OPT_CACHE], xdg);
}

bool settings_loaded(void)
{
	return settings.loaded;
}

LOAD_PATH uint64_t settings_counted_clocks(void)
{
	return settings.variables_set ? settings.values.num[OPT_CLOCKS] : OPTION_CLOCKS_DEFAULT_SET;
}

uint64_t setting_before_decision(enum option_id id)
{
	if (id == OPT_CLOCKS)
		return settings_counted_clocks();
	if (settings.variables_set)
		return settings.values.num[id];
	switch (id) {
	case OPT_FENCE: return OPTION_FENCE_DEFAULT;
	case OPT_DECIDE_AFTER: return OPTION_DECIDE_AFTER_DEFAULT;
	case OPT_DISABLE: return settings.disabled_alone;
	default: {
		/* Any other: the table's default, parsed into a copy of the caller's own. */
		struct option_values defaults;
		options_set_defaults(&defaults);
		return defaults.num[id];
	}
	}
}

const struct option_values *settings_for_decision(struct decision_result *r)
{
	*r = (struct decision_result){.max_shift_ns = UINT64_MAX};
	const char *refusal = NULL;
	const struct option_values *o = NULL;
	if (settings.disabled_alone && !settings.wrong_libc) {
		/* The A/B baseline's decision: the defaults it reports are options.h's numbers;
		 * nothing to parse or look at. */
		r->served = (uint32_t)setting_before_decision(OPT_CLOCKS);
		r->fenced = setting_before_decision(OPT_FENCE) != 0;
		refusal = "TSCSHIM_DISABLE=1";
	} else {
		if (!settings.variables_set)
			options_set_defaults(&settings.values);
		if (settings.disabled_alone)
			settings.values.num[OPT_DISABLE] = 1;
		o = &settings.values;
		r->served = (uint32_t)o->num[OPT_CLOCKS];
		r->fenced = o->num[OPT_FENCE] != 0;
		if (getauxval(AT_SECURE))
			refusal = "secure execution: environment and cache ignored, passing through";
		else if (settings.invalid || settings.wrong_libc)
			refusal = settings.invalid ? settings.invalid : wrong_libc_message;
		else if (o->num[OPT_DISABLE] || r->served == 0)
			refusal = o->num[OPT_DISABLE] ? "TSCSHIM_DISABLE=1" : "TSCSHIM_CLOCKS=none";
	}
	if (!refusal)
		return o;
	text_line(r->reason, sizeof r->reason, refusal, NULL);
	return NULL;
}

bool settings_cold_start(void)
{
	return settings.cold_start;
}

bool settings_boot_unknown(void)
{
	return settings.boot_unknown;
}

const char *settings_wrong_libc(void)
{
	return settings.wrong_libc && !settings.invalid ? wrong_libc_message : NULL;
}

bool settings_invalid(void)
{
	return settings.invalid != NULL;
}

/* At exit, in every process: on the load path's pages. */
LOAD_PATH bool settings_say_at_exit(void)
{
	return settings.verbose_at_exit;
}

const char *settings_never_decided_why(bool claim_held)
{
	if (settings.wrong_libc)
		return wrong_libc_message;
	if (settings.values.num[OPT_DISABLE])
		return "TSCSHIM_DISABLE=1";
	if (settings.values.num[OPT_CLOCKS] == 0)
		return "TSCSHIM_CLOCKS=none";
	if (claim_held)
		return "a decision was still under way at exit";
	return "fewer reads of a served clock than TSCSHIM_DECIDE_AFTER";
}
