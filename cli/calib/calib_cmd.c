/* tscshim calib: the estimator, a long calibration and the verdict, as a report. */
#include "cli.h"
#include "floor.h"
#include "util.h"

#include "benefit.h"
#include "cache.h"
#include "calibrate.h"
#include "convert.h"
#include "counter.h"
#include "vmclock.h"
#include "estimate.h"
#include "refclock.h"
#include "report.h"
#include "system.h"
#include "verdict.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COMMAND_CALIBRATE_US 1000000 /* the long mode: 1 s */
#define SAVE_BUDGET_US 1000000       /* --save: a busy boot gets a second to conclude */

/* The machine-wide record is a symbolic link whose target is its text: every process's
 * load reads it whole with one readlinkat (shim/record.h). */
static int write_record(const char *path, const struct cache_file *file)
{
	char buf[CACHE_MAX_SIZE + 1], err[SAFEFILE_PATH_MAX + 160];
	if (cache_write_link(path, file, buf, sizeof buf, err, sizeof err) != 0) {
		fprintf(stderr, "tscshim calib: machine-wide record %s\n", err);
		return -1;
	}
	return 0;
}

/* The machine-wide record for every online CPU at TSCSHIM_SYSTEM_RECORD, then, when it
 * lets the counter serve, the costs the shim measures against it, written into it; the
 * record as saved in *rec (its costs 0 where none were measured). Returns 0, or -1 after
 * one line on stderr. */
static int save_record(const char *path, const struct calib_report *r, struct cache_record *saved)
{
	const struct estimate_analysis *a = &r->estimate.analysis;
	if (a->verdict == ESTIMATE_INCONCLUSIVE || !r->calibrated) {
		fprintf(stderr, "tscshim calib: machine-wide record not saved: %s\n",
			r->calibrated ? "the estimate is inconclusive (a busy machine? try again)"
				      : "the rate could not be calibrated");
		return -1;
	}
	struct cache_file file = {.count = 1};
	struct cache_record *rec = &file.record[0];
	read_boot_id(rec->boot_id, sizeof rec->boot_id);
	rec->boot_wall_ns = refclock_boot_wall_ns();
	rec->cpu_signature = r->identity.signature;
	rec->counter_invariant = r->identity.invariant;
	for (uint32_t i = 0; i < r->estimate.cpu_count; i++)
		cpu_mask_add(&rec->cpus, (unsigned)r->estimate.cpu_ids[i]);
	rec->all_cpus = cpu_mask_holds_every_possible(&rec->cpus);
	rec->vmclock = vmclock_device_exists(VMCLOCK_DEVICE);
	rec->estimate_verdict = a->verdict;
	rec->max_shift_ticks = a->max_shift_ticks;
	rec->rate_millihz = r->rate.rate_millihz;

	/* The directory, if missing: root's, readable by everyone, like /run itself. */
	char dir[OPTION_TEXT_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "tscshim calib: machine-wide record not saved: %s: %s\n", dir,
				strerror(errno));
			return -1;
		}
	}
	if (write_record(path, &file) != 0)
		return -1;
	fprintf(stderr, "tscshim calib: machine-wide record saved to %s%s\n", path,
		geteuid() == 0 ? "" : " (not as root: other users will not trust it)");
	*saved = *rec;
	if (!r->verdict.reliable)
		return 0;
	char why[256];
	if (record_costs_measure(path, rec, why, sizeof why) != 0) {
		fprintf(stderr, "tscshim calib: no costs in the record (each process measures them): %s\n", why);
		return 0;
	}
	if (write_record(path, &file) != 0)
		return -1;
	*saved = *rec;
	return 0;
}

/* The report's costs: the shim's own where it measured them (the record's, with --save:
 * the very figures every process then decides from; else a child's), so that the
 * recommendation and the decision a process makes come from the same figures. */
