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

/* The number in the first group of the first match in text. 0: found; -1: no match;
 * -2: the group is not a number. */
int ab_metric_extract(const struct ab_metric *m, const char *text, double *out);

#endif
