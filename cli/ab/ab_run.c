/* One run of `tscshim ab`: the prepare command, the server under the variant (waited for,
 * then stopped whatever happens), the command, timed, and what the run left: its exit
 * status, the TSCSHIM_STATS lines, the metrics in its output. Also the setup and cleanup
 * commands, the shim's decision under each variant and the machine's description. */
#define _GNU_SOURCE
#include "ab_run.h"
#include "ab_process.h"
#include "ab_server.h"
#include "util.h"

#include "system.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

bool ab_run_ok(const struct ab_run *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 && !r->timed_out && !r->failure[0];
}

void ab_status_text(char *buf, size_t size, const struct ab_run *r)
{
	if (r->timed_out)
		snprintf(buf, size, "timeout");
	else
		ab_exit_text(buf, size, r->status);
}

static void path_of(char *buf, const struct ab_config *c, const char *name, const char *suffix)
{
	snprintf(buf, PATH_MAX, "%s/%s.%s", c->out_dir, name, suffix);
}

/* A file's text, NUL-terminated (at most 64 MiB: enough for any report a command prints). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 65536, len = 0, n;
	char *text = malloc(cap + 1);
	while (text && (n = fread(text + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap && cap < ((size_t)64 << 20)) {
			char *bigger = realloc(text, 2 * cap + 1);
			if (!bigger)
				break;
			text = bigger, cap *= 2;
		} else if (len == cap) {
			break;
		}
	}
	fclose(f);
	if (text)
		text[len] = '\0';
	return text;
}

/* --show-output: a run's output goes to the terminal after the run (stdout to stderr
 * under --json, which keeps stdout for the document). */
static void show(const struct ab_config *c, const char *name, const char *what)
{
	static const char *const suffixes[2] = {"out", "err"};
	if (!c->show_output)
		return;
	for (int k = 0; k < 2; k++) {
		char path[PATH_MAX], suffix[32];
		snprintf(suffix, sizeof suffix, "%s%s", what, suffixes[k]);
		path_of(path, c, name, suffix);
		char *text = slurp(path);
		if (text && *text) {
			FILE *to = k == 0 && !c->json ? stdout : stderr;
			fputs(text, to);
			/* Output without a final newline would run into whatever ab writes next. */
			if (text[strlen(text) - 1] != '\n')
				fputc('\n', to);
			fflush(to);
		}
		free(text);
	}
}

static int run_shell(const struct ab_config *c, const char *name, const char *what, const char *command,
		     int *status)
{
	char out[PATH_MAX], err[PATH_MAX], suffix[32];
	snprintf(suffix, sizeof suffix, "%sout", what), path_of(out, c, name, suffix);
	snprintf(suffix, sizeof suffix, "%serr", what), path_of(err, c, name, suffix);
	struct ab_spawn s = {.shell = command, .out = out, .err = err};
	struct ab_child child;
	if (ab_start(&s, &child) != 0)
		return -1;
	int rc = ab_wait(&child, -1, NULL);
	if (rc == 2) {
		bool killed;
		ab_stop(&child, c->grace, &killed);
		return 2;
	}
	*status = child.status;
	show(c, name, what);
	return 0;
}

int ab_run_hook(const struct ab_config *c, const char *what, const char *command)
{
	int status;
	int rc = run_shell(c, what, "", command, &status);
	if (rc != 0)
		return rc;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char how[32];
		ab_exit_text(how, sizeof how, status);
		fprintf(stderr, "tscshim ab: the --%s command failed (%s); its output is in %s/%s.err\n", what, how,
			c->out_dir, what);
		return -1;
	}
	return 0;
}

static int start_server(const struct ab_config *c, int v, const char *name, struct ab_child *server)
{
	char out[PATH_MAX], err[PATH_MAX], stats[PATH_MAX];
	path_of(out, c, name, "server.out"), path_of(err, c, name, "server.err"), path_of(stats, c, name, "server.stats");
	unlink(stats);
	struct ab_spawn s = {.shell = c->server, .out = out, .err = err, .variant = &c->variant[v],
			     .library = c->library, .stats = stats};
	return ab_server_start(&s, &c->ready, c->grace, name, server);
}

static void read_metrics(const struct ab_config *c, const char *name, struct ab_run *r)
{
	char out[PATH_MAX], err[PATH_MAX];
	path_of(out, c, name, "out"), path_of(err, c, name, "err");
	char *text[2] = {slurp(out), slurp(err)};
	for (int m = 0; m < c->metrics; m++) {
		const char *metric = c->metric[m].name;
		char captured[AB_METRIC_CAPTURED_MAX];
		int rc = -1;
		for (int k = 0; k < 2 && rc != 0; k++)
			if (text[k] && (rc = ab_metric_extract(&c->metric[m], text[k], &r->metric[m], captured,
							       sizeof captured)) == -2)
				break;
		r->has_metric[m] = rc == 0;
		if (rc == -1 && !r->failure[0]) {
			snprintf(r->failure, sizeof r->failure, "metric %s not found", metric);
			fprintf(stderr, "tscshim ab: run %s: metric '%s' not found in the command's output (%s)\n", name,
				metric, out);
		} else if (rc == -2 && !r->failure[0]) {
			/* What was caught and what would be read: the fix is in the regex. */
			snprintf(r->failure, sizeof r->failure, "metric %s: captured \"%s\" is not a number", metric,
				 captured);
			fprintf(stderr,
				"tscshim ab: run %s: metric %s: captured \"%s\" is not a number (" AB_METRIC_NUMBER_FORM
				"); make the regex's first group capture only the number (the output: %s)\n",
				name, metric, captured, out);
		}
	}
	free(text[0]), free(text[1]);
}