static void shim_costs_into(struct calib_report *report, const struct cache_record *saved)
{
	struct shim_costs c;
	char why[200] = "";
	if (!report->verdict.reliable) {
		snprintf(report->cost_note, sizeof report->cost_note, "the counter is not reliable here");
		return;
	}
	/* The record's first set is this build's (record_costs_measure keeps it first). */
	const struct cache_costs *kept = saved ? &saved->costs[0] : NULL;
	if (kept && kept->fenced_ps) {
		c = (struct shim_costs){.kernel_ps = kept->kernel_ps, .syscall_ps = kept->syscall_ps,
					.fenced_ps = kept->fenced_ps, .unfenced_ps = kept->unfenced_ps,
					.fenced_plan = kept->fenced_plan};
	} else if (saved || shim_costs_measure(&c, why, sizeof why) != 0) {
		snprintf(report->cost_note, sizeof report->cost_note, "%s",
			 saved ? "the record holds no costs" : why);
		return;
	}
	report->cost = (struct cost){.kernel_ns = c.kernel_ps / 1e3, .syscall_ns = c.syscall_ps / 1e3,
				     .fenced_ns = c.fenced_ps / 1e3, .unfenced_ns = c.unfenced_ps / 1e3};
	report->cost_is_shims = true;
	report->cost_fenced_plan = floor_plan_fenced((int)c.fenced_plan) ? (int)c.fenced_plan : -1;
}

/* The floor, timed as the shim's gate times the shim and with the fenced plan the shim's
 * measurement kept (where it was measured), after the shim's own figures; and where those
 * are missing, the figures the recommendation is made from. */
static void floor_costs_into(struct calib_report *report)
{
	report->floor_plan = calib_measure_cost(report->rate.rate_millihz, report->cost_fenced_plan, &report->floor);
	snprintf(report->floor_read, sizeof report->floor_read, "%s%s", floor_plan_name(report->floor_plan),
		 report->floor_plan == report->cost_fenced_plan ? ", as the shim's" : ", the cheapest here");
	if (!report->cost_is_shims)
		report->cost = report->floor;
}

static void calib_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim calib [--json] [--probes N] [--budget-us N] [--max-skew-ns N]\n"
		"                     [--calibrate-us N] [--require-tsc-clocksource] [--save]\n"
		"\n"
		"Runs the reliability estimator over every CPU this process may run on and\n"
		"calibrates the counter's rate against CLOCK_MONOTONIC (1 s unless\n"
		"--calibrate-us or TSCSHIM_CALIBRATE_US says otherwise). Options override the\n"
		"TSCSHIM_* variables. Exit status: 0 reliable, 1 not reliable, 2 error.\n"
		"\n"
		"--save estimates every online CPU (with a 1 s budget unless --budget-us says\n"
		"otherwise) and writes the machine-wide record to TSCSHIM_SYSTEM_RECORD\n"
		"(/run/tscshim/calibration) for every process to trust; run it as root once\n"
		"per boot. Exit status with --save: 0 saved (whatever the verdict), 1 not saved\n"
		"(an inconclusive estimate), 2 error.\n");
}

/* What the command line asks for, over the variables' values. */
struct calib_request {
	struct option_values values;
	bool json, save, budget_given;
};

/* The options into *req. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_calib_options(int argc, char **argv, struct calib_request *req)
{
	static const struct {
		const char *name;
		enum option_id id;
	} valued[] = {
		{"--probes", OPT_PROBES},
		{"--budget-us", OPT_ESTIMATE_BUDGET_US},
		{"--max-skew-ns", OPT_MAX_SKEW_NS},
		{"--calibrate-us", OPT_CALIBRATE_US},
	};
	for (int i = 1; i < argc; i++) {
		int matched = 0;
		if (strncmp(argv[i], "--budget-us", 11) == 0)
			req->budget_given = true;
		for (size_t k = 0; k < sizeof valued / sizeof valued[0] && !matched; k++) {
			matched = cli_option_value("calib", argc, argv, &i, valued[k].name, valued[k].id, &req->values);
			if (matched < 0)
				return EXIT_USAGE;
		}
		if (matched)
			continue;
		if (strcmp(argv[i], "--json") == 0) {
			req->json = true;
		} else if (strcmp(argv[i], "--save") == 0) {
			req->save = true;
		} else if (strcmp(argv[i], "--require-tsc-clocksource") == 0) {
			req->values.num[OPT_REQUIRE_TSC_CLOCKSOURCE] = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			calib_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "tscshim calib: unknown option '%s' (try tscshim calib --help)\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* --save's preconditions, and its longer budget: 0, or -1 after one line. */
static int prepare_save(struct calib_request *req, struct cpu_mask *online)
{
	if (req->values.text[OPT_SYSTEM_RECORD][0] != '/') {
		fprintf(stderr, "tscshim calib: --save needs TSCSHIM_SYSTEM_RECORD to be a path, not '%s'\n",
			req->values.text[OPT_SYSTEM_RECORD]);
		return -1;
	}
	if (cpu_mask_online(online) < 1) {
		fprintf(stderr, "tscshim calib: cannot read the online CPUs\n");
		return -1;
	}
	if (!req->values.from_environment[OPT_ESTIMATE_BUDGET_US] && !req->budget_given)
		req->values.num[OPT_ESTIMATE_BUDGET_US] = SAVE_BUDGET_US;
	return 0;
}

