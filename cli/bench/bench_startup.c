/* tscshim bench --startup: what the shim costs a process that starts, over an empty
 * preloaded object (the dynamic loader's floor), for each place a verdict can come from,
 * with TSCSHIM_DISABLE=1, and for a program that never reads a clock against one that
 * reads one; then how many clock reads pay for one start at this host's measured gain.
 *
 * Every case runs once per round, in rotation, so that a change in the machine's load
 * hits them alike; each figure is the median over rounds of (case - floor) in that round.
 * Wall time is taken with the clock_gettime system call, which the shim cannot touch; the
 * children's page faults (wait4's rusage) are exact counts, repeatable on a noisy host. */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"
#include "samples.h"

#include "cache.h"
#include "options.h"
#include "kernel_clock.h"
#include "tscshim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

extern char **environ;

enum { MAX_ROUNDS = 2000, ENV_MAX = 256 };

struct start_case {
	const char *name;
	const char *program;   /* /bin/true: reads no clock; /bin/date: reads one */
	const char *preload;   /* the floor or the shim */
	const char *settings[4]; /* TSCSHIM_ settings, NULL-terminated */
	double wall_us[MAX_ROUNDS];
	double faults[MAX_ROUNDS];
	double floor_wall_us[MAX_ROUNDS]; /* the empty object's run of the same program, just before */
	double floor_faults[MAX_ROUNDS];
	bool skip;
};

static double median_of(double *v, int n)
{
	samples_sort(v, (size_t)n);
	return samples_median(v, (size_t)n);
}

/* env: `first` (NULL-terminated), then this process's environment without LD_PRELOAD
 * and the TSCSHIM_ settings. */
static void child_environment(char **env, const char *const *first)
{
	int k = 0;
	for (int i = 0; first[i]; i++)
		env[k++] = (char *)first[i];
	for (char **e = environ; *e && k < ENV_MAX - 1; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "TSCSHIM_", 8) != 0)
			env[k++] = *e;
	env[k] = NULL;
}

/* One start: wall time in us and minor faults, or -1 when it could not run or failed. */
static int run_once(const struct start_case *c, double *wall_us, double *faults)
{
	char *env[ENV_MAX];
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", c->preload);
	const char *first[6] = {preload};
	for (int i = 0; i < 4 && c->settings[i]; i++)
		first[i + 1] = c->settings[i];
	child_environment(env, first);
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)c->program, NULL};
	uint64_t began = kernel_clock_ns(CLOCK_MONOTONIC);
	pid_t pid;
	int rc = posix_spawn(&pid, c->program, &actions, NULL, argv, env);
	posix_spawn_file_actions_destroy(&actions);
	if (rc != 0)
		return -1;
	int status;
	struct rusage usage;
	while (wait4(pid, &status, 0, &usage) < 0)
		if (errno != EINTR)
			return -1;
	*wall_us = (kernel_clock_ns(CLOCK_MONOTONIC) - began) / 1e3;
	*faults = (double)usage.ru_minflt;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Where the record and the cache are made: $TMPDIR, else /tmp. */
