/* tscshim ab [OPTIONS] -- CMD [ARGS]
 *
 * Runs CMD under two or more variants (by default A without the shim and B with it),
 * interleaved round by round after uncounted warmup rounds, so that drifts of the machine
 * (caches, frequency, neighbours) fall on every side alike. Wall time is taken here (this
 * process is not preloaded), user and sys time from wait4. Each run of a variant with the
 * shim writes TSCSHIM_STATS to a file of its own, from which the report says how many clock
 * calls the TSC actually served: a variant that served none measured nothing. With
 * --server, the server runs under the variant and CMD drives it without the shim. Exit
 * status: 0 if every run succeeded, 1 if any failed (each run's status is in the report) or
 * ab had to stop, 2 for a usage or setup error (nothing run), 128+N when stopped by signal N.
 *
 * Its modules, each with a header of its own:
 *   ab_variant   --variant parsing and validation against the options table   (pure)
 *   ab_metric    --metric parsing and extraction with POSIX regular expressions (pure)
 *   ab_stats     medians, MAD outliers, the median's confidence interval, verdicts (pure)
 *   ab_process   processes: start with a variant's environment, wait, stop
 *   ab_server    --server: readiness, start and stop around a run
 *   ab_tsc       the TSCSHIM_STATS lines of a run, summed
 *   ab_run       one run, the setup and cleanup commands, the shim's decision, the machine
 *   ab_summary   the statistics over all runs (ab_config.h: what the runs are asked to do)
 *   ab_report    the table, the JSON, the Markdown, the warnings and the plot
 *   ab_cmd       options and the run loop (this file) */
#define _GNU_SOURCE
#include "ab_config.h"
#include "ab_process.h"
#include "ab_report.h"
#include "ab_run.h"
#include "ab_summary.h"
#include "cli.h"
#include "plot.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

static void ab_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...]\n"
		"\n"
		"Runs COMMAND without (A) and with (B) the shim, or under each --variant, interleaved\n"
		"round by round, RUNS times each after uncounted warmup rounds; reports wall, user and\n"
		"sys time, each metric, every ratio to the first variant pair by pair with its median,\n"
		"a 95%% confidence interval and a verdict, outliers, every run's status and how many\n"
		"clock calls the TSC served. Exit status: 0 if every run succeeded, 1 if any failed,\n"
		"2 on a usage error (nothing run).\n"
		"\n"
		"  -n, --runs N           runs of each variant (default 10)\n"
		"  --warmup N             uncounted rounds first (default 1)\n"
		"  --variant NAME:SETTINGS  a side of the comparison (repeatable; the first is the\n"
		"                         baseline). SETTINGS: VAR=VALUE[,VAR=VALUE...] with VAR a\n"
		"                         TSCSHIM_* variable (the prefix may be left out), and\n"
		"                         shim=off for a side without the shim. E.g.\n"
		"                         --variant plain:shim=off --variant fenced:FENCE=1\n"
		"                         --variant unfenced:FENCE=0\n"
		"  --metric NAME:REGEX[:higher|:lower]  a number read from COMMAND's output each run:\n"
		"                         the first group of the first match of the POSIX extended\n"
		"                         REGEX in its stdout, else its stderr; a run without it fails.\n"
		"                         A decimal, optionally with a scale: 4113k, 1.2M, 16.1Gi.\n"
		"                         Lower is better unless :higher (as for time)\n"
		"  --server CMD           started (sh -c) under each variant before each run, waited\n"
		"                         for, stopped after; COMMAND then runs without the shim\n"
		"  --ready tcp:PORT       the server is ready when 127.0.0.1:PORT accepts (or\n"
		"                         tcp:ADDRESS:PORT)\n"
		"  --ready-file PATH      ... or when PATH exists (removed before each start)\n"
		"  --ready-timeout S      give up on the server after S seconds (default 10)\n"
		"  --grace S              SIGTERM, then SIGKILL after S seconds (default 5)\n"
		"  --timeout S            stop a run of COMMAND after S seconds: the run fails\n"
		"  --setup CMD, --cleanup CMD  once before the first and after the last run (sh -c)\n"
		"  --prepare CMD          before each run, server included (sh -c)\n"
		"  --drop-outliers        leave runs beyond 3 MADs of the median out of the statistics\n"
		"  --out-dir DIR          keep every run's output there (default: a temporary\n"
		"                         directory, removed unless something failed)\n"
		"  --show-output          print each run's output (to stderr under --json)\n"
		"  --json                 the report as JSON on stdout\n"
		"  --export-json FILE, --export-markdown FILE  the report into FILE as well\n"
		"  --plot FILE.png|.svg   wall time CDFs (needs gnuplot)\n");
}

