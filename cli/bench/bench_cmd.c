/* tscshim bench: the per-call cost of every clock, for every way of reading it, side by
 * side in one run. The real function and the system call run here (this process is not
 * preloaded); the shim runs in children, fenced, unfenced and passing through, which
 * re-execute this command with the shim preloaded and send their cells on a pipe. The
 * floor runs in the fenced and the unfenced child, its batches between the shim's, with
 * the read plan that shim serves with. */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"
#include "floor.h"
#include "plot.h"
#include "shim_status.h"
#include "util.h"

#include "benefit.h"
#include "counter.h"
#include "report.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CALLS 200000

struct results {
	int threads;
	struct bench_cell *cells; /* [variant][clock][thread + 1] */
	struct shim_status_line shim[BENCH_CHILDREN]; /* [enum bench_child] */
	struct bench_floor floor[BENCH_CHILDREN];     /* the floor beside each (plan -1: none) */
	unsigned min_gain_pct; /* the verdict's margin: TSCSHIM_MIN_GAIN_PCT, as the gate's */
};

static struct bench_cell *cell_at(struct results *r, int variant, int clock, int thread)
{
	return &r->cells[((size_t)variant * BENCH_CLOCKS + (size_t)clock) * (size_t)(r->threads + 1) +
			 (size_t)(thread + 1)];
}

static void store_cell(void *ctx, int variant, int clock, int thread, const struct bench_cell *cell)
{
	*cell_at(ctx, variant, clock, thread) = *cell;
}

static int parse_cell_line(char *line, struct results *r)
{
	int variant, clock, thread, used;
	struct bench_cell c = {.present = true};
	if (sscanf(line, "cell %d %d %d %ld %lf %lf %lf %lf %lf %lf%n", &variant, &clock, &thread,
		   &c.calls, &c.mean, &c.p50, &c.p90, &c.p99, &c.p999, &c.max, &used) != 10)
		return -1;
	if (variant < 0 || variant >= BENCH_VARIANTS || clock < 0 || clock >= BENCH_CLOCKS ||
	    thread < -1 || thread >= r->threads)
		return -1;
	char *p = line + used;
	for (int i = 0; i < BENCH_QUANTILES; i++) {
		char *end;
		c.q[i] = strtod(p, &end);
		if (end == p)
			return -1;
		p = end;
	}
	*cell_at(r, variant, clock, thread) = c;
	return 0;
}

static int child_of(int variant)
{
	return variant == V_SHIM_FENCED ? CHILD_FENCED : variant == V_SHIM_UNFENCED ? CHILD_UNFENCED : CHILD_PASSING;
}

/* One shim variant in a child: served fenced or unfenced, or passing through. */
static int run_child(int variant, const struct bench_work *w, struct results *r)
{
	char v[16], calls[32], threads[16];
	snprintf(v, sizeof v, "%d", variant);
	snprintf(calls, sizeof calls, "%ld", w->calls);
	snprintf(threads, sizeof threads, "%d", w->threads);
	char *args[] = {"cells", v, calls, threads, NULL};
	int child = child_of(variant);
	FILE *in;
	int pid;
	if (bench_spawn_worker(args, child, &in, &pid) != 0)
		return -1;
	char *line = NULL;
	size_t size = 0;
	int bad = 0, got_status = 0;
	while (getline(&line, &size, in) > 0) {
		if (strncmp(line, "shim ", 5) == 0)
			got_status = shim_status_parse(line, &r->shim[child]) == 0;
		else if (strncmp(line, "floor ", 6) == 0)
			bad |= bench_floor_parse(line, &r->floor[child]) != 0;
		else if (parse_cell_line(line, r) != 0)
			bad = 1;
	}
	free(line);
	fclose(in);
	int rc = bench_wait_worker(pid);
	if (rc == 0 && (bad || !got_status)) {
		fprintf(stderr, "tscshim bench: malformed output from the worker\n");
		rc = -1;
	}
	return rc;
}

/* Ratios are of medians (p50): robust to the preemptions that dominate the means of short
 * runs. Each row is compared to the floor with the same fencing (fenced for real and
 * syscall, which the kernel fences). A shim row's floor was timed beside it, in its
 * process and between its batches; the real function's and the system call's, in
 * another process and at another time. */
