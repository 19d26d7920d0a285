/* The subcommands of the tscshim command, and the exit statuses they share. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdint.h>

/* Exit statuses shared by the subcommands. */
enum { EXIT_RELIABLE = 0, EXIT_NOT_RELIABLE = 1, EXIT_USAGE = 2 };

int command_calib(int argc, char **argv);
int command_options(int argc, char **argv);
int command_run(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_ab(int argc, char **argv);

/* calib_cost.c: per-call costs for `tscshim calib`'s cost section (a few ms). */
struct cost;
void calib_measure_cost(uint64_t rate_millihz, struct cost *out);

#endif
