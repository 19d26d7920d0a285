/* tscshim calib: the estimator, a long calibration and the verdict, as a report. */
#include "cli.h"

#include "calibrate.h"
#include "convert.h"
#include "counter.h"
#include "estimate.h"
#include "refclock.h"
#include "report.h"
#include "system.h"
#include "verdict.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define COMMAND_CALIBRATE_US 1000000 /* the long mode: 1 s */

static void calib_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim calib [--json] [--probes N] [--budget-us N] [--max-skew-ns N]\n"
		"                     [--calibrate-us N] [--require-tsc-clocksource]\n"
		"\n"
		"Runs the reliability estimator over every CPU this process may run on and\n"
		"calibrates the counter's rate against CLOCK_MONOTONIC (1 s unless\n"
		"--calibrate-us or TSCSHIM_CALIBRATE_US says otherwise). Options override the\n"
		"TSCSHIM_* variables. Exit status: 0 reliable, 1 not reliable, 2 error.\n");
}

int command_calib(int argc, char **argv)
{
	struct option_values values;
	if (cli_load_environment("calib", &values) != 0)
		return EXIT_USAGE;
	if (!values.from_environment[OPT_CALIBRATE_US])
		values.num[OPT_CALIBRATE_US] = COMMAND_CALIBRATE_US;

	bool json = false;
	for (int i = 1; i < argc; i++) {
		static const struct {
			const char *name;
			enum option_id id;
		} valued[] = {
			{"--probes", OPT_PROBES},
			{"--budget-us", OPT_ESTIMATE_BUDGET_US},
			{"--max-skew-ns", OPT_MAX_SKEW_NS},
			{"--calibrate-us", OPT_CALIBRATE_US},
		};
		int matched = 0;
		for (size_t k = 0; k < sizeof valued / sizeof valued[0] && !matched; k++) {
			matched = cli_option_value("calib", argc, argv, &i, valued[k].name,
						   valued[k].id, &values);
			if (matched < 0)
				return EXIT_USAGE;
		}
		if (matched)
			continue;
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--require-tsc-clocksource") == 0) {
			values.num[OPT_REQUIRE_TSC_CLOCKSOURCE] = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			calib_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "tscshim calib: unknown option '%s' (try tscshim calib --help)\n",
				argv[i]);
			return EXIT_USAGE;
		}
	}

	/* The command is not preloaded: the vDSO is the kernel's clock, and much cheaper
	 * to bracket than the system call. */
	refclock_gettime = clock_gettime;

	struct calib_report report;
	memset(&report, 0, sizeof report);
	counter_identify(&report.identity);
	read_current_clocksource(report.clocksource, sizeof report.clocksource);
	read_available_clocksources(report.available_clocksources,
				    sizeof report.available_clocksources);
	report.max_skew_ns = values.num[OPT_MAX_SKEW_NS];

	char err[256];
	if (report.identity.present) {
		struct estimate_config config = {
			.probes_per_cpu = (uint32_t)values.num[OPT_PROBES],
			.budget_ns = values.num[OPT_ESTIMATE_BUDGET_US] * 1000,
			.limits = ESTIMATE_DEFAULT_LIMITS,
		};
		if (estimate_run(&config, &report.estimate, err, sizeof err) != 0) {
			fprintf(stderr, "tscshim calib: %s\n", err);
			return EXIT_USAGE;
		}
		report.estimated = true;
		if (calibrate_rate(values.num[OPT_CALIBRATE_US] * 1000, &report.rate, err,
				   sizeof err) == 0) {
			report.calibrated = true;
			conversion_from_rate(&report.conversion, report.rate.rate_millihz);
		} else {
			fprintf(stderr, "tscshim calib: %s\n", err);
		}
	}

	struct verdict_inputs in = {
		.counter_present = report.identity.present,
		.counter_invariant = report.identity.invariant,
		.analysis = report.estimated ? &report.estimate.analysis : NULL,
		.rate_millihz = report.calibrated ? report.rate.rate_millihz : 0,
		.max_skew_ns = values.num[OPT_MAX_SKEW_NS],
		.require_tsc_clocksource = values.num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = report.clocksource,
	};
	verdict_decide(&in, &report.verdict);

	if (json)
		report_print_json(stdout, &report);
	else
		report_print_text(stdout, &report);
	estimate_report_free(&report.estimate);
	return report.verdict.reliable ? EXIT_RELIABLE : EXIT_NOT_RELIABLE;
}
