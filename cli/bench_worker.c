/* tscshim __bench-worker: the hidden subcommand bench re-executes itself as, with the shim
 * preloaded. It runs the loops and writes results to stdout (the parent's pipe) in the
 * protocol of bench.h, starting with the shim's status so the parent can tell a
 * pass-through run from a served one.
 *   __bench-worker cells VARIANT CALLS THREADS
 *   __bench-worker drift SECONDS */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"

#include "tscshim.h"

#include <dlfcn.h>
#include <string.h>

static void emit_line(void *ctx, int variant, int clock, int thread, const struct bench_cell *cell)
{
	bench_write_cell(ctx, variant, clock, thread, cell);
}

static void write_status(void)
{
	int (*status)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	struct tscshim_status st = {0};
	if (status)
		status(&st);
	else
		snprintf(st.reason, sizeof st.reason, "the shim is not loaded");
	/* The reason is free text: last on the line, newlines flattened. */
	for (char *p = st.reason; *p; p++)
		if (*p == '\n')
			*p = ' ';
	printf("shim %d %d %d %llu %s\n", status != NULL, st.active, st.fenced,
	       (unsigned long long)st.rate_millihz, st.reason);
}

int command_bench_worker(int argc, char **argv)
{
	long variant, calls, threads;
	double seconds;
	if (argc == 5 && strcmp(argv[1], "cells") == 0 &&
	    bench_parse_long(argv[2], 0, BENCH_VARIANTS - 1, &variant) == 0 &&
	    bench_parse_long(argv[3], 1, 1000000000, &calls) == 0 &&
	    bench_parse_long(argv[4], 1, 1024, &threads) == 0) {
		struct bench_work w = {.calls = calls, .threads = (int)threads};
		write_status();
		int rc = bench_run_variant((int)variant, &w, emit_line, stdout);
		return rc == 0 && fflush(stdout) == 0 ? 0 : 1;
	}
	if (argc == 3 && strcmp(argv[1], "drift") == 0 &&
	    bench_parse_double(argv[2], 0.01, 86400, &seconds) == 0) {
		write_status();
		return bench_drift_worker(seconds) == 0 && fflush(stdout) == 0 ? 0 : 1;
	}
	fprintf(stderr, "tscshim __bench-worker: internal subcommand, not for direct use\n");
	return EXIT_USAGE;
}