static const char *temporary_directory(void)
{
	const char *tmp = getenv("TMPDIR");
	return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

/* The machine-wide record to measure against: as root, a fresh one written by
 * `tscshim calib --save` into a directory of our own; else the default one if present. */
static bool system_record(const char *library, char *path, size_t size, char *dir, size_t dir_size)
{
	if (geteuid() != 0) {
		const char *standard = "/run/tscshim/calibration";
		snprintf(path, size, "%s", standard);
		return access(standard, R_OK) == 0;
	}
	snprintf(dir, dir_size, "%s/tscshim-startup.XXXXXX", temporary_directory());
	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return false;
	if (snprintf(path, size, "%s/record", dir) >= (int)size)
		return false;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return false;
	self[len] = '\0';
	char setting[PATH_MAX + 32], library_setting[PATH_MAX + 32];
	snprintf(setting, sizeof setting, "TSCSHIM_SYSTEM_RECORD=%s", path);
	snprintf(library_setting, sizeof library_setting, "TSCSHIM_LIBRARY=%s", library);
	char *argv[] = {self, "calib", "--save", NULL};
	char *env[ENV_MAX];
	const char *first[] = {setting, library_setting, NULL};
	child_environment(env, first);
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int status = 1;
	if (posix_spawn(&pid, self, &actions, NULL, argv, env) == 0)
		waitpid(pid, &status, 0);
	posix_spawn_file_actions_destroy(&actions);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The per-call gain, from the first of the files the warm cases used that holds costs
 * (owned by the owner given): kernel less counter, in ns; 0 when none does. */
static double gain_ns(const char *const paths[], const uid_t owners[], const bool links[], int n, bool fenced)
{
	char buf[CACHE_MAX_SIZE + 1], err[SAFEFILE_PATH_MAX + 160];
	struct cache_file file;
	for (int i = 0; i < n; i++) {
		struct safefile_trust trust = {.owner = owners[i], .max_size = CACHE_MAX_SIZE, .link = links[i]};
		if (!paths[i] || cache_read(paths[i], &trust, buf, sizeof buf, &file, err, sizeof err) != CACHE_OK ||
		    !file.count || !file.record[0].costs[0].kernel_ps)
			continue;
		const struct cache_costs *c = &file.record[0].costs[0];
		return ((double)c->kernel_ps - (double)(fenced ? c->fenced_ps : c->unfenced_ps)) / 1e3;
	}
	return 0;
}

/* ---- the read that decides ---- */

enum { DUE_READS = 2000 };

/* Internal: `tscshim __due-read`, run under the shim by bench --startup. Reads
 * CLOCK_MONOTONIC DUE_READS times, each timed with rdtscp on both sides, and prints
 * "due EXTRA_US PLAIN_US OTHER_US FAULTS": the read TSCSHIM_DECIDE_AFTER names (1000 by
 * default) less the median of the others, that median, the dearest of the other reads less
 * it, in us (the counter's rate from the kernel's clock, through the system call, around
 * the whole run), and the page faults taken during the reads (getrusage). */
int command_due_read(void)
{
	static uint64_t took[DUE_READS];
	struct rusage u0, u1;
	const char *after = getenv("TSCSHIM_DECIDE_AFTER");
	long due = after ? atol(after) : 1000;
	if (due < 1 || due > DUE_READS)
		return 2;
	unsigned aux;
	for (int i = 0; i < DUE_READS; i++) /* the buffer's pages, before the count */
		took[i] = 0;
	/* The vDSO's pages, which a program's first read faults in with or without the shim,
	 * through a clock the shim does not serve (it counts no read). */
	struct timespec warm;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &warm);
	getrusage(RUSAGE_SELF, &u0);
	uint64_t k0 = kernel_clock_ns(CLOCK_MONOTONIC), t0 = __rdtscp(&aux);
	struct timespec ts;
	for (int i = 0; i < DUE_READS; i++) {
		uint64_t a = __rdtscp(&aux);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		took[i] = __rdtscp(&aux) - a;
	}
	uint64_t t1 = __rdtscp(&aux), k1 = kernel_clock_ns(CLOCK_MONOTONIC);
	getrusage(RUSAGE_SELF, &u1);
	double us_per_tick = (double)(k1 - k0) / 1e3 / (double)(t1 - t0);
	double at_due = (double)took[due - 1] * us_per_tick;
	uint64_t other = 0;
	for (long i = 0; i < DUE_READS; i++)
		other = i != due - 1 && took[i] > other ? took[i] : other;
	double rest[DUE_READS];
	int n = 0;
	for (int i = 0; i < DUE_READS; i++)
		if (i != due - 1)
			rest[n++] = (double)took[i] * us_per_tick;
	double plain = median_of(rest, n);
	printf("due %.3f %.4f %.3f %ld\n", at_due - plain, plain, (double)other * us_per_tick - plain,
	       (u1.ru_minflt - u0.ru_minflt) + (u1.ru_majflt - u0.ru_majflt));
	return 0;
}

/* "clocksource tsc, a system call 95 ns": the host's kind, as the figures depend on it (the
 * clocksource from /sys; the clock_gettime system call's cost, the cheapest of 64). */
static const char *host_words(void)
{
	static char words[128];
	char source[64] = "?";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (!fgets(source, sizeof source, f))
			snprintf(source, sizeof source, "?");
		source[strcspn(source, "\n")] = '\0';
		fclose(f);
	}
	uint64_t best = UINT64_MAX;
	unsigned aux;
	struct timespec ts;
	for (int i = 0; i < 64; i++) {
		uint64_t t0 = __rdtscp(&aux);
		int rc = kernel_clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t t = __rdtscp(&aux) - t0;
		if (rc == 0 && t < best)
			best = t;
	}
	/* Ticks to ns with a rate taken around a short sleep. */
	uint64_t k0 = kernel_clock_ns(CLOCK_MONOTONIC), t0 = __rdtscp(&aux);
	struct timespec nap = {0, 5000000};
	nanosleep(&nap, NULL);
	uint64_t t1 = __rdtscp(&aux), k1 = kernel_clock_ns(CLOCK_MONOTONIC);
	if (best == UINT64_MAX || k0 == 0 || k1 <= k0 || t1 <= t0) {
		snprintf(words, sizeof words, "clocksource %s, a system call: not measured (clock_gettime failed)", source);
		return words;
	}
	double ns_per_tick = (double)(k1 - k0) / (double)(t1 - t0);
	snprintf(words, sizeof words, "clocksource %s, a system call %.0f ns", source, (double)best * ns_per_tick);
	return words;
}

