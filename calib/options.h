/* Every TSCSHIM_* environment variable, in one table: name, type, default, range and
 * documentation together, so parsing, the command's --help and the README cannot drift. */
#ifndef CALIB_OPTIONS_H
#define CALIB_OPTIONS_H

#include "clocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum option_id {
	OPT_DISABLE,
	OPT_VERBOSE,
	OPT_MAX_SKEW_NS,
	OPT_PROBES,
	OPT_ESTIMATE_BUDGET_US,
	OPT_ESTIMATE_MIN_LOOPS,
	OPT_CALIBRATE_US,
	OPT_REQUIRE_TSC_CLOCKSOURCE,
	OPT_CLOCKS,
	OPT_FENCE,
	OPT_MAX_ERROR_NS,
	OPT_RESYNC_MS,
	OPT_CACHE,
	OPT_SYSTEM_RECORD,
	OPT_STATS,
	OPT_SERVE,
	OPT_MIN_GAIN_PCT,
	OPT_DECIDE_AFTER,
	OPTION_COUNT
};

enum option_type {
	OPTION_BOOL,   /* 0 or 1 */
	OPTION_UINT,   /* decimal, within [min, max] */
	OPTION_PATH,   /* empty, one of the spec's keywords, or an absolute path shorter than
			* OPTION_TEXT_MAX; no two path options may name the same file */
	OPTION_CLOCKS, /* comma-separated clock names, stored as a bit set (enum served_clock) */
	OPTION_CHOICE, /* one of the words in keyword ("a,b"), stored as its index */
};

/* OPT_SERVE's words, in the order of its keyword list. */
enum serve_mode { SERVE_AUTO, SERVE_ALWAYS };

#define OPTION_TEXT_MAX 512

/* Two defaults the shim's load path needs without reading the table (its strings are a
 * page the process would touch for nothing): the table uses these. */
#define OPTION_SYSTEM_RECORD_DEFAULT "/run/tscshim/calibration"
#define OPTION_CACHE_DEFAULT ""
/* And three the shim's clock reads ask before the decision, as the numbers the table's
 * texts parse to (test_options checks it): a process that sets no variable and never
 * decides parses nothing. The clocks: monotonic, monotonic_raw, boottime, realtime. */
#define OPTION_CLOCKS_DEFAULT_SET ((1u << SERVED_MONOTONIC) | (1u << SERVED_MONOTONIC_RAW) | \
				   (1u << SERVED_BOOTTIME) | (1u << SERVED_REALTIME))
#define OPTION_FENCE_DEFAULT 1
#define OPTION_DECIDE_AFTER_DEFAULT 1000

struct option_spec {
	const char *name;
	enum option_type type;
	const char *default_text;
	uint64_t min, max; /* OPTION_UINT only */
	const char *keyword; /* OPTION_PATH: a word accepted instead of a path, or NULL;
			      * OPTION_CHOICE: the words, comma-separated */
	const char *doc;
	const char *(*check)(const char *text); /* OPTION_PATH: NULL if a path is valid, else why not */
};

extern const struct option_spec option_table[OPTION_COUNT];


/* PATH values point at the text given to option_parse (the environment, argv, or the
 * table's default), which must outlive the values: nothing is copied, so a set of values
 * is small enough for the shim constructor's stack. */
struct option_values {
	uint64_t num[OPTION_COUNT];     /* BOOL, UINT, CLOCKS */
	const char *text[OPTION_COUNT]; /* PATH; "" for the others */
	bool from_environment[OPTION_COUNT];
};

void options_set_defaults(struct option_values *values);

/* Parses one value for one option into values. On failure returns -1, leaves values
 * unchanged and writes a one-line message naming the option and the fault to err. */
int option_parse(struct option_values *values, enum option_id id, const char *text,
		 char *err, size_t err_size);

/* Defaults, then every variable lookup() finds. Stops at the first invalid one (-1, err),
 * then refuses two path options naming the same file (options_check_paths). */
int options_load(struct option_values *values, const char *(*lookup)(const char *name),
		 char *err, size_t err_size);

/* -1 with err when two path options name the same file (compared after collapsing "//"
 * and "/./"; a symlink or ".." can still alias, which the file checks catch), else 0. */
int options_check_paths(const struct option_values *values, char *err, size_t err_size);

/* Finds an option by its variable name; -1 if there is none. */
int option_find(const char *name);

/* The table as a Markdown table, the README's source of truth. */
void options_write_markdown(FILE *out);

/* The table as man(7) paragraphs (.TP), the man pages' ENVIRONMENT section. */
void options_write_man(FILE *out);

#endif
