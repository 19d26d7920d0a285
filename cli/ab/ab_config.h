/* What one `tscshim ab` is asked to do (its options) and what it finds before the first
 * run (the output directory, the library, the machine, the shim's decision under each
 * variant). Filled by ab_cmd.c; read by the runs and the report. Internal to the command. */
#ifndef CLI_AB_CONFIG_H
#define CLI_AB_CONFIG_H

#include "ab_metric.h"
#include "ab_server.h"
#include "ab_variant.h"
#include "shim_status.h"

#include <stdbool.h>

struct ab_machine {
	char cpu[128], clocksource[64], kernel[160];
};

/* The shim's decision under a variant, as `__ab-decision` printed it (known: it did). */
struct ab_decision {
	bool known;
	struct shim_status_line shim;
};

struct ab_config {
	long runs, warmup;
	bool json, show_output, drop_outliers;
	const char *out_dir_option, *plot_file, *terminal, *export_json, *export_markdown;
	const char *server, *setup, *prepare, *cleanup;
	struct ab_ready ready;
	double timeout, grace; /* timeout < 0: none */
	char **cmd;
	struct ab_variant variant[AB_MAX_VARIANTS];
	int variants;
	bool custom_variants;
	struct ab_metric metric[AB_MAX_METRICS];
	int metrics;
	/* found at start */
	char out_dir[3072]; /* short enough that NAME-RUN.SUFFIX fits in PATH_MAX */
	bool temporary_out_dir;
	char library[4096];
	struct ab_machine machine;
	struct ab_decision decision[AB_MAX_VARIANTS];
};

#endif
