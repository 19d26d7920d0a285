/* startup_rotation RUNS PROGRAM CASE... : start-up cost of several preloaded libraries in
 * one run, as ../shared/tools/startcost.c measures one. Each CASE is "LIBRARY[,VAR=VALUE...]";
 * the first is the reference (an empty object). Every round runs PROGRAM once per case, in
 * rotation; printed per case: the median over rounds of (case - reference) in microseconds,
 * its quartiles, and the mean minor page faults of the process (from wait4). PROGRAM's
 * standard output goes to /dev/null.
 * Used for the before/after figures of doc/BENEFIT.md; not run by make test (timings). Build:
 * cc -O2 -o build/test/startup_rotation test/startup_rotation.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CASES_MAX 16
#define VARS_MAX 15

static double now_us(void)
{
	struct timespec t;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t); /* past any preloaded clock */
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc - 3 > CASES_MAX) {
		fprintf(stderr, "usage: startup_rotation RUNS PROGRAM EMPTY.so[,VAR=V...] CASE...\n");
		return 2;
	}
	int rounds = atoi(argv[1]), cases = argc - 3;
	if (rounds < 3)
		rounds = 3;
	char *program = argv[2];
	char **env[CASES_MAX];
	double *took[CASES_MAX], faults[CASES_MAX] = {0};
	for (int c = 0; c < cases; c++) {
		env[c] = calloc(VARS_MAX + 2, sizeof(char *));
		took[c] = calloc((size_t)rounds, sizeof(double));
		char *spec = strdup(argv[3 + c]), *save = NULL;
		char *library = strtok_r(spec, ",", &save);
		if (!env[c] || !took[c] || !spec || !library)
			return 2;
		int k = 0;
		if (asprintf(&env[c][k++], "LD_PRELOAD=%s", library) < 0)
			return 2;
		for (char *var = strtok_r(NULL, ",", &save); var && k <= VARS_MAX; var = strtok_r(NULL, ",", &save))
			env[c][k++] = var;
	}
	char *args[] = {program, NULL};
	posix_spawn_file_actions_t quiet;
	if (posix_spawn_file_actions_init(&quiet) != 0 ||
	    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0) != 0)
		return 2;
	for (int r = -1; r < rounds; r++) { /* round -1 warms every case up */
		for (int c = 0; c < cases; c++) {
			pid_t pid;
			struct rusage use;
			int status;
			double began = now_us();
			if (posix_spawn(&pid, program, &quiet, NULL, args, env[c]) != 0 || wait4(pid, &status, 0, &use) < 0)
				return 1;
			if (r >= 0) {
				took[c][r] = now_us() - began;
				faults[c] += (double)use.ru_minflt;
			}
		}
	}
	for (int c = 1; c < cases; c++)
		for (int r = 0; r < rounds; r++)
			took[c][r] -= took[0][r];
	for (int c = 0; c < cases; c++) {
		qsort(took[c], (size_t)rounds, sizeof(double), by_value);
		printf("%-58s %s %8.1f us (quartiles %.1f, %.1f)  faults %.2f\n", argv[3 + c],
		       c ? "own" : "per run", took[c][rounds / 2], took[c][rounds / 4], took[c][3 * rounds / 4],
		       faults[c] / rounds);
	}
	return 0;
}