/* One `__due-read` process under the shim with `settings`: its extra us at the due read,
 * or -1, in *other the dearest of its other reads, in *faults the page faults of its reads. */
static double due_read_once(const char *self, const char *library, const char *const *settings, double *other,
			    double *faults)
{
	char *env[ENV_MAX];
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", library);
	const char *first[6] = {preload};
	for (int i = 0; i < 4 && settings[i]; i++)
		first[i + 1] = settings[i];
	child_environment(env, first);
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&actions, fds[0]);
	char *argv[] = {(char *)self, "__due-read", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, self, &actions, NULL, argv, env);
	posix_spawn_file_actions_destroy(&actions);
	close(fds[1]);
	char line[128] = "";
	ssize_t got = rc == 0 ? read(fds[0], line, sizeof line - 1) : -1;
	close(fds[0]);
	if (rc == 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	line[got > 0 ? got : 0] = '\0';
	double extra, plain;
	return sscanf(line, "due %lf %lf %lf %lf", &extra, &plain, other, faults) == 4 ? extra : -1;
}

/* The read that decides (the thousandth, as a program with no variable meets it), from
 * the machine-wide record and from the per-user cache: median and worst over
 * `processes` processes, each that read less the median plain read of its own run. */
static void bench_due_read(const char *library, const char *record_setting, bool have_record,
			   const char *runtime_setting, int processes)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return;
	self[len] = '\0';
	const char *record[] = {record_setting, "TSCSHIM_CACHE=off", NULL};
	const char *cache[] = {runtime_setting, NULL};
	const struct {
		const char *name;
		const char *const *settings;
		bool skip;
	} rows[] = {{"machine-wide record, the read that decides", record, !have_record},
		    {"per-user cache, the read that decides", cache, false}};
	static double extra[MAX_ROUNDS], other[MAX_ROUNDS], faults[MAX_ROUNDS];
	printf("the read that decides (read 1000 of %d, less the median read), the dearest other read (the\n"
	       "same), and the page faults during all the reads (%d processes; %s):\n",
	       DUE_READS, processes, host_words());
	printf("%-44s %10s %10s %12s %12s %7s %7s\n", "case", "median us", "worst us", "other: med", "other: worst",
	       "faults", "failed");
	for (int r = 0; r < 2; r++) {
		if (rows[r].skip)
			continue;
		double ignored, ignored_faults;
		due_read_once(self, library, rows[r].settings, &ignored, &ignored_faults); /* a cold start writes the cache */
		int n = 0, failed = 0;
		for (int i = 0; i < processes; i++) {
			double x = due_read_once(self, library, rows[r].settings, &other[n], &faults[n]);
			if (x < 0)
				failed++;
			else
				extra[n++] = x;
		}
		if (n == 0) {
			printf("%-44s %10s %10s %12s %12s %7s %7d\n", rows[r].name, "-", "-", "-", "-", "-", failed);
			continue;
		}
		double median = median_of(extra, n), other_median = median_of(other, n); /* sorted now */
		printf("%-44s %10.1f %10.1f %12.1f %12.1f %7.0f %7d\n", rows[r].name, median, extra[n - 1], other_median,
		       other[n - 1], median_of(faults, n), failed);
	}
}

/* Per record kind: a program that reads no clock, one that reads one (below the read
 * count at which the shim decides: the default start), and the same read with
 * TSCSHIM_DECIDE_AFTER=1 (what a decision costs). */
