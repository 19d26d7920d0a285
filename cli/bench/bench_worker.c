/* tscshim __bench-worker: the hidden subcommand bench re-executes itself as, with the shim
 * preloaded. It runs the loops and writes results to stdout (the parent's pipe) in the
 * protocol of bench.h, starting with the shim's status so the parent can tell a
 * pass-through run from a served one, and for a shim served fenced or unfenced, the floor
 * timed beside it (its read plan, and the shim's).
 *   __bench-worker cells VARIANT CALLS THREADS
 *   __bench-worker drift SECONDS */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"
#include "shim_status.h"
#include "util.h"

#include <string.h>

static void emit_line(void *ctx, int variant, int clock, int thread, const struct bench_cell *cell)
{
	bench_write_cell(ctx, variant, clock, thread, cell);
}

int command_bench_worker(int argc, char **argv)
{
	long variant, calls, threads;
	double seconds;
	if (argc == 5 && strcmp(argv[1], "cells") == 0 &&
	    cli_parse_long(argv[2], 0, BENCH_VARIANTS - 1, &variant) == 0 &&
	    cli_parse_long(argv[3], 1, 1000000000, &calls) == 0 &&
	    cli_parse_long(argv[4], 1, 1024, &threads) == 0) {
		struct bench_work w = {.calls = calls, .threads = (int)threads, .floor_plan = -1};
		shim_status_write(stdout);
		/* A shim served fenced or unfenced: its floor beside it, with its plan. */
		struct bench_floor floor;
		bench_floor_choose((int)variant, &floor);
		if (floor.plan >= 0) {
			bench_floor_write(stdout, &floor);
			w.floor_plan = floor.plan;
		}
		int rc = bench_run_variant((int)variant, &w, emit_line, stdout);
		return rc == 0 && fflush(stdout) == 0 ? 0 : 1;
	}
	if (argc == 3 && strcmp(argv[1], "drift") == 0 &&
	    cli_parse_double(argv[2], 0.01, 86400, &seconds) == 0) {
		shim_status_write(stdout);
		return bench_drift_worker(seconds) == 0 && fflush(stdout) == 0 ? 0 : 1;
	}
	fprintf(stderr, "tscshim __bench-worker: internal subcommand, not for direct use\n");
	return EXIT_USAGE;
}
