#define _GNU_SOURCE
#include "cli.h"
#include "util.h"

/* LIBDIR_FROM_BINDIR: where `make install` puts the library, relative to the command. */
#include "install-dirs.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int command_options(int argc, char **argv)
{
	bool markdown = argc == 2 && strcmp(argv[1], "--markdown") == 0;
	bool man = argc == 2 && strcmp(argv[1], "--man") == 0;
	if (argc > 2 || (argc == 2 && !markdown && !man)) {
		fprintf(stderr, "tscshim options: usage: tscshim options [--markdown | --man]\n");
		return EXIT_USAGE;
	}
	if (markdown) {
		options_write_markdown(stdout);
		return 0;
	}
	if (man) {
		options_write_man(stdout);
		return 0;
	}
	for (int id = 0; id < OPTION_COUNT; id++)
		printf("%-32s default '%s'\n    %s\n", option_table[id].name,
		       option_table[id].default_text, option_table[id].doc);
	return 0;
}