static int usage_error(const char *fmt, const char *value)
{
	fprintf(stderr, "tscshim ab: ");
	fprintf(stderr, fmt, value);
	fputc('\n', stderr);
	return -1;
}

static int parse_seconds(const char *name, const char *value, double *out)
{
	if (cli_parse_double(value, 0.001, 86400, out) != 0) {
		fprintf(stderr, "tscshim ab: %s '%s': need seconds in 0.001..86400\n", name, value);
		return -1;
	}
	return 0;
}

/* Options that take a value, in one table: each names where its value goes. */
enum value_kind { V_COUNT, V_SECONDS, V_TEXT, V_VARIANT, V_METRIC, V_PLOT };
struct value_option {
	const char *name;
	enum value_kind kind;
	size_t offset; /* into struct ab_config */
	long min;      /* V_COUNT */
};
#define AT(field) offsetof(struct ab_config, field)
static const struct value_option value_options[] = {
	{"-n", V_COUNT, AT(runs), 1},
	{"--runs", V_COUNT, AT(runs), 1},
	{"--warmup", V_COUNT, AT(warmup), 0},
	{"--out-dir", V_TEXT, AT(out_dir_option), 0},
	{"--export-json", V_TEXT, AT(export_json), 0},
	{"--export-markdown", V_TEXT, AT(export_markdown), 0},
	{"--server", V_TEXT, AT(server), 0},
	{"--ready", V_TEXT, AT(ready.tcp_spec), 0},
	{"--ready-file", V_TEXT, AT(ready.file), 0},
	{"--setup", V_TEXT, AT(setup), 0},
	{"--prepare", V_TEXT, AT(prepare), 0},
	{"--cleanup", V_TEXT, AT(cleanup), 0},
	{"--ready-timeout", V_SECONDS, AT(ready.timeout), 0},
	{"--grace", V_SECONDS, AT(grace), 0},
	{"--timeout", V_SECONDS, AT(timeout), 0},
	{"--variant", V_VARIANT, 0, 0},
	{"--metric", V_METRIC, 0, 0},
	{"--plot", V_PLOT, 0, 0},
};

static int take_value(struct ab_config *c, const struct value_option *opt, const char *value,
		      const struct option_values *environment)
{
	char err[768];
	char *field = (char *)c + opt->offset;
	switch (opt->kind) {
	case V_COUNT:
		if (cli_parse_long(value, opt->min, 100000, (long *)(void *)field) != 0) {
			fprintf(stderr, "tscshim ab: %s '%s': need a whole number in %ld..100000\n", opt->name, value,
				opt->min);
			return -1;
		}
		return 0;
	case V_SECONDS:
		return parse_seconds(opt->name, value, (double *)(void *)field);
	case V_TEXT:
		*(const char **)(void *)field = value;
		return 0;
	case V_VARIANT:
		if (!c->custom_variants)
			c->variants = 0, c->custom_variants = true;
		if (c->variants == AB_MAX_VARIANTS)
			return usage_error("--variant: at most %s variants", "8");
		if (ab_variant_parse(value, environment, &c->variant[c->variants], err, sizeof err) != 0)
			return usage_error("%s", err);
		c->variants++;
		return 0;
	case V_METRIC:
		if (c->metrics == AB_MAX_METRICS)
			return usage_error("--metric: at most %s metrics", "8");
		if (ab_metric_parse(value, &c->metric[c->metrics], err, sizeof err) != 0)
			return usage_error("%s", err);
		for (int m = 0; m < c->metrics; m++)
			if (strcmp(c->metric[m].name, c->metric[c->metrics].name) == 0) {
				ab_metric_free(&c->metric[c->metrics]);
				return usage_error("--metric: the name '%s' is given twice", c->metric[m].name);
			}
		c->metrics++;
		return 0;
	case V_PLOT:
		if (!(c->terminal = plot_terminal("ab", value)))
			return -1;
		c->plot_file = value;
		return 0;
	}
	return -1;
}