static double ratio_real(struct results *r, int v, int c, int t)
{
	double base = cell_at(r, V_REAL, c, t)->p50;
	return base > 0 ? cell_at(r, v, c, t)->p50 / base : 0;
}

/* 0 where no floor applies: a clock the counter does not stand in for, or the shim
 * passing through (its reference is the real function). */
static double ratio_floor(struct results *r, int v, int c, int t)
{
	if (v == V_SHIM_PASSING || !bench_measures(V_FLOOR_FENCED, c))
		return 0;
	int f = v == V_SHIM_UNFENCED || v == V_FLOOR_UNFENCED ? V_FLOOR_UNFENCED : V_FLOOR_FENCED;
	double base = cell_at(r, f, c, t)->p50;
	return base > 0 ? cell_at(r, v, c, t)->p50 / base : 0;
}

/* The verdict weighs the shim against the kernel on CLOCK_MONOTONIC, all threads together:
 * the clock most programs read, and the one the shim's benefit gate measures too, with
 * the gate's margin. */
static struct cost verdict_cost(struct results *r)
{
	return (struct cost){
		.kernel_ns = cell_at(r, V_REAL, C_MONOTONIC, -1)->p50,
		.syscall_ns = cell_at(r, V_SYSCALL, C_MONOTONIC, -1)->p50,
		.fenced_ns = cell_at(r, V_SHIM_FENCED, C_MONOTONIC, -1)->p50,
		.unfenced_ns = cell_at(r, V_SHIM_UNFENCED, C_MONOTONIC, -1)->p50,
	};
}

/* The kernel's path and the recommendation, from this run's own figures. */
static void verdict_text(struct results *r, const char **kernel_path, char *recommendation, size_t size)
{
	struct cost c = verdict_cost(r);
	*kernel_path = kernel_path_name(benefit_kernel_path(&c));
	benefit_recommendation(&c, r->min_gain_pct, recommendation, size);
}

/* Every present cell in the order of the table (clock, variant, then all threads before
 * each thread): the table, the CSV and the JSON list the same rows alike. */
typedef void cell_fn(struct results *r, int v, int c, int t, const struct bench_cell *x, void *ctx);

static void each_cell(struct results *r, cell_fn *fn, void *ctx)
{
	for (int c = 0; c < BENCH_CLOCKS; c++)
		for (int v = 0; v < BENCH_VARIANTS; v++)
			for (int t = -1; t < r->threads; t++) {
				const struct bench_cell *x = cell_at(r, v, c, t);
				if (x->present)
					fn(r, v, c, t, x, ctx);
			}
}

static void thread_name(char *buf, size_t size, int t)
{
	if (t < 0)
		snprintf(buf, size, "all");
	else
		snprintf(buf, size, "%d", t);
}

static void table_row(struct results *r, int v, int c, int t, const struct bench_cell *x, void *ctx)
{
	(void)ctx;
	char tn[16];
	thread_name(tn, sizeof tn, t);
	char floor[16] = "-";
	double rf = ratio_floor(r, v, c, t);
	if (rf > 0)
		snprintf(floor, sizeof floor, "%.2f", rf);
	printf("%-14s %-16s %-3s %9.2f %9.2f %9.2f %9.2f %9.2f %10.1f %7.2f %7s\n", bench_variant_names[v],
	       bench_clock_names[c], tn, x->mean, x->p50, x->p90, x->p99, x->p999, x->max,
	       ratio_real(r, v, c, t), floor);
}

static void csv_row(struct results *r, int v, int c, int t, const struct bench_cell *x, void *ctx)
{
	(void)ctx;
	char tn[16];
	thread_name(tn, sizeof tn, t);
	printf("%s,%s,%s,%ld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f\n", bench_variant_names[v],
	       bench_clock_names[c], tn, x->calls, x->mean, x->p50, x->p90, x->p99, x->p999, x->max,
	       ratio_real(r, v, c, t), ratio_floor(r, v, c, t));
}

