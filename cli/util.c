#define _GNU_SOURCE
#include "util.h"

#include "decimal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_option_text(const char *command, int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);
	if (strncmp(arg, name, len) != 0)
		return 0;
	if (arg[len] == '=') {
		*value = arg + len + 1;
		return 1;
	}
	if (arg[len] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "tscshim %s: option %s needs a value\n", command, name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

int cli_option_value(const char *command, int argc, char **argv, int *i, const char *name,
		     enum option_id id, struct option_values *values)
{
	const char *value;
	int matched = cli_option_text(command, argc, argv, i, name, &value);
	if (matched <= 0)
		return matched;
	char err[256];
	if (option_parse(values, id, value, err, sizeof err) != 0) {
		/* The table names the variable; the user typed the option. */
		fprintf(stderr, "tscshim %s: %s (option %s)\n", command, err, name);
		return -1;
	}
	return 1;
}

int cli_parse_long(const char *text, long min, long max, long *out)
{
	uint64_t v;
	if (!text || decimal_parse_u64(text, strlen(text), &v) != 0 || v > (uint64_t)LONG_MAX ||
	    (long)v < min || (long)v > max)
		return -1;
	*out = (long)v;
	return 0;
}

int cli_parse_double(const char *text, double min, double max, double *out)
{
	/* strtod alone would take a sign, spaces, hex, "inf" and "nan". */
	if (!text || !*text || !((*text >= '0' && *text <= '9') || *text == '.'))
		return -1;
	errno = 0;
	char *end;
	double v = strtod(text, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_self_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0 || (size_t)n >= size - 1)
		return -1;
	buf[n] = '\0';
	return 0;
}
