/* --metric NAME:REGEX[:higher|:lower]: a number read from each run's output. Pure;
 * internal to the command. */
#ifndef CLI_AB_METRIC_H
#define CLI_AB_METRIC_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

enum { AB_MAX_METRICS = 8, AB_METRIC_NAME_MAX = 32 };

struct ab_metric {
	char name[AB_METRIC_NAME_MAX];
	bool higher_is_better;
	char pattern[256];
	regex_t re;
};

/* Parses "NAME:REGEX[:higher|:lower]"; REGEX is POSIX extended with at least one group.
 * Returns 0 (free with ab_metric_free), or -1 with one line in err. */
int ab_metric_parse(const char *spec, struct ab_metric *out, char *err, size_t err_size);
void ab_metric_free(struct ab_metric *m);

/* What ab_metric_number reads, for the message that refuses a capture. */
#define AB_METRIC_NUMBER_FORM "a decimal, optionally followed by k, K, M, G, T, Ki, Mi, Gi or Ti"

/* A captured number: a decimal as strtod reads it (sign, fraction, exponent; not hex, inf
 * or nan), followed at once by nothing or by one scale: k and K (10^3), M (10^6), G (10^9),
 * T (10^12), Ki (2^10), Mi (2^20), Gi (2^30), Ti (2^40). Spaces and tabs around it are
 * left out. Anything else, a unit included ("5kB"), is refused. 0 with *out set, or -1. */
int ab_metric_number(const char *text, double *out);

/* The number in the first group of the first match in text. 0: found; -1: no match;
 * -2: the group is not a number, and captured holds what it caught (cut to fit, ending
 * "..." then), for the message. */
enum { AB_METRIC_CAPTURED_MAX = 48 };
int ab_metric_extract(const struct ab_metric *m, const char *text, double *out, char *captured,
		      size_t captured_size);

#endif