/* ctx: the separator before this row (the first row has none but a newline). */
static void json_row(struct results *r, int v, int c, int t, const struct bench_cell *x, void *ctx)
{
	const char **sep = ctx;
	printf("%s  {\"variant\": \"%s\", \"clock\": \"%s\", \"thread\": ", *sep, bench_variant_names[v],
	       bench_clock_names[c]);
	if (t < 0)
		printf("\"all\"");
	else
		printf("%d", t);
	printf(", \"calls\": %ld, \"mean_ns\": %.3f, \"p50_ns\": %.3f, \"p90_ns\": %.3f, "
	       "\"p99_ns\": %.3f, \"p999_ns\": %.3f, \"max_ns\": %.3f, \"ratio_real\": %.4f, "
	       "\"ratio_floor\": %.4f}",
	       x->calls, x->mean, x->p50, x->p90, x->p99, x->p999, x->max, ratio_real(r, v, c, t),
	       ratio_floor(r, v, c, t));
	*sep = ",\n";
}

/* How a floor read the counter, and whether as its shim did. */
static void floor_description(const struct bench_floor *f, char *buf, size_t size)
{
	if (f->plan < 0)
		snprintf(buf, size, "not timed");
	else if (f->plan == f->shim_plan)
		snprintf(buf, size, "%s, as the shim serves", floor_plan_name(f->plan));
	else
		snprintf(buf, size, "%s, the cheapest here (the shim did not serve so)", floor_plan_name(f->plan));
}

/* The ordered read the fenced floor uses, "lfence; rdtsc" or "rdtscp" ("none" where it did
 * not run). */
static const char *floor_ordered_read(const struct results *r)
{
	int plan = r->floor[CHILD_FENCED].plan;
	return !floor_plan_fenced(plan) ? "none" : (plan & 3) == COUNTER_READ_RDTSCP ? "rdtscp" : "lfence; rdtsc";
}

static void print_plan_json(int plan)
{
	if (plan < 0)
		printf("null");
	else
		printf("%d", plan);
}

static void print_table(struct results *r, const struct bench_work *w)
{
	printf("tscshim bench: %ld calls per clock and thread, %d thread(s), timed in batches of 64 calls\n",
	       w->calls, w->threads);
	for (int f = CHILD_FENCED; f >= CHILD_UNFENCED; f--)
		printf("shim %-8s %s%s%s\n", f ? "fenced:" : "unfenced:",
		       r->shim[f].active ? "active, serving from the TSC" : "NOT ACTIVE, calls pass through (",
		       r->shim[f].active ? "" : r->shim[f].reason, r->shim[f].active ? "" : ")");
	const struct shim_status_line *p = &r->shim[CHILD_PASSING];
	printf("shim passing: %s%s%s\n", p->active ? "SERVING, not passing through (" : "passing through (",
	       p->reason, ")");
	printf("%-14s %-16s %-3s %9s %9s %9s %9s %9s %10s %7s %7s\n", "variant", "clock", "thr", "mean",
	       "p50", "p90", "p99", "p99.9", "max", "x real", "x floor");
	each_cell(r, table_row, NULL);
	printf("ns per call; x real, x floor: p50 over the real function's, over the floor's p50 (- none: the\n"
	       "shim passing through, or a clock the shim does not serve, where its rows are pass-through too);\n"
	       "the floor: the shim's read less its line (counter read, multiply-shift, split), timed in each\n"
	       "shim's process between its batches, reading the counter as that shim does:\n");
	for (int f = CHILD_FENCED; f >= CHILD_UNFENCED; f--) {
		char how[160];
		floor_description(&r->floor[f], how, sizeof how);
		printf("  floor-%s %s\n", f == CHILD_FENCED ? "fenced:  " : "unfenced:", how);
	}
	const char *kernel_path;
	char recommendation[512];
	verdict_text(r, &kernel_path, recommendation, sizeof recommendation);
	printf("verdict: CLOCK_MONOTONIC p50, the kernel's clock through the %s; %s\n", kernel_path,
	       recommendation);
}

static void print_csv(struct results *r)
{
	printf("variant,clock,thread,calls,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,ratio_real,ratio_floor\n");
	each_cell(r, csv_row, NULL);
}

