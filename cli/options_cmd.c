/* tscshim options [--markdown | --man]: the TSCSHIM_* variables of the options table. */
#include "cli.h"

#include "options.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void options_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim options [--markdown | --man]\n"
		"\n"
		"Lists every TSCSHIM_* environment variable the shim and the command read: its\n"
		"default and what it does. --markdown: the README's table; --man: the man pages'\n"
		"ENVIRONMENT paragraphs.\n");
}

int command_options(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		options_usage(stdout);
		return 0;
	}
	bool markdown = argc == 2 && strcmp(argv[1], "--markdown") == 0;
	bool man = argc == 2 && strcmp(argv[1], "--man") == 0;
	if (argc > 2 || (argc == 2 && !markdown && !man)) {
		fprintf(stderr, "tscshim options: usage: tscshim options [--markdown | --man] (try tscshim options --help)\n");
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
