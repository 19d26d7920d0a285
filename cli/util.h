/* Helpers every subcommand uses: matching an option and its value, strict numbers, the
 * monotonic clock in seconds, this executable's path, the library to preload and the
 * environment's TSCSHIM_* settings. Internal to the command. */
#ifndef CLI_UTIL_H
#define CLI_UTIL_H

#include "options.h"

#include <stddef.h>

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]: 1 with *value set (and *i past
 * VALUE), 0 if another argument, -1 after one line on stderr if the value is missing.
 * command names the subcommand in that line. */
int cli_option_text(const char *command, int argc, char **argv, int *i, const char *name, const char **value);

/* As cli_option_text, then parses VALUE into option id of values (the TSCSHIM_* table):
 * 1 if it matched and parsed, 0 if not this option, -1 after one line for a missing or
 * invalid value. */
int cli_option_value(const char *command, int argc, char **argv, int *i, const char *name,
		     enum option_id id, struct option_values *values);

/* A whole decimal number (digits only) in [min, max] (min >= 0): 0, or -1. */
int cli_parse_long(const char *text, long min, long max, long *out);
/* A finite decimal number in [min, max], starting with a digit or '.': 0, or -1. */
int cli_parse_double(const char *text, double min, double max, double *out);

/* CLOCK_MONOTONIC in seconds, for deadlines and wall times of whole runs. */
double cli_seconds_now(void);

/* This executable's path (/proc/self/exe), for re-executing itself or finding the
 * library beside it: 0, or -1 if unreadable or longer than size. */
int cli_self_path(char *buf, size_t size);

/* The preload library's absolute path into buf. Tried in order: explicit_path
 * (--library) if given, else $TSCSHIM_LIBRARY if set, else where `make install` put it
 * relative to this executable, then next to it (the build tree). If none is readable,
 * prints one line naming the paths tried and returns -1 (the caller exits 2). */
int cli_find_library(const char *command, const char *explicit_path, char *buf, size_t size);

/* LD_PRELOAD with library appended: 0, or -1. */
int cli_set_preload(const char *library);

/* The environment's TSCSHIM_* settings; prints one line and returns -1 if one is invalid. */
int cli_load_environment(const char *command, struct option_values *values);

#endif
