/* tscshim ab [-n RUNS] [--warmup N] [--json] [--out-dir DIR] [--plot FILE] -- CMD [ARGS]
 *
 * Runs CMD without (A) and with (B) the shim, alternating A B A B after warmup pairs that
 * are not counted, so that drifts of the machine (caches, frequency, neighbours) fall on
 * both sides alike. Wall time is taken here (this process is not preloaded), user and sys
 * time from wait4. Each B run writes TSCSHIM_STATS to a file of its own, from which the
 * report says how many clock calls the TSC actually served: a B that served none measured
 * nothing. Exit status: 0 if every run of CMD exited 0, 1 if any failed (each run's status
 * is in the report), 2 for a usage or setup error. */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { SIDE_A, SIDE_B };
enum { STAT_FIELDS = 5 };
static const char *const stat_names[STAT_FIELDS] = {"monotonic", "monotonic_raw", "boottime", "realtime",
						    "other"};

struct ab_run {
	int side, pair;
	double wall, user, sys; /* s */
	int status;             /* as wait4 gave it */
	int stats_lines;        /* processes that wrote TSCSHIM_STATS (B only) */
	unsigned long long served[STAT_FIELDS], total[STAT_FIELDS];
};

struct ab_options {
	long runs, warmup;
	bool json;
	const char *out_dir, *plot_file, *terminal;
	char **cmd;
};

static double seconds_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool run_ok(const struct ab_run *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static void status_text(char *buf, size_t size, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "status %#x", status);
}

/* Sums every "tscshim stats ..." line of FILE (one per process of CMD that loaded the
 * shim): fields "clock=served/total". */
static void read_stats(const char *file, struct ab_run *r)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "tscshim stats ", 14) != 0)
			continue;
		r->stats_lines++;
		for (char *tok = strtok(line + 14, " \n"); tok; tok = strtok(NULL, " \n")) {
			char *eq = strchr(tok, '=');
			unsigned long long s, t;
			if (!eq || sscanf(eq + 1, "%llu/%llu", &s, &t) != 2)
				continue;
			for (int k = 0; k < STAT_FIELDS; k++)
				if ((size_t)(eq - tok) == strlen(stat_names[k]) &&
				    strncmp(tok, stat_names[k], (size_t)(eq - tok)) == 0)
					r->served[k] += s, r->total[k] += t;
		}
	}
	fclose(f);
}

static int redirect(const char *dir, const char *name, const char *suffix, int fd)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s.%s", dir, name, suffix);
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f < 0 || dup2(f, fd) < 0)
		return -1;
	close(f);
	return 0;
}