/* read_plan: the plan it served with (null: it did not serve, or the child did not say). */
static void print_shim_json(const struct shim_status_line *s, int read_plan)
{
	printf("{\"loaded\": %s, \"active\": %s, \"fenced\": %s, \"rate_hz\": %.3f, \"read_plan\": ",
	       s->loaded ? "true" : "false", s->active ? "true" : "false", s->fenced ? "true" : "false",
	       (double)s->rate_millihz / 1000.0);
	print_plan_json(read_plan);
	printf(", \"reason\": ");
	json_write_string(stdout, s->reason);
	printf("}");
}

static void print_floor_json(const struct bench_floor *f)
{
	printf("{\"read_plan\": ");
	print_plan_json(f->plan);
	printf(", \"read\": \"%s\", \"as_the_shim\": %s}", floor_plan_name(f->plan),
	       f->plan >= 0 && f->plan == f->shim_plan ? "true" : "false");
}

static void print_json(struct results *r, const struct bench_work *w)
{
	printf("{\"command\": \"bench\", \"calls\": %ld, \"threads\": %d, \"batch\": 64, \"floor_ordered_read\": \"%s\",\n",
	       w->calls, w->threads, floor_ordered_read(r));
	printf(" \"floor\": {\"fenced\": ");
	print_floor_json(&r->floor[CHILD_FENCED]);
	printf(", \"unfenced\": ");
	print_floor_json(&r->floor[CHILD_UNFENCED]);
	printf("},\n \"shim\": {\"fenced\": ");
	print_shim_json(&r->shim[CHILD_FENCED], r->floor[CHILD_FENCED].shim_plan);
	printf(", \"unfenced\": ");
	print_shim_json(&r->shim[CHILD_UNFENCED], r->floor[CHILD_UNFENCED].shim_plan);
	printf(", \"passing\": ");
	print_shim_json(&r->shim[CHILD_PASSING], -1);
	printf("},\n \"results\": [");
	const char *sep = "\n";
	each_cell(r, json_row, &sep);
	const char *kernel_path;
	char recommendation[512];
	verdict_text(r, &kernel_path, recommendation, sizeof recommendation);
	printf("\n],\n \"verdict\": {\"kernel_path\": ");
	json_write_string(stdout, kernel_path);
	printf(", \"recommendation\": ");
	json_write_string(stdout, recommendation);
	printf("}}\n");
}

/* One CDF panel per clock, one line per variant (all threads together). */
static void plot(struct results *r, const char *file, const char *terminal)
{
	char dir[PATH_MAX];
	if (plot_tempdir(dir, sizeof dir) != 0) {
		fprintf(stderr, "tscshim bench: cannot create a temporary directory for the plot\n");
		return;
	}
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/plot.gp", dir);
	FILE *s = fopen(path, "w");
	if (!s) {
		plot_cleanup(dir);
		return;
	}
	plot_header(s, terminal, file, "");
	fprintf(s, "set multiplot layout 3,3 title 'tscshim bench: per-call latency CDF (batch means, all threads)'\n"
		   "set logscale x\nset xlabel 'ns per call'\nset ylabel 'fraction'\n");
	for (int c = 0; c < BENCH_CLOCKS; c++) {
		snprintf(path, sizeof path, "%s/%s.dat", dir, bench_clock_names[c]);
		FILE *d = fopen(path, "w");
		if (!d)
			continue;
		fprintf(d, "fraction");
		int columns = 0;
		for (int v = 0; v < BENCH_VARIANTS; v++)
			if (bench_measures(v, c)) {
				fprintf(d, " %s", bench_variant_names[v]);
				columns++;
			}
		fputc('\n', d);
		for (int i = 0; i < BENCH_QUANTILES; i++) {
			fprintf(d, "%.4f", (double)i / (BENCH_QUANTILES - 1));
			for (int v = 0; v < BENCH_VARIANTS; v++)
				if (bench_measures(v, c))
					fprintf(d, " %.3f", cell_at(r, v, c, -1)->q[i]);
			fputc('\n', d);
		}
		fclose(d);
		fprintf(s, "set title '%s' noenhanced\nplot for [i=2:%d] '%s' using i:1 with lines title columnheader(i)\n",
			bench_clock_names[c], columns + 1, path);
	}
	fprintf(s, "unset multiplot\n");
	fclose(s);
	if (plot_run("bench", dir, "plot.gp") == 0)
		fprintf(stderr, "tscshim bench: plot written to %s\n", file);
	plot_cleanup(dir);
}

