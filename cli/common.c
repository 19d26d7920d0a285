#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_option_value(const char *command, int argc, char **argv, int *i, const char *name,
		     enum option_id id, struct option_values *values)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);
	const char *value;
	if (strncmp(arg, name, len) != 0)
		return 0;
	if (arg[len] == '=') {
		value = arg + len + 1;
	} else if (arg[len] == '\0') {
		if (*i + 1 >= argc) {
			fprintf(stderr, "tscshim %s: option %s needs a value\n", command, name);
			return -1;
		}
		value = argv[++*i];
	} else {
		return 0;
	}
	char err[256];
	if (option_parse(values, id, value, err, sizeof err) != 0) {
		/* The table names the variable; the user typed the option. */
		fprintf(stderr, "tscshim %s: %s (option %s)\n", command, err, name);
		return -1;
	}
	return 1;
}

int command_options(int argc, char **argv)
{
	bool markdown = argc > 1 && strcmp(argv[1], "--markdown") == 0;
	if (argc > 2 || (argc == 2 && !markdown)) {
		fprintf(stderr, "tscshim options: usage: tscshim options [--markdown]\n");
		return EXIT_USAGE;
	}
	if (markdown) {
		options_write_markdown(stdout);
		return 0;
	}
	for (int id = 0; id < OPTION_COUNT; id++)
		printf("%-32s default '%s'\n    %s\n", option_table[id].name,
		       option_table[id].default_text, option_table[id].doc);
	return 0;
}