/* What parse() found: options to run with, or --help (usage printed, nothing to run). */
enum { PARSED_RUN = 0, PARSED_HELP = 1 };

/* PARSED_RUN or PARSED_HELP; -1 after one line on stderr. */
static int parse(int argc, char **argv, struct ab_config *c, const struct option_values *environment)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i], *value;
		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		int matched = 0;
		for (size_t k = 0; k < sizeof value_options / sizeof *value_options && !matched; k++) {
			matched = cli_option_text("ab", argc, argv, &i, value_options[k].name, &value);
			if (matched < 0 || (matched > 0 && take_value(c, &value_options[k], value, environment) != 0))
				return -1;
		}
		if (matched)
			continue;
		if (strcmp(arg, "--json") == 0) {
			c->json = true;
		} else if (strcmp(arg, "--show-output") == 0) {
			c->show_output = true;
		} else if (strcmp(arg, "--drop-outliers") == 0) {
			c->drop_outliers = true;
		} else if (strcmp(arg, "--help") == 0) {
			ab_usage(stdout);
			return PARSED_HELP;
		} else {
			fprintf(stderr, "tscshim ab: unknown option '%s' (usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...])\n", arg);
			return -1;
		}
	}
	if (i >= argc)
		return usage_error("no command given (usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...])%s", "");
	c->cmd = argv + i;
	return PARSED_RUN;
}

/* What cannot be told from one option alone. */
static int check(struct ab_config *c)
{
	char err[256];
	if (ab_variants_check(c->variant, c->variants, err, sizeof err) != 0)
		return usage_error("%s", err);
	if (c->ready.tcp_spec && c->ready.file)
		return usage_error("--ready and --ready-file: give one of them%s", "");
	if ((c->ready.tcp_spec || c->ready.file) && !c->server)
		return usage_error("--ready and --ready-file need --server%s", "");
	if (c->server && !c->ready.tcp_spec && !c->ready.file)
		return usage_error("--server needs --ready tcp:PORT or --ready-file PATH, to know when it is up%s", "");
	if (ab_ready_parse(&c->ready, err, sizeof err) != 0)
		return usage_error("%s", err);
	if (c->ready.tcp_spec && ab_is_ready(&c->ready))
		return usage_error("--ready %s: something listens there already, before any server started",
				   c->ready.tcp_spec);
	/* One line naming every path tried, as run and bench say it. */
	return cli_find_library("ab", NULL, c->library, sizeof c->library);
}

static FILE *open_export(const char *path)
{
	if (!path)
		return NULL;
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "tscshim ab: %s: %s\n", path, strerror(errno));
	return f;
}

