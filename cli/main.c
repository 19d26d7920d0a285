/* The `tscshim` command: one program, one subcommand per job. */
#include "cli.h"
#include "shim_status.h"

#include "tscshim.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  calib     measure whether this machine's TSC may serve time, and why\n"
		"  run       run a command with the shim preloaded: tscshim run -- CMD [ARGS]\n"
		"  options   list the TSCSHIM_* environment variables (--markdown for the README)\n"
		"  bench     per-call cost of each clock: libc, syscall, shim, floor; --drift: error\n"
		"  ab        run a command alternately without and with the shim and compare: tscshim ab -- CMD\n"
		"  ps        the processes that have the shim loaded: serving, passing through or undecided\n"
		"\n"
		"tscshim --help | --version; tscshim COMMAND --help\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *command = argv[1];
	if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 || strcmp(command, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(command, "--version") == 0) {
		printf("tscshim %s\n", TSCSHIM_VERSION);
		return 0;
	}
	if (strcmp(command, "calib") == 0)
		return command_calib(argc - 1, argv + 1);
	if (strcmp(command, "run") == 0)
		return command_run(argc - 1, argv + 1);
	if (strcmp(command, "bench") == 0)
		return command_bench(argc - 1, argv + 1);
	if (strcmp(command, "ab") == 0)
		return command_ab(argc - 1, argv + 1);
	if (strcmp(command, "ps") == 0)
		return command_ps(argc - 1, argv + 1);
	/* Internal: bench re-executes itself under the shim as this; not in the usage. */
	if (strcmp(command, "__bench-worker") == 0)
		return command_bench_worker(argc - 1, argv + 1);
	/* Internal: ab runs it under each variant to learn the shim's decision. */
	if (strcmp(command, "__ab-decision") == 0)
		return command_shim_status(argc - 1, argv + 1);
	/* Internal: calib --save runs it under the shim to learn the costs it measures. */
	if (strcmp(command, "__shim-costs") == 0)
		return command_shim_costs();
	/* Internal: bench --startup times the read that decides in it, under the shim. */
	if (strcmp(command, "__due-read") == 0)
		return command_due_read();
	if (strcmp(command, "options") == 0)
		return command_options(argc - 1, argv + 1);
	fprintf(stderr, "tscshim: unknown command '%s' (try tscshim --help)\n", command);
	return 2;
}