/* One run of CMD. Returns 0, or -1 if it could not be started (fork failed). */
static int run_once(const struct ab_options *o, const char *library, const char *tmp, int side, int pair,
		    bool warmup, struct ab_run *r)
{
	char name[64], stats[PATH_MAX];
	snprintf(name, sizeof name, "%s%c-%d", warmup ? "warmup-" : "", side == SIDE_A ? 'A' : 'B', pair);
	snprintf(stats, sizeof stats, "%s/%s.stats", tmp, name);
	memset(r, 0, sizeof *r);
	r->side = side, r->pair = pair;
	fflush(NULL);
	double t0 = seconds_now();
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "tscshim ab: fork: %s\n", strerror(errno));
		return -1;
	}
	if (child == 0) {
		if (o->out_dir && (redirect(o->out_dir, name, "out", STDOUT_FILENO) != 0 ||
				   redirect(o->out_dir, name, "err", STDERR_FILENO) != 0))
			_exit(126);
		if (side == SIDE_B && (cli_set_preload(library) != 0 || setenv("TSCSHIM_STATS", stats, 1) != 0))
			_exit(126);
		execvp(o->cmd[0], o->cmd);
		fprintf(stderr, "tscshim ab: %s: %s\n", o->cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	struct rusage ru;
	while (wait4(child, &r->status, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	r->wall = seconds_now() - t0;
	r->user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	r->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (side == SIDE_B) {
		read_stats(stats, r);
		unlink(stats);
	}
	return 0;
}

static double median(double *v, size_t n)
{
	bench_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct triple {
	double min, median, max;
};

static struct triple summary(const struct ab_run *runs, long n, int side, size_t field)
{
	double v[n];
	size_t k = 0;
	for (long i = 0; i < 2 * n; i++)
		if (runs[i].side == side)
			v[k++] = *(const double *)((const char *)&runs[i] + field);
	struct triple t = {.median = median(v, k)};
	t.min = v[0], t.max = v[k - 1];
	return t;
}

struct ab_report {
	struct triple t[2][3]; /* [side][wall, user, sys] */
	double ratio_median, ratio_p10, ratio_p90;
	unsigned long long served[STAT_FIELDS], total[STAT_FIELDS], served_all, total_all;
	int stats_lines, failed;
};

static void report_build(const struct ab_options *o, const struct ab_run *runs, struct ab_report *rep)
{
	static const size_t fields[3] = {offsetof(struct ab_run, wall), offsetof(struct ab_run, user),
					 offsetof(struct ab_run, sys)};
	memset(rep, 0, sizeof *rep);
	for (int s = 0; s < 2; s++)
		for (int f = 0; f < 3; f++)
			rep->t[s][f] = summary(runs, o->runs, s, fields[f]);
	double ratio[o->runs];
	for (long p = 0; p < o->runs; p++)
		ratio[p] = runs[2 * p].wall > 0 ? runs[2 * p + 1].wall / runs[2 * p].wall : 0;
	rep->ratio_median = median(ratio, (size_t)o->runs);
	rep->ratio_p10 = bench_quantile(ratio, (size_t)o->runs, 0.10);
	rep->ratio_p90 = bench_quantile(ratio, (size_t)o->runs, 0.90);
	for (long i = 0; i < 2 * o->runs; i++) {
		rep->failed += !run_ok(&runs[i]);
		rep->stats_lines += runs[i].stats_lines;
		for (int k = 0; k < STAT_FIELDS; k++) {
			rep->served[k] += runs[i].served[k], rep->total[k] += runs[i].total[k];
			rep->served_all += runs[i].served[k], rep->total_all += runs[i].total[k];
		}
	}
}

/* An argument as a shell would need it: bare when safe, else $'...' with C escapes, so
 * the command line in the report can be pasted back. */
static void print_shell_word(const char *w)
{
	if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+./:,@%") == strlen(w)) {
		fputs(w, stdout);
		return;
	}
	fputs("$'", stdout);
	for (; *w; w++) {
		unsigned char c = (unsigned char)*w;
		if (c == '\'' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('\'');
}

static void print_table(const struct ab_options *o, const struct ab_run *runs, const struct ab_report *rep)
{
	printf("tscshim ab: %ld runs each of A (without the shim) and B (with it), alternating, after %ld warmup pair(s)\n",
	       o->runs, o->warmup);
	printf("command:");
	for (char **a = o->cmd; *a; a++) {
		putchar(' ');
		print_shell_word(*a);
	}
	printf("\n%-8s %12s %12s %12s %12s %12s %12s\n", "", "A min", "A median", "A max", "B min", "B median",
	       "B max");
	static const char *const what[3] = {"wall s", "user s", "sys s"};
	for (int f = 0; f < 3; f++)
		printf("%-8s %12.6f %12.6f %12.6f %12.6f %12.6f %12.6f\n", what[f], rep->t[0][f].min,
		       rep->t[0][f].median, rep->t[0][f].max, rep->t[1][f].min, rep->t[1][f].median, rep->t[1][f].max);
	printf("B/A wall, pair by pair: median %.4f  p10 %.4f  p90 %.4f  (%ld pairs)\n", rep->ratio_median,
	       rep->ratio_p10, rep->ratio_p90, o->runs);
	printf("%-5s %-4s %12s %10s %10s %-10s %s\n", "pair", "side", "wall s", "user s", "sys s", "status",
	       "TSC served/total clock calls");
	for (long i = 0; i < 2 * o->runs; i++) {
		const struct ab_run *r = &runs[i];
		char st[32];
		status_text(st, sizeof st, r->status);
		printf("%-5d %-4s %12.6f %10.6f %10.6f %-10s", r->pair, r->side == SIDE_A ? "A" : "B", r->wall, r->user,
		       r->sys, st);
		if (r->side == SIDE_B) {
			unsigned long long s = 0, t = 0;
			for (int k = 0; k < STAT_FIELDS; k++)
				s += r->served[k], t += r->total[k];
			printf(" %llu/%llu", s, t);
		}
		printf("\n");
	}
	printf("B, all runs: TSC served %llu of %llu clock calls (", rep->served_all, rep->total_all);
	for (int k = 0; k < STAT_FIELDS; k++)
		printf("%s%s %llu/%llu", k ? ", " : "", stat_names[k], rep->served[k], rep->total[k]);
	printf(")\n");
	if (rep->failed)
		printf("FAILED: %d of %ld runs of the command did not exit 0 (see status above)\n", rep->failed,
		       2 * o->runs);
}

static void print_triple(const char *name, struct triple t)
{
	printf("\"%s\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f}", name, t.min, t.median, t.max);
}

static void print_json(const struct ab_options *o, const struct ab_run *runs, const struct ab_report *rep)
{
	printf("{\"command\": \"ab\", \"argv\": [");
	for (char **a = o->cmd; *a; a++) {
		if (a != o->cmd)
			printf(", ");
		json_string(stdout, *a);
	}
	printf("], \"runs\": %ld, \"warmup\": %ld,\n", o->runs, o->warmup);
	static const char *const what[3] = {"wall_s", "user_s", "sys_s"};
	for (int s = 0; s < 2; s++) {
		printf(" \"%s\": {", s ? "b" : "a");
		for (int f = 0; f < 3; f++) {
			if (f)
				printf(", ");
			print_triple(what[f], rep->t[s][f]);
		}
		printf("},\n");
	}
	printf(" \"ratio_b_over_a_wall\": {\"median\": %.6f, \"p10\": %.6f, \"p90\": %.6f},\n", rep->ratio_median,
	       rep->ratio_p10, rep->ratio_p90);
	printf(" \"tsc\": {\"served\": %llu, \"total\": %llu, \"stats_lines\": %d", rep->served_all, rep->total_all,
	       rep->stats_lines);
	for (int k = 0; k < STAT_FIELDS; k++)
		printf(", \"%s\": {\"served\": %llu, \"total\": %llu}", stat_names[k], rep->served[k], rep->total[k]);
	printf("},\n \"failed\": %d,\n \"detail\": [", rep->failed);
	for (long i = 0; i < 2 * o->runs; i++) {
		const struct ab_run *r = &runs[i];
		unsigned long long s = 0, t = 0;
		for (int k = 0; k < STAT_FIELDS; k++)
			s += r->served[k], t += r->total[k];
		printf("%s\n  {\"pair\": %d, \"side\": \"%s\", \"wall_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, "
		       "\"exit_status\": ",
		       i ? "," : "", r->pair, r->side ? "B" : "A", r->wall, r->user, r->sys);
		if (WIFEXITED(r->status))
			printf("%d, \"signal\": null", WEXITSTATUS(r->status));
		else
			printf("null, \"signal\": %d", WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0);
		printf(", \"ok\": %s", run_ok(r) ? "true" : "false");
		if (r->side == SIDE_B)
			printf(", \"tsc_served\": %llu, \"clock_calls\": %llu", s, t);
		printf("}");
	}
	printf("\n]}\n");
}

static void plot(const struct ab_options *o, const struct ab_run *runs)
{
	char dir[PATH_MAX];
	if (plot_tempdir(dir, sizeof dir) != 0) {
		fprintf(stderr, "tscshim ab: cannot create a temporary directory for the plot\n");
		return;
	}
	char path[PATH_MAX + 32];
	bool ok = true;
	for (int s = 0; s < 2; s++) {
		double v[o->runs];
		size_t k = 0;
		for (long i = 0; i < 2 * o->runs; i++)
			if (runs[i].side == s)
				v[k++] = runs[i].wall;
		bench_sort(v, k);
		snprintf(path, sizeof path, "%s/%c.dat", dir, s ? 'b' : 'a');
		FILE *d = fopen(path, "w");
		if (!d) {
			ok = false;
			continue;
		}
		for (size_t i = 0; i < k; i++)
			fprintf(d, "%.6f %.6f\n", v[i], (double)(i + 1) / (double)k);
		fclose(d);
	}
	snprintf(path, sizeof path, "%s/plot.gp", dir);
	FILE *s = fopen(path, "w");
	if (s && ok) {
		plot_header(s, o->terminal, o->plot_file, "tscshim ab: wall time CDF, A (without) and B (with the shim)");
		fprintf(s, "set xlabel 'wall s'\nset ylabel 'fraction of runs'\n"
			   "plot '%s/a.dat' using 1:2 with steps title 'A: without', "
			   "'%s/b.dat' using 1:2 with steps title 'B: with the shim'\n",
			dir, dir);
	}
	if (s)
		fclose(s);
	if (s && ok && plot_run("ab", dir, "plot.gp") == 0)
		fprintf(stderr, "tscshim ab: plot written to %s\n", o->plot_file);
	plot_cleanup(dir);
}

static void ab_usage(FILE *out)
{
	fprintf(out,
		"usage: tscshim ab [-n RUNS] [--warmup N] [--json] [--out-dir DIR] [--plot FILE.png|.svg]\n"
		"                  -- COMMAND [ARGS...]\n"
		"\n"
		"Runs COMMAND without (A) and with (B) the shim, alternating, RUNS times each (default\n"
		"10) after N uncounted warmup pairs (default 1); reports wall, user and sys time, the\n"
		"B/A wall ratio pair by pair, every run's exit status and how many clock calls the\n"
		"TSC served in B. Exit status: 0 if every run exited 0, 1 if any failed, 2 on error.\n");
}

static int parse(int argc, char **argv, struct ab_options *o)
{
	*o = (struct ab_options){.runs = 10, .warmup = 1};
	int i = 1;
	for (; i < argc; i++) {
		const char *value;
		int m;
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if ((m = bench_option("ab", argc, argv, &i, "-n", &value)) != 0 ||
		    (m = bench_option("ab", argc, argv, &i, "--runs", &value)) != 0) {
			if (m < 0)
				return -1;
			if (bench_parse_long(value, 1, 100000, &o->runs) != 0) {
				fprintf(stderr, "tscshim ab: -n '%s': need a whole number in 1..100000\n", value);
				return -1;
			}
		} else if ((m = bench_option("ab", argc, argv, &i, "--warmup", &value)) != 0) {
			if (m < 0)
				return -1;
			if (bench_parse_long(value, 0, 100000, &o->warmup) != 0) {
				fprintf(stderr, "tscshim ab: --warmup '%s': need a whole number in 0..100000\n", value);
				return -1;
			}
		} else if ((m = bench_option("ab", argc, argv, &i, "--out-dir", &value)) != 0) {
			if (m < 0)
				return -1;
			o->out_dir = value;
		} else if ((m = bench_option("ab", argc, argv, &i, "--plot", &value)) != 0) {
			if (m < 0 || !(o->terminal = plot_terminal("ab", value)))
				return -1;
			o->plot_file = value;
		} else if (strcmp(argv[i], "--json") == 0) {
			o->json = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			ab_usage(stdout);
			exit(0);
		} else {
			fprintf(stderr, "tscshim ab: unknown option '%s' (usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...])\n",
				argv[i]);
			return -1;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "tscshim ab: no command given (usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...])\n");
		return -1;
	}
	o->cmd = argv + i;
	return 0;
}

int command_ab(int argc, char **argv)
{
	struct ab_options o;
	if (parse(argc, argv, &o) != 0)
		return EXIT_USAGE;
	char library[PATH_MAX];
	if (cli_default_library(library, sizeof library) != 0 || access(library, R_OK) != 0) {
		fprintf(stderr, "tscshim ab: cannot find libtscshim.so next to this executable\n");
		return EXIT_USAGE;
	}
	if (o.out_dir && mkdir(o.out_dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "tscshim ab: --out-dir %s: %s\n", o.out_dir, strerror(errno));
		return EXIT_USAGE;
	}
	char tmp[PATH_MAX];
	if (plot_tempdir(tmp, sizeof tmp) != 0) {
		fprintf(stderr, "tscshim ab: cannot create a temporary directory\n");
		return EXIT_USAGE;
	}
	struct ab_run *runs = calloc((size_t)(2 * o.runs), sizeof *runs);
	if (!runs) {
		plot_cleanup(tmp);
		return EXIT_USAGE;
	}
	int rc = 0, warmup_failed = 0;
	for (long p = 0; p < o.warmup && rc == 0; p++) {
		struct ab_run w;
		for (int s = 0; s < 2 && rc == 0; s++) {
			rc = run_once(&o, library, tmp, s, (int)p + 1, true, &w);
			warmup_failed += rc == 0 && !run_ok(&w);
		}
	}
	for (long p = 0; p < o.runs && rc == 0; p++)
		for (int s = 0; s < 2 && rc == 0; s++)
			rc = run_once(&o, library, tmp, s, (int)p + 1, false, &runs[2 * p + s]);
	plot_cleanup(tmp);
	if (rc != 0) {
		free(runs);
		return EXIT_USAGE;
	}
	struct ab_report rep;
	report_build(&o, runs, &rep);
	if (o.json)
		print_json(&o, runs, &rep);
	else
		print_table(&o, runs, &rep);
	if (warmup_failed)
		fprintf(stderr, "tscshim ab: %d warmup run(s) of the command failed\n", warmup_failed);
	if (rep.served_all == 0)
		fprintf(stderr, "tscshim ab: WARNING: THE TSC SERVED NO CLOCK CALL IN ANY B RUN (%d process(es) "
				"reported stats): B measured the real clock, not the shim\n",
			rep.stats_lines);
	if (o.plot_file && plot_available("ab"))
		plot(&o, runs);
	free(runs);
	return rep.failed || warmup_failed ? 1 : 0;
}
