/* Small helpers every subcommand uses: matching an option and its value, strict numbers,
 * this executable's path. Internal to the command. */
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

/* This executable's path (/proc/self/exe), for re-executing itself or finding the
 * library beside it: 0, or -1 if unreadable or longer than size. */
int cli_self_path(char *buf, size_t size);

#endif