static struct start_case cases[] = {
	{.name = "floor, no clock read", .program = "/bin/true"},
	{.name = "floor, one clock read", .program = "/bin/date"},
	{.name = "machine-wide record, no clock read", .program = "/bin/true"},
	{.name = "machine-wide record, one clock read", .program = "/bin/date"},
	{.name = "machine-wide record, deciding at it", .program = "/bin/date"},
	{.name = "no variable, no clock read", .program = "/bin/true"},
	{.name = "no variable, one clock read", .program = "/bin/date"},
	{.name = "no variable, deciding at it", .program = "/bin/date"},
	{.name = "TSCSHIM_DISABLE=1, no clock read", .program = "/bin/true"},
	{.name = "TSCSHIM_DISABLE=1, one clock read", .program = "/bin/date"},
};
enum { CASES = sizeof cases / sizeof cases[0], RECORD = 2, CACHE = 5, DISABLED = 8 };

/* What each case preloads and sets. */
static void set_up_cases(const char *library, const char *floor_path, const char *record_setting,
			 const char *runtime_setting, bool have_record)
{
	const char *with_record[] = {record_setting, "TSCSHIM_CACHE=off", NULL, NULL};
	const char *with_cache[] = {runtime_setting, NULL, NULL, NULL};
	const char *disabled[] = {"TSCSHIM_DISABLE=1", NULL};
	for (int i = 0; i < CASES; i++)
		cases[i].preload = i < RECORD ? floor_path : library;
	for (int k = 0; k < 3; k++) {
		memcpy(cases[RECORD + k].settings, with_record, sizeof with_record);
		memcpy(cases[CACHE + k].settings, with_cache, sizeof with_cache);
		cases[RECORD + k].skip = !have_record;
	}
	cases[RECORD + 2].settings[2] = "TSCSHIM_DECIDE_AFTER=1";
	cases[CACHE + 2].settings[1] = "TSCSHIM_DECIDE_AFTER=1";
	for (int i = DISABLED; i < DISABLED + 2; i++)
		memcpy(cases[i].settings, disabled, sizeof disabled);
}

/* The cache warmed (a cold start writes it) and everything in the page cache, then every
 * case (from the third: the first two are the empty object's) right after the empty
 * object's run of the same program: what a process leaves behind as it exits (pages to
 * free, deferred work) falls on the pair alike. 0, or -1 after one line. */
static int run_rounds(struct start_case *cases, int count, int rounds)
{
	double w, f;
	for (int i = 0; i < count; i++)
		if (!cases[i].skip && run_once(&cases[i], &w, &f) != 0) {
			fprintf(stderr, "tscshim bench: --startup: %s (%s) failed to run\n", cases[i].name,
				cases[i].program);
			return -1;
		}
	for (int r = 0; r < rounds; r++)
		for (int i = 2; i < count; i++) {
			struct start_case *c = &cases[i];
			if (c->skip)
				continue;
			struct start_case *floor = &cases[strcmp(c->program, cases[0].program) == 0 ? 0 : 1];
			if (run_once(floor, &c->floor_wall_us[r], &c->floor_faults[r]) != 0 ||
			    run_once(c, &c->wall_us[r], &c->faults[r]) != 0) {
				fprintf(stderr, "tscshim bench: --startup: %s failed in round %d\n", c->name, r);
				return -1;
			}
			floor->wall_us[r] = c->floor_wall_us[r];
		}
	return 0;
}

/* Each case's own cost over the empty object and its extra page faults (medians); the
 * own costs into median_own[]. */
static void print_own_costs(struct start_case *cases, int count, int rounds, double *median_own)
{
	printf("%-40s %12s %14s\n", "case", "own cost us", "page faults");
	for (int i = 2; i < count; i++) {
		if (cases[i].skip) {
			printf("%-40s %12s %14s\n", cases[i].name, "-", "-");
			continue;
		}
		static double own[MAX_ROUNDS], extra[MAX_ROUNDS];
		for (int r = 0; r < rounds; r++) {
			own[r] = cases[i].wall_us[r] - cases[i].floor_wall_us[r];
			extra[r] = cases[i].faults[r] - cases[i].floor_faults[r];
		}
		median_own[i] = median_of(own, rounds);
		printf("%-40s %12.1f %+14.0f\n", cases[i].name, median_own[i], median_of(extra, rounds));
	}
}

/* How many reads at this host's gain pay for one decision, fenced and unfenced. */
static void print_break_even(double decision_us, double fenced, double unfenced)
{
	if (fenced > 0)
		printf("break-even: %.0f clock reads (fenced, %.1f ns gained each) pay for one decision with no variable set\n"
		       "(%.1f us: deciding at a read less that read without deciding)\n",
		       decision_us * 1e3 / fenced, fenced, decision_us);
	else
		printf("break-even: never fenced: the counter is not cheaper than the kernel's clock here (%.1f ns)\n", fenced);
	if (unfenced > 0)
		printf("break-even: %.0f clock reads unfenced (%.1f ns gained each)\n", decision_us * 1e3 / unfenced,
		       unfenced);
	else
		printf("break-even: never unfenced (%.1f ns)\n", unfenced);
}

