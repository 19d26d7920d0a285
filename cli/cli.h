/* The subcommands of the tscshim command, and the exit statuses they share. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include "options.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses shared by the subcommands. */
enum { EXIT_RELIABLE = 0, EXIT_NOT_RELIABLE = 1, EXIT_USAGE = 2 };

int command_calib(int argc, char **argv);
int command_options(int argc, char **argv);

/* calib/record_costs.c: the machine-wide record's costs, measured by the shim itself in a
 * child that preloads it and decides from the record at record_path (calib --save).
 * Returns 0 with rec's cost fields set, or -1 with why. */
struct cache_record;
int record_costs_measure(const char *record_path, struct cache_record *rec, char *why, size_t why_size);
/* The shim's own costs, measured by the shim in a child that preloads it and measures at
 * load (a cold start in a directory of its own): the figures every process's benefit
 * gate decides from. Returns 0, or -1 with why (no library, or no reliable counter). */
struct shim_costs {
	int source, from_record;
	uint64_t kernel_ps, syscall_ps, fenced_ps, unfenced_ps, build;
	unsigned fenced_plan; /* the fenced read plan fenced_ps is of (shim/line.h), 0 = none */
};
int shim_costs_measure(struct shim_costs *out, char *why, size_t why_size);
/* One line: what the record's costs decide under these options. */
void record_costs_describe(const struct cache_record *rec, const struct option_values *o, FILE *out);
/* The internal `__shim-costs` command: the preloaded shim's costs as one line. */
int command_shim_costs(void);
int command_run(int argc, char **argv);
int command_bench(int argc, char **argv);
/* bench's hidden subcommands (bench/bench.h): the worker (tscshim __bench-worker) bench
 * re-executes itself as, and `tscshim __due-read`, the read that decides, timed from
 * inside a process under the shim (bench --startup). */
int command_bench_worker(int argc, char **argv);
int command_due_read(void);
int command_ab(int argc, char **argv);
int command_ps(int argc, char **argv); /* ps/ps.h */

/* calib/calib_cost.c: per-call costs for `tscshim calib`'s cost section (a few ms): the
 * kernel's clock, the system call and the floor (floor.h), timed as the shim's gate times
 * its own path. The fenced floor reads with shim_fenced_plan, the plan the shim's
 * measurement kept (-1: none known, then the cheapest the floor measures). Returns the
 * floor's fenced plan. */
struct cost;
int calib_measure_cost(uint64_t rate_millihz, int shim_fenced_plan, struct cost *out);

#endif
