/* Helpers every subcommand uses: options and their values, strict numbers, this
 * executable's path, the library to preload and the environment's settings. */
#define _GNU_SOURCE
#include "util.h"

#include "decimal.h"

/* LIBDIR_FROM_BINDIR: where `make install` puts the library, relative to the command. */
#include "install-dirs.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

double cli_seconds_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *lookup_environment(const char *name)
{
	return getenv(name);
}

int cli_load_environment(const char *command, struct option_values *values)
{
	char err[256];
	if (options_load(values, lookup_environment, err, sizeof err) != 0) {
		fprintf(stderr, "tscshim %s: %s\n", command, err);
		return -1;
	}
	return 0;
}

/* The candidates in the order they are tried; the first that names a readable file wins.
 * An explicit choice (option, then variable) is the only candidate: a typo must not fall
 * back silently to another library. */
static int library_candidates(const char *explicit_path, char paths[][PATH_MAX], int max)
{
	const char *from_environment = getenv("TSCSHIM_LIBRARY");
	if (explicit_path && explicit_path[0]) {
		snprintf(paths[0], PATH_MAX, "%s", explicit_path);
		return 1;
	}
	if (from_environment && from_environment[0]) {
		snprintf(paths[0], PATH_MAX, "%s", from_environment);
		return 1;
	}
	char self[PATH_MAX];
	if (max < 2 || cli_self_path(self, sizeof self) != 0)
		return 0;
	const char *dir = dirname(self);
	/* Installed: BINDIR/LIBDIR_FROM_BINDIR; the build tree: both in build/. */
	snprintf(paths[0], PATH_MAX, "%s/" LIBDIR_FROM_BINDIR "/libtscshim.so.1", dir);
	snprintf(paths[1], PATH_MAX, "%s/libtscshim.so", dir);
	return 2;
}

/* The first readable candidate, made absolute (so that it still loads after CMD changes
 * directory), into buf: 0. Else -1, with the candidates in tried and the last error. */
static int find_library(const char *explicit_path, char *buf, size_t size, char *tried,
			size_t tried_size, int *error)
{
	char paths[2][PATH_MAX];
	int count = library_candidates(explicit_path, paths, 2);
	*error = ENOENT;
	snprintf(tried, tried_size, "%s", count ? "" : "nothing, /proc/self/exe unreadable");
	for (int i = 0; i < count; i++) {
		char resolved[PATH_MAX];
		if (access(paths[i], R_OK) == 0 && realpath(paths[i], resolved)) {
			if (strlen(resolved) < size) {
				memcpy(buf, resolved, strlen(resolved) + 1);
				return 0;
			}
			errno = ENAMETOOLONG;
		}
		*error = errno;
		size_t used = strlen(tried);
		snprintf(tried + used, tried_size - used, "%s%s", i ? ", " : "", paths[i]);
	}
	return -1;
}

int cli_find_library(const char *command, const char *explicit_path, char *buf, size_t size)
{
	char tried[2 * PATH_MAX + 8];
	int error;
	if (find_library(explicit_path, buf, size, tried, sizeof tried, &error) == 0)
		return 0;
	fprintf(stderr, "tscshim %s: libtscshim not found (tried %s: %s); give --library PATH or set TSCSHIM_LIBRARY\n",
		command, tried, strerror(error));
	return -1;
}

int cli_set_preload(const char *library)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !old[0])
		return setenv("LD_PRELOAD", library, 1);
	size_t size = strlen(old) + strlen(library) + 2;
	char *joined = malloc(size);
	if (!joined)
		return -1;
	snprintf(joined, size, "%s:%s", old, library);
	int rc = setenv("LD_PRELOAD", joined, 1);
	free(joined);
	return rc;
}