int ab_run_once(const struct ab_config *c, int v, int pair, bool warmup, struct ab_run *r)
{
	char name[AB_NAME_MAX + 32], out[PATH_MAX], err[PATH_MAX], stats[PATH_MAX];
	snprintf(name, sizeof name, "%s%s-%d", warmup ? "warmup-" : "", c->variant[v].name, pair);
	memset(r, 0, sizeof *r);
	r->variant = v, r->pair = pair;
	if (c->prepare) {
		int status, rc = run_shell(c, name, "prepare.", c->prepare, &status);
		if (rc != 0)
			return rc;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "tscshim ab: the --prepare command failed before run %s; its output is in %s/%s.prepare.err\n",
				name, c->out_dir, name);
			return -1;
		}
	}
	struct ab_child server = {0};
	if (c->server) {
		int rc = start_server(c, v, name, &server);
		if (rc != 0)
			return rc;
	}
	path_of(out, c, name, "out"), path_of(err, c, name, "err"), path_of(stats, c, name, "stats");
	unlink(stats);
	/* With a server, the server is what the variant is about: the driver runs without it. */
	struct ab_spawn s = {.argv = c->cmd, .out = out, .err = err, .variant = c->server ? NULL : &c->variant[v],
			     .library = c->library, .stats = stats};
	struct ab_child driver;
	struct rusage ru = {0};
	bool killed;
	double t0 = cli_seconds_now();
	int rc = ab_start(&s, &driver);
	if (rc == 0) {
		rc = ab_wait(&driver, c->timeout, &ru);
		r->wall = cli_seconds_now() - t0;
		if (rc != 0) {
			r->timed_out = rc == 1;
			ab_stop(&driver, c->grace, &killed);
			if (rc == 1)
				snprintf(r->failure, sizeof r->failure, "timed out after %g s", c->timeout);
		}
		r->status = driver.status;
		rc = rc == 2 ? 2 : 0;
	}
	if (c->server) {
		/* A server that is gone before it was asked to stop failed the run. */
		bool early = ab_server_stop(&server, c->grace, r->server_stop, sizeof r->server_stop);
		if (early && !r->failure[0])
			snprintf(r->failure, sizeof r->failure, "the server ended during the run (%s)", r->server_stop);
		char server_stats[PATH_MAX];
		path_of(server_stats, c, name, "server.stats");
		ab_read_stats(server_stats, &r->server_tsc);
		show(c, name, "server.");
	}
	if (rc != 0)
		return rc < 0 ? -1 : rc;
	r->user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	r->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	ab_read_stats(stats, &r->tsc);
	if (!r->timed_out)
		read_metrics(c, name, r);
	show(c, name, "");
	return 0;
}

void ab_learn_decisions(struct ab_config *c)
{
	char self[PATH_MAX];
	if (cli_self_path(self, sizeof self) != 0)
		return;
	for (int v = 0; v < c->variants; v++) {
		if (!c->variant[v].shim)
			continue;
		char out[PATH_MAX], err[PATH_MAX];
		path_of(out, c, c->variant[v].name, "decision");
		path_of(err, c, c->variant[v].name, "decision.err");
		char *argv[] = {self, "__ab-decision", NULL};
		struct ab_spawn s = {.argv = argv, .out = out, .err = err, .variant = &c->variant[v],
				     .library = c->library};
		struct ab_child child;
		if (ab_start(&s, &child) != 0 || ab_wait(&child, 60, NULL) != 0)
			continue;
		char *text = slurp(out);
		if (text && shim_status_parse(text, &c->decision[v].shim) == 0)
			c->decision[v].known = true;
		free(text);
		unlink(out);
		unlink(err);
	}
}

/* The value of the first "name<tabs>: value" line of /proc/cpuinfo; "" if none. */
static void cpuinfo_value(const char *name, char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, name, strlen(name)) != 0)
			continue;
		const char *value = strchr(line, ':');
		if (value)
			value += 1 + strspn(value + 1, " \t");
		snprintf(buf, size, "%.*s", (int)strcspn(value ? value : "", "\n"), value ? value : "");
		break;
	}
	if (f)
		fclose(f);
}

void ab_machine_read(struct ab_machine *m)
{
	memset(m, 0, sizeof *m);
	cpuinfo_value("model name", m->cpu, sizeof m->cpu);
	read_current_clocksource(m->clocksource, sizeof m->clocksource);
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof m->kernel, "%s %s", u.sysname, u.release);
}
