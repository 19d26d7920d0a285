/* tscshim run [--library PATH] -- CMD [ARGS]: runs CMD with the shim preloaded, appended
 * to any LD_PRELOAD already set. */
#define _GNU_SOURCE
#include "cli.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int command_run(int argc, char **argv)
{
	const char *library_option = NULL;
	char library[PATH_MAX];
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		const char *value;
		int m = cli_option_text("run", argc, argv, &i, "--library", &value);
		if (m < 0)
			return EXIT_USAGE;
		if (m > 0) {
			library_option = value;
		} else if (strcmp(argv[i], "--help") == 0) {
			printf("usage: tscshim run [--library PATH] -- COMMAND [ARGS...]\n"
			       "--library PATH: the shim to preload (default: $TSCSHIM_LIBRARY, else the installed one).\n");
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
	if (cli_find_library("run", library_option, library, sizeof library) != 0)
		return EXIT_USAGE;
	if (cli_set_preload(library) != 0) {
		fprintf(stderr, "tscshim run: cannot set LD_PRELOAD\n");
		return EXIT_USAGE;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "tscshim run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
