/* The TSC's share of a run: the stats lines its processes wrote, summed. */
#define _GNU_SOURCE
#include "ab_tsc.h"

#include <stdio.h>
#include <string.h>

/* One line per process that loaded the shim; fields other than active= and the clocks' are
 * not read. */
void ab_read_stats(const char *file, struct ab_tsc *t)
{
	enum { PREFIX_LEN = sizeof STATS_LINE_PREFIX - 1 };
	memset(t, 0, sizeof *t);
	FILE *f = fopen(file, "r");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, STATS_LINE_PREFIX, PREFIX_LEN) != 0)
			continue;
		t->lines++;
		char *save;
		for (char *tok = strtok_r(line + PREFIX_LEN, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			char *eq = strchr(tok, '=');
			unsigned long long s, n;
			if (!eq)
				continue;
			if (strcmp(tok, "active=1") == 0)
				t->active++;
			if (sscanf(eq + 1, "%llu/%llu", &s, &n) != 2)
				continue;
			for (int k = 0; k < AB_CLOCKS; k++)
				if ((size_t)(eq - tok) == strlen(stats_clock_name(k)) &&
				    strncmp(tok, stats_clock_name(k), (size_t)(eq - tok)) == 0)
					t->served[k] += s, t->total[k] += n;
		}
	}
	fclose(f);
}

unsigned long long ab_tsc_served(const struct ab_tsc *t)
{
	unsigned long long s = 0;
	for (int k = 0; k < AB_CLOCKS; k++)
		s += t->served[k];
	return s;
}

unsigned long long ab_tsc_total(const struct ab_tsc *t)
{
	unsigned long long s = 0;
	for (int k = 0; k < AB_CLOCKS; k++)
		s += t->total[k];
	return s;
}

void ab_tsc_add(struct ab_tsc *sum, const struct ab_tsc *part)
{
	sum->lines += part->lines, sum->active += part->active;
	for (int k = 0; k < AB_CLOCKS; k++)
		sum->served[k] += part->served[k], sum->total[k] += part->total[k];
}
