/* The benefit gate's costs for the machine-wide record, and the decision they make.
 *
 * `tscshim calib --save` writes the record, then runs itself as `__shim-costs` with the
 * shim preloaded and TSCSHIM_SYSTEM_RECORD naming that record: the shim in that child
 * decides from it, measures the costs as every process would (its own hot path, this
 * host's kernel clock) and reports them, with its build-id, through tscshim_status_v2.
 * The record then carries them, and every process of that build reuses them instead of
 * measuring: one boot and one build give one decision. The musl build's, too, where it
 * lies beside this one: a record keeps the costs of two builds. */
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
 * "costs SOURCE FROM_RECORD KERNEL SYSCALL FENCED UNFENCED BUILD". */
int command_shim_costs(void)
{
	typedef int status_fn(struct tscshim_status *, size_t);
	status_fn *status = (status_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_v2");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (!status || status(&s, sizeof s) < TSCSHIM_STATUS_VERSION) {
		puts("costs none");
		return 1;
	}
	printf("costs %d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s.source,
	       s.costs_from_record, s.cost_kernel_ps, s.cost_syscall_ps, s.cost_fenced_ps,
	       s.cost_unfenced_ps, s.cost_build);
	return 0;
}

/* The child's environment: ours without LD_PRELOAD and the shim's settings (TSCSHIM_TEST_
 * hooks excepted), then the record to decide from and no per-user cache. */
static char **child_environment(const char *library, const char *record, char *preload,
				size_t preload_size, char *record_setting, size_t record_size)
{
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **env = calloc(n + 4, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
		    (strncmp(*e, "TSCSHIM_", 8) != 0 || strncmp(*e, "TSCSHIM_TEST_", 13) == 0))
			env[k++] = *e;
	snprintf(preload, preload_size, "LD_PRELOAD=%s", library);
	snprintf(record_setting, record_size, "TSCSHIM_SYSTEM_RECORD=%s", record);
	env[k++] = preload;
	env[k++] = record_setting;
	env[k++] = "TSCSHIM_CACHE=off";
	env[k] = NULL;
	return env;
}

/* One build's costs: `program __shim-costs` with `library` preloaded, deciding from the
 * record at record_path. Returns 0 with *c, or -1 with why. */
static int measure_build(const char *program, const char *library, const char *record_path, struct cache_costs *c,
			 char *why, size_t why_size)
{
	char preload[PATH_MAX + 16], record_setting[PATH_MAX + 32];
	char **env = child_environment(library, record_path, preload, sizeof preload, record_setting,
				       sizeof record_setting);
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
	int source, from_record;
	uint64_t k, s, f, u, build;
	if (rc != 0 || sscanf(line, "costs %d %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &source,
			      &from_record, &k, &s, &f, &u, &build) != 7) {
		snprintf(why, why_size, "the shim in the measuring process answered nothing");
		return -1;
	}
	if (source != TSCSHIM_SOURCE_SYSTEM_RECORD || !k || !s || !f || !u || !build) {
		snprintf(why, why_size, "the shim did not decide from the record (%s)",
			 source == TSCSHIM_SOURCE_NONE ? "it refused early or passes through"
						       : "it does not trust it: written by root, in a directory only root may write?");
		return -1;
	}
	*c = (struct cache_costs){k, s, f, u, build};
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
	char library[PATH_MAX], self[PATH_MAX];
	if (cli_find_library("calib", NULL, library, sizeof library) != 0) {
		snprintf(why, why_size, "the shim library was not found");
		return -1;
	}
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0) {
		snprintf(why, why_size, "/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	self[len] = '\0';
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
		fprintf(out,
			"stored decision:     %s: %s %.1f ns against the kernel's %.1f ns, %.1f%% cheaper "
			"(TSCSHIM_MIN_GAIN_PCT=%u), for build %" PRIu64 "\n",
			pays ? "serve from the counter" : "pass through", fenced ? "fenced" : "unfenced", counter,
			kernel, 100.0 * (kernel - counter) / kernel, min_gain, c->build);
	}
}