int bench_startup(const char *library, const char *floor_path, int rounds)
{
	if (access(floor_path, R_OK) != 0) {
		fprintf(stderr, "tscshim bench: --startup: no empty object to preload at %s (give --floor PATH)\n",
			floor_path);
		return EXIT_USAGE;
	}
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	char cache_dir[PATH_MAX - 64];
	snprintf(cache_dir, sizeof cache_dir, "%s/tscshim-startup-cache.XXXXXX", temporary_directory());
	if (!mkdtemp(cache_dir)) {
		fprintf(stderr, "tscshim bench: --startup: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	/* The per-user cases set no TSCSHIM_ variable, as a machine-wide install runs: the
	 * cache is the default one in a runtime directory of our own. */
	char cache[PATH_MAX], runtime_setting[PATH_MAX + 32], record[PATH_MAX], record_dir[PATH_MAX] = "";
	char record_setting[PATH_MAX + 32];
	snprintf(cache, sizeof cache, "%s/tscshim.cache", cache_dir);
	snprintf(runtime_setting, sizeof runtime_setting, "XDG_RUNTIME_DIR=%s", cache_dir);
	bool default_record = access(OPTION_SYSTEM_RECORD_DEFAULT, F_OK) == 0;
	bool have_record = system_record(library, record, sizeof record, record_dir, sizeof record_dir);
	snprintf(record_setting, sizeof record_setting, "TSCSHIM_SYSTEM_RECORD=%s", record);

	set_up_cases(library, floor_path, record_setting, runtime_setting, have_record);
	if (run_rounds(cases, CASES, rounds) != 0)
		return EXIT_USAGE;

	printf("start-up: %d rounds, each case right after the empty object (%s) runs the same program;\n"
	       "own cost = case - empty, median over rounds; \"machine-wide record\": one written for the run and named\n"
	       "by TSCSHIM_SYSTEM_RECORD; \"no variable\": %s\n",
	       rounds, floor_path,
	       default_record ? "the default paths, where " OPTION_SYSTEM_RECORD_DEFAULT " answers"
			      : "the default per-user cache, in an XDG_RUNTIME_DIR of the run's");
	double median_own[CASES] = {0};
	print_own_costs(cases, CASES, rounds, median_own);
	/* What deciding adds to a start that reads the clock once: the decision's own cost. */
	double decision_us = median_own[CACHE + 2] - median_own[CACHE + 1];
	if (!have_record)
		printf("(no machine-wide record: run as root, or `sudo tscshim calib --save` first)\n");
	/* The no-variable cases' own file first: the per-user cache, else the default record. */
	const char *costs_from[] = {cache, OPTION_SYSTEM_RECORD_DEFAULT, have_record ? record : NULL};
	const uid_t owners[] = {geteuid(), 0, 0};
	const bool links[] = {false, true, true}; /* the machine-wide record is a link's target */
	double fenced = gain_ns(costs_from, owners, links, 3, true), unfenced = gain_ns(costs_from, owners, links, 3, false);
	printf("floor itself: %.1f us per /bin/true, %.1f us per /bin/date (median)\n",
	       median_of(cases[0].wall_us, rounds), median_of(cases[1].wall_us, rounds));
	print_break_even(decision_us, fenced, unfenced);
	printf("\"one clock read\": below the read at which a process decides (TSCSHIM_DECIDE_AFTER=%s, the default),\n"
	       "so it never pays for a decision; \"deciding at it\": TSCSHIM_DECIDE_AFTER=1\n",
	       option_table[OPT_DECIDE_AFTER].default_text);
	bench_due_read(library, record_setting, have_record, runtime_setting, rounds);
	unlink(cache);
	char lock[PATH_MAX + 8];
	snprintf(lock, sizeof lock, "%s.lock", cache);
	unlink(lock);
	char beside[PATH_MAX + 8]; /* the shim keeps a copy of its records there (shim/record.h) */
	if (cache_format_sibling(cache, beside, sizeof beside) == 0 && unlink(beside) != 0 && errno != ENOENT)
		fprintf(stderr, "tscshim bench: cannot remove %s: %s\n", beside, strerror(errno));
	rmdir(cache_dir);
	if (record_dir[0]) {
		unlink(record);
		rmdir(record_dir);
	}
	return 0;
}