static void bench_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim bench [--calls N] [--threads N] [--json | --csv] [--plot FILE.png|.svg]\n"
		"                     [--library PATH]\n"
		"       tscshim bench --drift SECONDS [--json] [--plot FILE.png|.svg] [--library PATH]\n"
		"       tscshim bench --startup [--rounds N] [--floor EMPTY.so] [--library PATH]\n"
		"\n"
		"Per-call cost of CLOCK_MONOTONIC, MONOTONIC_RAW, BOOTTIME, REALTIME and gettimeofday\n"
		"for libc's function, the system call, the shim fenced and unfenced (in children with\n"
		"the shim preloaded) and the floor (the shim's read less its line: counter read,\n"
		"multiply-shift, split; timed in each shim's child between its batches, with its read\n"
		"plan): mean and p50, p90, p99, p99.9, max of batches of 64 calls, in ns per call.\n"
		"--drift samples shim against kernel every 10 ms for SECONDS and reports the error and\n"
		"the rate error.\n"
		"The last line, verdict:, weighs the shim fenced and unfenced against the kernel's\n"
		"CLOCK_MONOTONIC by this run's p50s (at least 5%% cheaper, or no gain).\n"
		"--startup: the shim's own start-up cost over an empty preloaded object (--floor, default\n"
		"libtscshim-floor.so beside the library) for /bin/true and /bin/date, from the machine-wide\n"
		"record, the per-user cache and with TSCSHIM_DISABLE=1: medians of N rounds (default 200)\n"
		"in rotation, page faults, and the clock reads that pay for one start.\n"
		"--library PATH: the shim to preload (default: $TSCSHIM_LIBRARY, else the installed one).\n");
}

/* "--name N" with N a whole number in [min, max]: 1 with *out set, 0 if another option,
 * -1 after one line. */
static int count_option(int argc, char **argv, int *i, const char *name, long min, long max, long *out)
{
	const char *value;
	int m = cli_option_text("bench", argc, argv, i, name, &value);
	if (m <= 0)
		return m;
	if (cli_parse_long(value, min, max, out) != 0) {
		fprintf(stderr, "tscshim bench: %s '%s': need a whole number in %ld..%ld\n", name, value, min, max);
		return -1;
	}
	return 1;
}

/* What the command line asks for. */
struct bench_request {
	struct bench_work w;
	bool json, csv, work_options, startup;
	const char *plot_file, *terminal, *library_option, *floor_option;
	double drift;
	long rounds;
};

/* The options into *req. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_bench_options(int argc, char **argv, struct bench_request *req)
{
	for (int i = 1; i < argc; i++) {
		const char *value;
		int m;
		long n;
		if ((m = count_option(argc, argv, &i, "--calls", 64, 1000000000, &n)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			req->w.calls = n;
			req->work_options = true;
		} else if ((m = count_option(argc, argv, &i, "--threads", 1, 256, &n)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			req->w.threads = (int)n;
			req->work_options = true;
		} else if ((m = cli_option_text("bench", argc, argv, &i, "--drift", &value)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			if (cli_parse_double(value, 0.1, 86400, &req->drift) != 0) {
				fprintf(stderr, "tscshim bench: --drift '%s': need seconds in 0.1..86400\n", value);
				return EXIT_USAGE;
			}
		} else if ((m = cli_option_text("bench", argc, argv, &i, "--plot", &value)) != 0) {
			if (m < 0 || !(req->terminal = plot_terminal("bench", value)))
				return EXIT_USAGE;
			req->plot_file = value;
		} else if ((m = cli_option_text("bench", argc, argv, &i, "--library", &value)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			req->library_option = value;
		} else if ((m = cli_option_text("bench", argc, argv, &i, "--floor", &value)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			req->floor_option = value;
		} else if ((m = count_option(argc, argv, &i, "--rounds", 3, 2000, &req->rounds)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
		} else if (strcmp(argv[i], "--startup") == 0) {
			req->startup = true;
		} else if (strcmp(argv[i], "--json") == 0) {
			req->json = true;
		} else if (strcmp(argv[i], "--csv") == 0) {
			req->csv = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			bench_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "tscshim bench: unknown option '%s' (try tscshim bench --help)\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* Options that exclude each other: 0, or -1 after one line. */