/* The CPU, the estimate (over `cpus`, NULL: those this process may run on) and the rate
 * into *report, costed where the rate is known (the costs are measured later): 0, or -1
 * after one line (the estimator could not run). */
static int measure(const struct option_values *v, const struct cpu_mask *cpus, struct calib_report *report)
{
	counter_identify(&report->identity);
	read_current_clocksource(report->clocksource, sizeof report->clocksource);
	read_available_clocksources(report->available_clocksources, sizeof report->available_clocksources);
	report->max_skew_ns = v->num[OPT_MAX_SKEW_NS];
	if (!report->identity.present)
		return 0;
	char err[256];
	struct estimate_config config = {
		.probes_per_cpu = (uint32_t)v->num[OPT_PROBES],
		.budget_ns = v->num[OPT_ESTIMATE_BUDGET_US] * 1000,
		.limits = {.min_ranges = (uint32_t)v->num[OPT_ESTIMATE_MIN_LOOPS],
			   .min_loops = (uint32_t)v->num[OPT_ESTIMATE_MIN_LOOPS]},
		.cpus = cpus,
	};
	if (estimate_run(&config, &report->estimate, err, sizeof err) != 0) {
		fprintf(stderr, "tscshim calib: %s\n", err);
		return -1;
	}
	report->estimated = true;
	if (calibrate_rate(v->num[OPT_CALIBRATE_US] * 1000, &report->rate, err, sizeof err) != 0) {
		fprintf(stderr, "tscshim calib: %s\n", err);
		return 0;
	}
	report->calibrated = true;
	conversion_from_rate(&report->conversion, report->rate.rate_millihz);
	report->costed = true;
	report->cost_fenced_plan = -1;
	return 0;
}

static void decide_verdict(const struct option_values *v, struct calib_report *report)
{
	struct verdict_inputs in = {
		.counter_present = report->identity.present,
		.counter_invariant = report->identity.invariant,
		.analysis = report->estimated ? &report->estimate.analysis : NULL,
		.rate_millihz = report->calibrated ? report->rate.rate_millihz : 0,
		.max_skew_ns = v->num[OPT_MAX_SKEW_NS],
		.require_tsc_clocksource = v->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = report->clocksource,
		.min_interleavings = (uint32_t)v->num[OPT_ESTIMATE_MIN_LOOPS],
	};
	verdict_decide(&in, &report->verdict);
}

int command_calib(int argc, char **argv)
{
	struct calib_request req = {0};
	if (cli_load_environment("calib", &req.values) != 0)
		return EXIT_USAGE;
	if (!req.values.from_environment[OPT_CALIBRATE_US])
		req.values.num[OPT_CALIBRATE_US] = COMMAND_CALIBRATE_US;
	int parsed = parse_calib_options(argc, argv, &req);
	if (parsed >= 0)
		return parsed;
	struct cpu_mask online;
	if (req.save && prepare_save(&req, &online) != 0)
		return EXIT_USAGE;

	/* The command is not preloaded: the vDSO is the kernel's clock, and much cheaper
	 * to bracket than the system call. */
	refclock_gettime = clock_gettime;
	struct calib_report report;
	memset(&report, 0, sizeof report);
	if (measure(&req.values, req.save ? &online : NULL, &report) != 0)
		return EXIT_USAGE;
	decide_verdict(&req.values, &report);

	int status = report.verdict.reliable ? EXIT_RELIABLE : EXIT_NOT_RELIABLE;
	struct cache_record saved = {0};
	if (req.save)
		status = report.estimated && save_record(req.values.text[OPT_SYSTEM_RECORD], &report, &saved) == 0
				 ? 0 : EXIT_NOT_RELIABLE;
	if (report.costed) {
		shim_costs_into(&report, req.save ? &saved : NULL);
		floor_costs_into(&report);
	}
	benefit_recommendation(&report.cost, (unsigned)req.values.num[OPT_MIN_GAIN_PCT], report.recommendation,
			       sizeof report.recommendation);
	if (req.json)
		report_print_json(stdout, &report);
	else
		report_print_text(stdout, &report);
	if (req.save && status == 0 && !req.json)
		record_costs_describe(&saved, &req.values, stdout);
	estimate_report_free(&report.estimate);
	return status;
}
