/* tscshim run [--library PATH] -- CMD [ARGS]: runs CMD with the shim preloaded, appended
 * to any LD_PRELOAD already set. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library next to this executable (both live in build/). */
int cli_default_library(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	int len = snprintf(buf, size, "%s/libtscshim.so", dirname(self));
	return len > 0 && (size_t)len < size ? 0 : -1;
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

int command_run(int argc, char **argv)
{
	char library[PATH_MAX] = "";
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
			snprintf(library, sizeof library, "%s", argv[++i]);
		} else if (strcmp(argv[i], "--help") == 0) {
			printf("usage: tscshim run [--library PATH] -- COMMAND [ARGS...]\n");
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "tscshim run: unknown option '%s'\n", argv[i]);
			return EXIT_USAGE;
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "tscshim run: no command given (usage: tscshim run -- COMMAND [ARGS...])\n");
		return EXIT_USAGE;
	}
	if (!library[0] && cli_default_library(library, sizeof library) != 0) {
		fprintf(stderr, "tscshim run: cannot locate libtscshim.so (use --library)\n");
		return EXIT_USAGE;
	}
	if (access(library, R_OK) != 0) {
		fprintf(stderr, "tscshim run: %s: %s\n", library, strerror(errno));
		return EXIT_USAGE;
	}
	if (cli_set_preload(library) != 0) {
		fprintf(stderr, "tscshim run: cannot set LD_PRELOAD\n");
		return EXIT_USAGE;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "tscshim run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
