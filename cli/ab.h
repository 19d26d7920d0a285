/* tscshim ab, internal: variants (which settings each side runs with), metrics (numbers
 * read from the command's output), the statistics of the verdict, and starting, waiting
 * for and stopping processes. Each job in a module of its own:
 *   ab_variant.c  --variant parsing and validation against the options table   (pure)
 *   ab_metric.c   --metric parsing and extraction with POSIX regular expressions (pure)
 *   ab_stats.c    medians, MAD outliers, the median's confidence interval, verdicts (pure)
 *   ab_server.c   processes: start with a variant's environment, wait, stop, readiness
 *   ab_report.c   the table, the JSON and the Markdown
 *   ab_cmd.c      options and the run loop */
#ifndef CLI_AB_H
#define CLI_AB_H

#include "options.h"
#include "shim_status.h"
#include "stats_line.h"

#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>

enum { AB_MAX_VARIANTS = 8, AB_MAX_METRICS = 8, AB_NAME_MAX = 32 };

/* ---- variants ---- */

/* One side of the comparison: with or without the shim, and the TSCSHIM_* values it sets
 * on top of the environment's. */
struct ab_variant {
	char name[AB_NAME_MAX];
	bool shim;                      /* preload libtscshim.so */
	bool set[OPTION_COUNT];         /* set by this variant (else the environment's, if any) */
	char text[OPTION_COUNT][OPTION_TEXT_MAX];
};

/* The default pair: A without the shim, B with it and the environment's settings. */
void ab_variant_defaults(struct ab_variant out[2]);

/* Parses "NAME:VAR=VALUE[,VAR=VALUE...]" (VAR: TSCSHIM_FENCE or FENCE; the key shim=on|off
 * says whether the shim is loaded, on by default) and validates every value with the
 * options table, on top of the environment's values. Returns 0, or -1 with one line in err. */
int ab_variant_parse(const char *spec, const struct option_values *environment, struct ab_variant *out,
		     char *err, size_t err_size);

/* Names distinct, at least two variants. Returns 0 or -1 with one line in err. */
int ab_variants_check(const struct ab_variant *v, int n, char *err, size_t err_size);

/* Every NAME=VALUE in envp whose NAME starts with TSCSHIM_ must be a variable of the
 * options table (a misspelt one would be silently ignored). Returns 0 or -1 with err. */
int ab_environment_check(char *const *envp, char *err, size_t err_size);

/* The value the variant's processes see for option id: the variant's, else the
 * environment's (getenv), else NULL. */
const char *ab_variant_value(const struct ab_variant *v, int id);

/* ---- metrics ---- */

struct ab_metric {
	char name[AB_NAME_MAX];
	bool higher_is_better;
	char pattern[256];
	regex_t re;
};

/* Parses "NAME:REGEX[:higher|:lower]"; REGEX is POSIX extended with at least one group.
 * Returns 0 (free with ab_metric_free), or -1 with one line in err. */
int ab_metric_parse(const char *spec, struct ab_metric *out, char *err, size_t err_size);
void ab_metric_free(struct ab_metric *m);

/* The number in the first group of the first match in text. 0: found; -1: no match;
 * -2: the group is not a number. */
int ab_metric_extract(const struct ab_metric *m, const char *text, double *out);

/* ---- statistics (pure) ---- */

double ab_median(const double *v, size_t n);
/* Median absolute deviation from median, times 1.4826 so that it estimates the standard
 * deviation of normal noise. */
double ab_mad(const double *v, size_t n, double median);
/* Flags (and counts) the values more than 3 MADs from the median; with a MAD of 0, every
 * value that differs from the median. */
size_t ab_outliers(const double *v, size_t n, bool *flag);

/* The median of v and a distribution-free confidence interval for it: order statistics
 * [x(k), x(n+1-k)] with k from the binomial (sign test), so that the coverage is at least
 * 95 %. Needs 6 values; below that has_interval is false. */
struct ab_interval {
	size_t n;
	double median, low, high, p10, p90;
	bool has_interval;
	double coverage; /* the interval's exact (n <= 1000) or approximate coverage */
};
struct ab_interval ab_median_interval(const double *v, size_t n);

enum ab_outcome { AB_UNDECIDED, AB_NO_DIFFERENCE, AB_BETTER, AB_WORSE };
extern const char *const ab_outcome_names[];

/* The verdict on the ratio variant/baseline: "B is 1.82x faster than A (1.75-1.90, 95%)",
 * "no difference detected (0.97-1.04)" or "too few pairs ...". is_time words it in
 * faster/slower, else better/worse. */
enum ab_outcome ab_verdict(const struct ab_interval *ratio, bool higher_is_better, bool is_time,
			   const char *variant, const char *baseline, char *buf, size_t size);

/* ---- processes ---- */

/* Set by the signal handler: the signal that asked ab to stop (SIGINT, SIGTERM, SIGHUP). */
extern volatile sig_atomic_t ab_interrupted;
void ab_catch_signals(void);

