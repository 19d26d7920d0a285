/* The shim's status in a process as one line on a pipe or in a file:
 *   shim LOADED ACTIVE FENCED RATE_MILLIHZ REASON...
 * bench's workers print it before their results and ab's decision probe prints it alone
 * (both with the shim preloaded); bench and ab read it back. Internal to the command. */
#ifndef CLI_SHIM_STATUS_H
#define CLI_SHIM_STATUS_H

#include <stdio.h>

struct tscshim_status;

struct shim_status_line {
	int loaded, active, fenced;
	unsigned long long rate_millihz;
	char reason[192];
};

/* tscshim_status() of the shim loaded in this process into *out (zeroed first): 1, or 0
 * when no shim is loaded. */
int shim_status_query(struct tscshim_status *out);

/* The read plan the shim loaded in this process serves with (struct tscshim_status's
 * read_plan, version 3), or -1 where it does not serve or is not loaded, or too old to
 * say. */
int shim_status_read_plan(void);

/* Writes the line about the shim in this process. */
void shim_status_write(FILE *out);

/* Reads a line written by shim_status_write: 0, or -1 if it is not one. */
int shim_status_parse(const char *line, struct shim_status_line *out);

/* tscshim __ab-decision: the hidden subcommand that prints the line and exits, which ab
 * runs under each variant to learn the shim's decision there. */
int command_shim_status(int argc, char **argv);

#endif
