/* --metric NAME:REGEX[:higher|:lower]: a number the command prints about itself (requests
 * per second, a latency), read from each run's output with a POSIX extended regular
 * expression whose first group is the number. Lower is better unless :higher, as for time. */
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

int ab_metric_extract(const struct ab_metric *m, const char *text, double *out)
{
	regmatch_t match[2];
	if (regexec(&m->re, text, 2, match, 0) != 0 || match[1].rm_so < 0)
		return -1;
	size_t len = (size_t)(match[1].rm_eo - match[1].rm_so);
	char number[64];
	if (len == 0 || len >= sizeof number)
		return -2;
	memcpy(number, text + match[1].rm_so, len);
	number[len] = '\0';
	errno = 0;
	char *end;
	double v = strtod(number, &end);
	while (*end == ' ' || *end == '\t')
		end++;
	if (end == number || *end || errno || !isfinite(v))
		return -2;
	*out = v;
	return 0;
}