struct ab_spawn {
	char *const *argv;             /* the program, or NULL with shell */
	const char *shell;             /* run as /bin/sh -c SHELL */
	const char *out, *err;         /* files for stdout and stderr (truncated) */
	const struct ab_variant *variant; /* NULL: the environment as it is, no shim */
	const char *library;           /* libtscshim.so, preloaded when variant->shim */
	const char *stats;             /* TSCSHIM_STATS of a shim process */
};

/* A started process, leader of a process group of its own (so that what it starts is
 * stopped with it); stdin is /dev/null. */
struct ab_child {
	pid_t pid;
	int pidfd;
	bool reaped;
	int status;
};

/* Returns 0, or -1 with one line on stderr. */
int ab_start(const struct ab_spawn *s, struct ab_child *c);
/* Waits until the child exits (0; status, rusage), timeout seconds pass (1; timeout < 0:
 * none) or a signal asks ab to stop (2). */
int ab_wait(struct ab_child *c, double timeout, struct rusage *ru);
/* SIGTERM to the group, SIGKILL to what is left after grace seconds; reaps the child.
 * *killed: SIGKILL was needed. */
void ab_stop(struct ab_child *c, double grace, bool *killed);

/* Readiness: "tcp:PORT" (127.0.0.1) or "tcp:ADDR:PORT" (numeric IPv4), or a file. */
struct ab_ready {
	const char *tcp_spec, *file;
	char host[64];
	int port;
	double timeout;
};
int ab_ready_parse(struct ab_ready *r, char *err, size_t err_size);
bool ab_is_ready(const struct ab_ready *r);
/* Waits for readiness while the server lives: 0 ready, -1 with why in err, 2 interrupted. */
int ab_wait_ready(const struct ab_ready *r, struct ab_child *server, char *err, size_t err_size);

/* ---- the run ---- */

/* The clocks of the stats line, named by stats_clock_name(). */
enum { AB_CLOCKS = STAT_CLOCKS };

/* The TSCSHIM_STATS lines of a run's processes, summed. */
struct ab_tsc {
	int lines, active; /* processes that wrote stats; of them, those served by the TSC */
	unsigned long long served[AB_CLOCKS], total[AB_CLOCKS];
};
void ab_read_stats(const char *file, struct ab_tsc *t);
unsigned long long ab_tsc_served(const struct ab_tsc *t);
unsigned long long ab_tsc_total(const struct ab_tsc *t);

struct ab_run {
	int variant, pair; /* pair: the round, from 1 */
	double wall, user, sys; /* s */
	int status;             /* as wait4 gave it */
	bool timed_out;
	char failure[192];      /* why it failed beyond its status (a missing metric...); "" if not */
	double metric[AB_MAX_METRICS];
	bool has_metric[AB_MAX_METRICS];
	struct ab_tsc tsc, server_tsc;
	char server_stop[64];   /* how the server ended: "terminated (signal 15)", "killed after 5 s" */
};
bool ab_run_ok(const struct ab_run *r);
void ab_status_text(char *buf, size_t size, const struct ab_run *r);

struct ab_machine {
	char cpu[128], clocksource[64], kernel[160];
};
void ab_machine_read(struct ab_machine *m);

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

/* Runs one run of the command under variant v (prepare, server, command, stop), fills r.
 * Returns 0; -1 if ab must stop (one line said why); 2 if interrupted. */
int ab_run_once(const struct ab_config *c, int v, int pair, bool warmup, struct ab_run *r);
/* --setup or --cleanup ("setup", "cleanup"): 0 or -1 after one line; 2 if interrupted. */
int ab_run_hook(const struct ab_config *c, const char *what, const char *command);
/* Runs `tscshim __ab-decision` under each shim variant into c->decision. */
void ab_learn_decisions(struct ab_config *c);

/* ---- the report ---- */

enum { AB_QUANTITIES = 1 + AB_MAX_METRICS }; /* wall time, then each metric */

struct ab_summary {
	int quantities;
	struct {
		double min, median, max;
		size_t n;
	} q[AB_QUANTITIES][AB_MAX_VARIANTS], user[AB_MAX_VARIANTS], sys[AB_MAX_VARIANTS];
	bool *outlier[AB_QUANTITIES];        /* per run */
	size_t outliers[AB_QUANTITIES][AB_MAX_VARIANTS];
	struct ab_interval ratio[AB_QUANTITIES][AB_MAX_VARIANTS]; /* variant / the first, pair by pair */
	enum ab_outcome outcome[AB_QUANTITIES][AB_MAX_VARIANTS];
	char verdict[AB_QUANTITIES][AB_MAX_VARIANTS][256];
	struct ab_tsc tsc[AB_MAX_VARIANTS], server_tsc[AB_MAX_VARIANTS];
	int failed;
};

/* Returns 0 or -1 (out of memory). Free with ab_summary_free. */
int ab_summarize(const struct ab_config *c, const struct ab_run *runs, struct ab_summary *s);
void ab_summary_free(struct ab_summary *s);
const char *ab_quantity_name(const struct ab_config *c, int q);

void ab_print_table(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s);
void ab_print_json(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s);
void ab_print_markdown(FILE *out, const struct ab_config *c, const struct ab_summary *s);

#endif