static int make_out_dir(struct ab_config *c)
{
	if (c->out_dir_option) {
		if (strlen(c->out_dir_option) >= sizeof c->out_dir) {
			fprintf(stderr, "tscshim ab: --out-dir: the path is too long\n");
			return -1;
		}
		snprintf(c->out_dir, sizeof c->out_dir, "%s", c->out_dir_option);
		if (mkdir(c->out_dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "tscshim ab: --out-dir %s: %s\n", c->out_dir, strerror(errno));
			return -1;
		}
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(c->out_dir, sizeof c->out_dir, "%s/tscshim-ab.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(c->out_dir)) {
		fprintf(stderr, "tscshim ab: cannot create a temporary directory: %s\n", strerror(errno));
		return -1;
	}
	c->temporary_out_dir = true;
	return 0;
}

/* Warmup rounds, then the counted ones, variant after variant in each. 0, -1 (stopped
 * after one line) or 2 (interrupted). */
static int run_all(const struct ab_config *c, struct ab_run *runs, int *warmup_failed)
{
	for (long p = 0; p < c->warmup; p++)
		for (int v = 0; v < c->variants; v++) {
			struct ab_run w;
			int rc = ab_run_once(c, v, (int)p + 1, true, &w);
			if (rc != 0)
				return rc;
			*warmup_failed += !ab_run_ok(&w);
		}
	for (long p = 0; p < c->runs; p++)
		for (int v = 0; v < c->variants; v++) {
			int rc = ab_run_once(c, v, (int)p + 1, false, &runs[p * c->variants + v]);
			if (rc != 0)
				return rc;
		}
	return 0;
}

static int report(const struct ab_config *c, const struct ab_run *runs, FILE *json_file, FILE *markdown_file,
		  int warmup_failed)
{
	struct ab_summary s;
	if (ab_summarize(c, runs, &s) != 0) {
		ab_summary_free(&s);
		fprintf(stderr, "tscshim ab: out of memory\n");
		return -1;
	}
	if (c->json)
		ab_print_json(stdout, c, runs, &s);
	else
		ab_print_table(stdout, c, runs, &s);
	if (json_file)
		ab_print_json(json_file, c, runs, &s);
	if (markdown_file)
		ab_print_markdown(markdown_file, c, &s);
	ab_print_warnings(c, runs, &s, warmup_failed);
	if (c->plot_file && plot_available("ab"))
		ab_plot(c, runs);
	int failed = s.failed;
	ab_summary_free(&s);
	return failed;
}

int command_ab(int argc, char **argv)
{
	static struct ab_config c;
	char err[256];
	struct option_values environment;
	/* The report (stdout) and the warnings and errors (stderr) often go to one file or
	 * pipe: `> report.txt 2>&1`, a CI log. There stdout is fully buffered and goes out a
	 * buffer at a time, ending mid-line, while stderr goes out at once: a warning would
	 * land inside a line of the report. Line-buffered, stdout writes each line whole as it
	 * ends, so that whatever comes on stderr falls between lines, where it was said. Set
	 * here, before anything is written, for every path of the command. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&c, 0, sizeof c);
	c.runs = 10, c.warmup = 1, c.timeout = -1, c.grace = 5, c.ready.timeout = 10;
	ab_variant_defaults(c.variant);
	c.variants = 2;
	/* The environment's settings reach every shim variant: an invalid one would make the
	 * shim pass everything through, so nothing runs with it. */
	if (ab_environment_check(environ, err, sizeof err) != 0) {
		fprintf(stderr, "tscshim ab: %s\n", err);
		return EXIT_USAGE;
	}
	if (cli_load_environment("ab", &environment) != 0)
		return EXIT_USAGE;
	int parsed = parse(argc, argv, &c, &environment);
	if (parsed == PARSED_HELP)
		return 0;
	if (parsed != PARSED_RUN || check(&c) != 0)
		return EXIT_USAGE;
	FILE *json_file = open_export(c.export_json), *markdown_file = open_export(c.export_markdown);
	struct ab_run *runs = calloc((size_t)(c.runs * c.variants), sizeof *runs);
	if ((c.export_json && !json_file) || (c.export_markdown && !markdown_file) || !runs || make_out_dir(&c) != 0) {
		if (json_file)
			fclose(json_file);
		if (markdown_file)
			fclose(markdown_file);
		free(runs);
		return EXIT_USAGE;
	}
	ab_catch_signals();
	ab_machine_read(&c.machine);
	ab_learn_decisions(&c);
	int warmup_failed = 0, rc = c.setup ? ab_run_hook(&c, "setup", c.setup) : 0;
	bool setup_done = rc == 0;
	if (rc == 0)
		rc = run_all(&c, runs, &warmup_failed);
	int stopped_by = ab_interrupted;
	if (setup_done && c.cleanup) {
		ab_interrupted = 0; /* the cleanup runs even then; a second signal stops it */
		int cleanup_rc = ab_run_hook(&c, "cleanup", c.cleanup);
		rc = rc ? rc : cleanup_rc;
		stopped_by = stopped_by ? stopped_by : ab_interrupted;
	}
	int failed = 0;
	if (rc == 0)
		failed = report(&c, runs, json_file, markdown_file, warmup_failed);
	if (json_file)
		fclose(json_file);
	if (markdown_file)
		fclose(markdown_file);
	free(runs);
	for (int m = 0; m < c.metrics; m++)
		ab_metric_free(&c.metric[m]);
	bool ok = rc == 0 && failed == 0 && warmup_failed == 0 && !stopped_by;
	if (stopped_by)
		fprintf(stderr, "tscshim ab: stopped by signal %d; every process it started is stopped\n", stopped_by);
	if (ok && c.temporary_out_dir)
		plot_cleanup(c.out_dir);
	else if (!ok && c.temporary_out_dir)
		fprintf(stderr, "tscshim ab: the runs' output is kept in %s\n", c.out_dir);
	if (stopped_by)
		return 128 + stopped_by;
	return ok ? 0 : 1;
}
