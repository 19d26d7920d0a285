/* TSCSHIM_STATS destinations: the check and the %p / %% expansion. */
#include "options.h"
#include "stats_path.h"
#include "unit.h"

#include <string.h>

static char out[64];

static int expand(const char *pattern, long pid)
{
	memset(out, 'x', sizeof out);
	return stats_path_expand(pattern, pid, out, sizeof out);
}

static void expands_pid_and_percent(void)
{
	CHECK(expand("/var/log/tscshim/stats.%p", 1234) == 0);
	CHECK(strcmp(out, "/var/log/tscshim/stats.1234") == 0);
	CHECK(expand("/d/%p-%p", 7) == 0);
	CHECK(strcmp(out, "/d/7-7") == 0);
	CHECK(expand("/d/100%%.%p", 42) == 0);
	CHECK(strcmp(out, "/d/100%.42") == 0);
	CHECK(expand("/d/%%p", 42) == 0);
	CHECK(strcmp(out, "/d/%p") == 0);
	CHECK(expand("/plain/file", 42) == 0);
	CHECK(strcmp(out, "/plain/file") == 0);
}

static void rejects_bad_patterns(void)
{
	CHECK(stats_path_check("/d/%x") != NULL);
	CHECK(stats_path_check("/d/trailing%") != NULL);
	CHECK(stats_path_check("/d/%P") != NULL);
	CHECK(stats_path_check("relative/%p") != NULL);
	CHECK(stats_path_check("stats.%p") != NULL);
	CHECK(stats_path_check("stderr") == NULL);
	CHECK(stats_path_check("") == NULL);
	CHECK(expand("/d/%x", 1) == -1);
	CHECK(expand("relative", 1) == -1);
}

static void never_overflows(void)
{
	char small[8];
	CHECK(stats_path_expand("/1234567", 1, small, sizeof small) == -1);
	CHECK(stats_path_expand("/123456", 1, small, sizeof small) == 0);
	CHECK(strcmp(small, "/123456") == 0);
	CHECK(stats_path_expand("/%p", 1234567, small, sizeof small) == -1);
	CHECK(stats_path_expand("/%p", 123456, small, sizeof small) == 0);
	CHECK(stats_path_expand("/a", 1, small, 0) == -1);
}

static void the_option_parser_checks_the_pattern(void)
{
	struct option_values values;
	char err[256];
	options_set_defaults(&values);
	CHECK(option_parse(&values, OPT_STATS, "/tmp/s.%p", err, sizeof err) == 0);
	CHECK(strcmp(values.text[OPT_STATS], "/tmp/s.%p") == 0);
	CHECK(option_parse(&values, OPT_STATS, "/tmp/s.%d", err, sizeof err) == -1);
	CHECK(strstr(err, "TSCSHIM_STATS") != NULL);
	CHECK(strcmp(values.text[OPT_STATS], "/tmp/s.%p") == 0);
	CHECK(option_parse(&values, OPT_STATS, "stats.txt", err, sizeof err) == -1);
	CHECK(strstr(err, "absolute") != NULL);
}

int main(void)
{
	RUN(expands_pid_and_percent);
	RUN(rejects_bad_patterns);
	RUN(never_overflows);
	RUN(the_option_parser_checks_the_pattern);
	return unit_finish();
}
