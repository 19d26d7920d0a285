/* The benefit gate's costs for the machine-wide record, and the decision they make.
 *
 * `tscshim calib --save` writes the record, then runs itself as `__shim-costs` with the
 * shim preloaded and TSCSHIM_SYSTEM_RECORD naming that record: the shim in that child
 * decides from it, measures the costs as every process would (its own hot path, this
 * host's kernel clock) and reports them, with its build-id, through tscshim_status_v2.
 * The record then carries them, and every process of that build reuses them instead of
 * measuring: one boot and one build give one decision. The musl build's, too, where it
 * lies beside this one: a record keeps the costs of two builds.
 *
 * `tscshim calib` without --save has a child measure them from a cold start of its own
 * (shim_costs_measure): the figures it reports are the shim's, as its gate measures them. */
#define _GNU_SOURCE
#include "cli.h"
#include "util.h"

#include "benefit.h"
#include "cache.h"
#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The child: what the preloaded shim decided, and its costs, as one line:
 * "costs SOURCE FROM_RECORD KERNEL SYSCALL FENCED UNFENCED BUILD FENCED_PLAN". */
int command_shim_costs(void)
{
	typedef int status_fn(struct tscshim_status *, size_t);
	status_fn *status = (status_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (!status || status(&s, sizeof s) < TSCSHIM_STATUS_VERSION) {
		puts("costs none");
		return 1;
	}
	printf("costs %d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %u\n", s.source,
	       s.costs_from_record, s.cost_kernel_ps, s.cost_syscall_ps, s.cost_fenced_ps,
	       s.cost_unfenced_ps, s.cost_build, (unsigned)s.cost_fenced_plan);
	return 0;
}

/* The child's environment: ours without the shim's settings (TSCSHIM_TEST_ hooks
 * excepted), the shim preloaded (before our own LD_PRELOAD where keep_preload, else
 * alone), then the child's own settings (NULL-terminated). */
static char **child_environment(const char *library, bool keep_preload, char *preload, size_t preload_size,
				char *const settings[])
{
	size_t n = 0, extra = 0;
	for (char **e = environ; *e; e++)
		n++;
	while (settings[extra])
		extra++;
	char **env = calloc(n + extra + 2, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
		    (strncmp(*e, "TSCSHIM_", 8) != 0 || strncmp(*e, "TSCSHIM_TEST_", 13) == 0))
			env[k++] = *e;
	const char *ours = getenv("LD_PRELOAD");
	if (keep_preload && ours && ours[0])
		snprintf(preload, preload_size, "LD_PRELOAD=%s:%s", library, ours);
	else
		snprintf(preload, preload_size, "LD_PRELOAD=%s", library);
	env[k++] = preload;
	for (size_t i = 0; i < extra; i++)
		env[k++] = settings[i];
	env[k] = NULL;
	return env;
}

/* Runs `program __shim-costs` with library preloaded and these settings; its one line
 * into *out. Returns 0, or -1 with why. */
static int costs_from_child(const char *program, const char *library, char *const settings[], bool keep_preload,
			    struct shim_costs *out, char *why, size_t why_size)
{
	char preload[2 * PATH_MAX + 16];
	char **env = child_environment(library, keep_preload, preload, sizeof preload, settings);
	int fds[2];
	if (!env || pipe(fds) != 0) {
		free(env);
		snprintf(why, why_size, "cannot start the measuring process: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&actions, fds[0]);
	char *argv[] = {(char *)program, "__shim-costs", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, program, &actions, NULL, argv, env);
	posix_spawn_file_actions_destroy(&actions);
	free(env);
	close(fds[1]);
	char line[256] = "";
	FILE *in = fdopen(fds[0], "r");
	if (in) {
		if (!fgets(line, sizeof line, in))
			line[0] = '\0';
		fclose(in);
	} else {
		close(fds[0]);
	}
	if (rc == 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (rc != 0 || sscanf(line, "costs %d %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %u",
			      &out->source, &out->from_record, &out->kernel_ps, &out->syscall_ps, &out->fenced_ps,
			      &out->unfenced_ps, &out->build, &out->fenced_plan) != 8) {
		snprintf(why, why_size, "the shim in the measuring process answered nothing");
		return -1;
	}
	if (!out->kernel_ps || !out->syscall_ps || !out->fenced_ps || !out->unfenced_ps || !out->build) {
		snprintf(why, why_size, "the shim measured no costs (%s)",
			 out->source == TSCSHIM_SOURCE_NONE ? "it refused early or passes through"
							    : "its counter was not found reliable");
		return -1;
	}
	return 0;
}

/* This command and the library it preloads: 0, or -1 with why. */
static int this_build(char *program, char *library, size_t size, char *why, size_t why_size)
{
	if (cli_find_library("calib", NULL, library, size) != 0) {
		snprintf(why, why_size, "the shim library was not found");
		return -1;
	}
	if (cli_self_path(program, size) != 0) {
		snprintf(why, why_size, "cannot locate this executable");
		return -1;
	}
	return 0;
}

int shim_costs_measure(struct shim_costs *out, char *why, size_t why_size)
{
	char program[PATH_MAX], library[PATH_MAX];
	if (this_build(program, library, sizeof program, why, why_size) != 0)
		return -1;
	/* A cold start in a directory of its own: the child measures at load, as a process
	 * with no record does, and nothing of the machine's or the user's is read or written. */
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/tscshim-calib.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(why, why_size, "cannot create a temporary directory: %s", strerror(errno));
		return -1;
	}
	char cache[PATH_MAX + 32];
	snprintf(cache, sizeof cache, "TSCSHIM_CACHE=%s/cache", dir);
	/* The estimator's budget generous: on a loaded machine the default 20 ms may end
	 * inconclusive (the child then measures no costs); the calib run that asks has just
	 * found the counter reliable, and waits at most a second more. */
	char *settings[] = {cache, "TSCSHIM_SYSTEM_RECORD=off", "TSCSHIM_DECIDE_AFTER=1",
			    "TSCSHIM_ESTIMATE_BUDGET_US=1000000", NULL};
	/* This user's own preloads stay: they may change how the kernel's clock is read. */
	int rc = costs_from_child(program, library, settings, true, out, why, why_size);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	unlink(cache);
	rmdir(dir);
	return rc;
}

/* One build's costs: `program __shim-costs` with `library` preloaded, deciding from the
 * record at record_path (no preload of this shell's: the record serves every process).
 * Returns 0 with *c, or -1 with why. */
static int measure_build(const char *program, const char *library, const char *record_path, struct cache_costs *c,
			 char *why, size_t why_size)
{
	char record_setting[PATH_MAX + 32];
	snprintf(record_setting, sizeof record_setting, "TSCSHIM_SYSTEM_RECORD=%s", record_path);
	char *settings[] = {record_setting, "TSCSHIM_CACHE=off", NULL};
	struct shim_costs s;
	/* The costs are of the clocksource the kernel used while they were measured: the
	 * same before and after, or they are of neither. */
	char before[CACHE_CLOCKSOURCE_MAX + 1] = "", after[CACHE_CLOCKSOURCE_MAX + 1] = "";
	read_current_clocksource(before, sizeof before);
	if (costs_from_child(program, library, settings, false, &s, why, why_size) != 0)
		return -1;
	read_current_clocksource(after, sizeof after);
	if (strcmp(before, after) != 0) {
		snprintf(why, why_size, "the kernel's clocksource changed from %s to %s while the costs were measured",
			 before, after);
		return -1;
	}
	if (s.source != TSCSHIM_SOURCE_SYSTEM_RECORD) {
		snprintf(why, why_size, "the shim did not decide from the record (it does not trust it: written by "
					"root, in a directory only root may write?)");
		return -1;
	}
	*c = (struct cache_costs){s.kernel_ps, s.syscall_ps, s.fenced_ps, s.unfenced_ps, s.build, s.fenced_plan, ""};
	memcpy(c->clocksource, after, sizeof c->clocksource);
	return 0;
}

/* The musl build beside the glibc one, if there is one: its command (a musl program, to
 * run __shim-costs in) and its library, in DIR/musl/ or, in a build tree, ../build-musl/. */
static bool musl_build_beside(const char *library, char *program, char *musl_library, size_t size)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", library);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return false;
	*slash = '\0';
	const char *const beside[] = {"musl", "../build-musl"};
	for (int i = 0; i < 2; i++) {
		if (snprintf(program, size, "%s/%s/tscshim", dir, beside[i]) >= (int)size ||
		    snprintf(musl_library, size, "%s/%s/libtscshim.so", dir, beside[i]) >= (int)size)
			continue;
		if (access(program, X_OK) == 0 && access(musl_library, R_OK) == 0)
			return true;
	}
	return false;
}

int record_costs_measure(const char *record_path, struct cache_record *rec, char *why, size_t why_size)
{
	char self[PATH_MAX], library[PATH_MAX];
	if (this_build(self, library, sizeof self, why, why_size) != 0)
		return -1;
	struct cache_costs c;
	if (measure_build(self, library, record_path, &c, why, why_size) != 0)
		return -1;
	/* Each build the machine runs: the musl build's costs too, where it lies beside this
	 * one (a musl program's process then decides from the record, measuring nothing). */
	char program[PATH_MAX], musl_library[PATH_MAX], musl_why[256];
	struct cache_costs musl;
	if (musl_build_beside(library, program, musl_library, sizeof program) &&
	    measure_build(program, musl_library, record_path, &musl, musl_why, sizeof musl_why) == 0)
		cache_costs_keep(rec, &musl);
	cache_costs_keep(rec, &c);
	return 0;
}

void record_costs_describe(const struct cache_record *rec, const struct option_values *o, FILE *out)
{
	if (!rec->costs[0].build) {
		fprintf(out, "stored decision:     none (no costs in the record: each process measures them)\n");
		return;
	}
	for (int i = 0; i < CACHE_COSTS_MAX && rec->costs[i].build; i++) {
		const struct cache_costs *c = &rec->costs[i];
		bool fenced = o->num[OPT_FENCE] != 0;
		double kernel = c->kernel_ps / 1e3, counter = (fenced ? c->fenced_ps : c->unfenced_ps) / 1e3;
		unsigned min_gain = (unsigned)o->num[OPT_MIN_GAIN_PCT];
		bool pays = benefit_pays(kernel, counter, min_gain);
		char gain[48];
		benefit_gain_words(kernel, counter, gain, sizeof gain);
		fprintf(out,
			"stored decision:     %s: %s %.1f ns against the kernel's %.1f ns, %s "
			"(TSCSHIM_MIN_GAIN_PCT=%u), for build %" PRIu64 " under clocksource %s\n",
			pays ? "serve from the counter" : "pass through", fenced ? "fenced" : "unfenced", counter,
			kernel, gain, min_gain, c->build, c->clocksource[0] ? c->clocksource : "(unknown)");
	}
}
