/* The shim's status in a process as one line (shim_status.h): asked of the shim loaded
 * here, written, read back; and tscshim __ab-decision, which prints it. */
#define _GNU_SOURCE
#include "shim_status.h"
#include "cli.h"

#include "tscshim.h"

#include <dlfcn.h>
#include <string.h>

int shim_status_query(struct tscshim_status *out)
{
	/* Found by name: the command is not linked against the shim, which is preloaded into
	 * its workers only. */
	int (*status)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	memset(out, 0, sizeof *out);
	if (!status)
		return 0;
	status(out);
	return 1;
}

int shim_status_read_plan(void)
{
	int (*status)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status st;
	memset(&st, 0, sizeof st);
	if (!status || status(&st, sizeof st) < 3 || !st.active)
		return -1;
	return (int)st.read_plan;
}

void shim_status_write(FILE *out)
{
	struct tscshim_status st;
	int loaded = shim_status_query(&st);
	if (!loaded)
		snprintf(st.reason, sizeof st.reason, "the shim is not loaded");
	/* The reason is free text: last on the line, newlines flattened. */
	for (char *p = st.reason; *p; p++)
		if (*p == '\n')
			*p = ' ';
	fprintf(out, "shim %d %d %d %llu %s\n", loaded, st.active, st.fenced,
		(unsigned long long)st.rate_millihz, st.reason);
}

int shim_status_parse(const char *line, struct shim_status_line *out)
{
	int used = 0;
	memset(out, 0, sizeof *out);
	if (sscanf(line, "shim %d %d %d %llu %n", &out->loaded, &out->active, &out->fenced,
		   &out->rate_millihz, &used) != 4 || used == 0)
		return -1;
	snprintf(out->reason, sizeof out->reason, "%s", line + used);
	out->reason[strcspn(out->reason, "\n")] = '\0';
	return 0;
}

int command_shim_status(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "tscshim __ab-decision: internal subcommand, not for direct use\n");
		return EXIT_USAGE;
	}
	shim_status_write(stdout);
	return 0;
}
