/* --metric NAME:REGEX[:higher|:lower]: a number the command prints about itself (requests
 * per second, a latency), read from each run's output with a POSIX extended regular
 * expression whose first group is the number, with the scale programs print after it
 * (4113k, 16.1Gi). Lower is better unless :higher, as for time. */
#define _GNU_SOURCE
#include "ab_metric.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);
	return len >= n && strncmp(s + len - n, suffix, n) == 0;
}

int ab_metric_parse(const char *spec, struct ab_metric *out, char *err, size_t err_size)
{
	memset(out, 0, sizeof *out);
	const char *colon = strchr(spec, ':');
	size_t name_len = colon ? (size_t)(colon - spec) : 0;
	bool name_ok = name_len > 0 && name_len < AB_METRIC_NAME_MAX;
	for (size_t i = 0; name_ok && i < name_len; i++)
		name_ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", spec[i]) != NULL;
	if (!name_ok) {
		snprintf(err, err_size, "--metric '%.64s': expected NAME:REGEX[:higher|:lower], NAME of letters, digits, _ -",
			 spec);
		return -1;
	}
	snprintf(out->name, sizeof out->name, "%.*s", (int)name_len, spec);
	const char *regex = colon + 1;
	size_t len = strlen(regex);
	/* The direction is a suffix, so that the expression itself may hold colons. */
	if (ends_with(regex, len, ":higher")) {
		out->higher_is_better = true;
		len -= 7;
	} else if (ends_with(regex, len, ":lower")) {
		len -= 6;
	}
	if (len == 0 || len >= sizeof out->pattern) {
		snprintf(err, err_size, "--metric '%.64s': the expression must have 1..%zu characters", spec,
			 sizeof out->pattern - 1);
		return -1;
	}
	memcpy(out->pattern, regex, len);
	out->pattern[len] = '\0';
	int rc = regcomp(&out->re, out->pattern, REG_EXTENDED | REG_NEWLINE);
	if (rc != 0) {
		char why[128];
		regerror(rc, &out->re, why, sizeof why);
		snprintf(err, err_size, "--metric '%.64s': %s", spec, why);
		return -1;
	}
	if (out->re.re_nsub < 1) {
		regfree(&out->re);
		snprintf(err, err_size, "--metric '%.64s': the expression needs a group, (...), around the number", spec);
		return -1;
	}
	return 0;
}

void ab_metric_free(struct ab_metric *m)
{
	regfree(&m->re);
}

/* The scales programs print right after a number (fio's IOPS=4113k, BW=16.1GiB/s): SI,
 * with K for kilo too since many print it so, and binary. Lower-case m is left out: milli
 * or mega? */
static const struct {
	const char *suffix;
	double factor;
} scales[] = {
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
};

int ab_metric_number(const char *text, double *out)
{
	const char *start = text + strspn(text, " \t");
	errno = 0;
	char *end;
	double v = strtod(start, &end);
	/* strtod also reads hexadecimal, inf and nan: no program prints its figure so, and a
	 * capture that reads so is more likely a regex that caught the wrong thing. */
	size_t read = (size_t)(end - start);
	if (read == 0 || strspn(start, "+-0123456789.eE") < read || errno)
		return -1;
	size_t rest = strlen(end);
	while (rest > 0 && (end[rest - 1] == ' ' || end[rest - 1] == '\t'))
		rest--;
	double factor = rest == 0 ? 1 : 0;
	for (size_t i = 0; i < sizeof scales / sizeof *scales && factor == 0; i++)
		if (strlen(scales[i].suffix) == rest && strncmp(end, scales[i].suffix, rest) == 0)
			factor = scales[i].factor;
	if (factor == 0 || !isfinite(v * factor))
		return -1;
	*out = v * factor;
	return 0;
}

int ab_metric_extract(const struct ab_metric *m, const char *text, double *out, char *captured, size_t captured_size)
{
	regmatch_t match[2];
	if (regexec(&m->re, text, 2, match, 0) != 0 || match[1].rm_so < 0)
		return -1;
	const char *group = text + match[1].rm_so;
	size_t len = (size_t)(match[1].rm_eo - match[1].rm_so);
	char number[64];
	if (len < sizeof number) {
		memcpy(number, group, len);
		number[len] = '\0';
		if (ab_metric_number(number, out) == 0)
			return 0;
	}
	/* For the message: what the group caught, cut where it would not fit. */
	if (len < captured_size)
		snprintf(captured, captured_size, "%.*s", (int)len, group);
	else
		snprintf(captured, captured_size, "%.*s...", (int)(captured_size > 3 ? captured_size - 4 : 0), group);
	return -2;
}