static int check_bench_options(const struct bench_request *req)
{
	const char *bad = req->json && req->csv ? "--json and --csv exclude each other"
			  : req->drift > 0 && (req->csv || req->work_options) ? "--drift takes only --json, --plot and --library"
			  : req->startup && (req->json || req->csv || req->drift > 0 || req->work_options || req->plot_file)
				  ? "--startup takes only --rounds, --floor and --library"
				  : NULL;
	if (bad)
		fprintf(stderr, "tscshim bench: %s\n", bad);
	return bad ? -1 : 0;
}

/* Every variant, in the order of the table; the shim's children in between keep
 * neighbours apart, and the fenced and unfenced children time the floors beside their
 * shim. 0, or -1 after one line. */
static int run_every_variant(const struct bench_work *w, struct results *r)
{
	static const int order[] = {V_REAL, V_SYSCALL, V_SHIM_FENCED, V_SHIM_UNFENCED, V_SHIM_PASSING};
	_Static_assert(sizeof order / sizeof order[0] + 2 == BENCH_VARIANTS, "every variant runs, the floors beside");
	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
		int v = order[k];
		bool child = v == V_SHIM_FENCED || v == V_SHIM_UNFENCED || v == V_SHIM_PASSING;
		if ((child ? run_child(v, w, r) : bench_run_variant(v, w, store_cell, r)) != 0)
			return -1;
	}
	return 0;
}

/* Where a shim child did not do what its rows are named for, said loudly. */
static void warn_about_children(const struct results *r)
{
	for (int f = CHILD_UNFENCED; f <= CHILD_FENCED; f++)
		if (!r->shim[f].active)
			fprintf(stderr, "tscshim bench: WARNING: the shim (%s) was not active, its rows measure pass-through: %s\n",
				f ? "fenced" : "unfenced", r->shim[f].reason);
	if (r->shim[CHILD_PASSING].active)
		fprintf(stderr, "tscshim bench: WARNING: the passing shim served, its rows measure the counter: %s\n",
			r->shim[CHILD_PASSING].reason);
}

int command_bench(int argc, char **argv)
{
	struct bench_request req = {.w = {.calls = DEFAULT_CALLS, .threads = 1, .floor_plan = FLOOR_NO_PLAN},
				    .rounds = 200};
	int parsed = parse_bench_options(argc, argv, &req);
	if (parsed >= 0)
		return parsed;
	/* The shims it runs read this environment: under a bad variable every shim row would
	 * measure pass-through. One line and exit 2, as calib and ab say it. */
	struct option_values environment;
	if (cli_load_environment("bench", &environment) != 0 || check_bench_options(&req) != 0 ||
	    bench_find_library(req.library_option) != 0)
		return EXIT_USAGE;
	if (req.startup)
		return bench_startup_with(req.floor_option, (int)req.rounds);
	if (req.drift > 0)
		return bench_drift(req.drift, req.json, req.plot_file) == 0 ? 0 : 1;

	struct results r = {.threads = req.w.threads, .min_gain_pct = (unsigned)environment.num[OPT_MIN_GAIN_PCT]};
	for (int f = 0; f < BENCH_CHILDREN; f++)
		r.floor[f] = (struct bench_floor){FLOOR_NO_PLAN, FLOOR_NO_PLAN};
	r.cells = calloc((size_t)BENCH_VARIANTS * BENCH_CLOCKS * (size_t)(req.w.threads + 1), sizeof *r.cells);
	if (!r.cells) {
		fprintf(stderr, "tscshim bench: out of memory\n");
		return 1;
	}
	if (run_every_variant(&req.w, &r) != 0) {
		free(r.cells);
		return 1;
	}
	if (req.json)
		print_json(&r, &req.w);
	else if (req.csv)
		print_csv(&r);
	else
		print_table(&r, &req.w);
	warn_about_children(&r);
	if (req.plot_file && plot_available("bench"))
		plot(&r, req.plot_file, req.terminal);
	free(r.cells);
	return 0;
}
