/* Re-executing tscshim as its own worker with the shim preloaded. */
#define _GNU_SOURCE
#include "bench.h"
#include "cli.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char library[PATH_MAX];

int bench_startup_with(const char *floor_path, int rounds)
{
	char beside[PATH_MAX];
	if (!floor_path) {
		snprintf(beside, sizeof beside, "%s", library);
		char *slash = strrchr(beside, '/');
		snprintf(slash ? slash + 1 : beside, sizeof beside - (size_t)(slash ? slash + 1 - beside : 0),
			 "libtscshim-floor.so");
		floor_path = beside;
	}
	return bench_startup(library, floor_path, rounds);
}

int bench_find_library(const char *explicit_path)
{
	return cli_find_library("bench", explicit_path, library, sizeof library);
}

/* The child's settings, in the child (one thread: setenv is safe there). */
static int set_child_environment(int child)
{
	if (cli_set_preload(library) != 0)
		return -1;
	switch (child) {
	case CHILD_PASSING:
		/* The benefit gate's pass-through: it measures, and no counter is 99% cheaper. */
		return unsetenv("TSCSHIM_SERVE") | setenv("TSCSHIM_MIN_GAIN_PCT", "99", 1);
	case CHILD_FENCED:
	case CHILD_UNFENCED:
		if (setenv("TSCSHIM_FENCE", child == CHILD_FENCED ? "1" : "0", 1) != 0)
			return -1;
		/* fall through */
	default:
		/* The counter path is what the shim rows measure: serving is forced unless the
		 * user chose otherwise; the verdict line says where it pays. */
		return setenv("TSCSHIM_SERVE", "always", 0);
	}
}

int bench_spawn_worker(char *const *args, int child_kind, FILE **out, int *pid)
{
	char self[PATH_MAX];
	if (!library[0] && bench_find_library(NULL) != 0)
		return -1;
	if (cli_self_path(self, sizeof self) != 0) {
		fprintf(stderr, "tscshim bench: cannot locate this executable\n");
		return -1;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		fprintf(stderr, "tscshim bench: pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "tscshim bench: fork: %s\n", strerror(errno));
		close(fds[0]), close(fds[1]);
		return -1;
	}
	if (child == 0) {
		dup2(fds[1], STDOUT_FILENO);
		if (set_child_environment(child_kind) != 0)
			_exit(126);
		char *argv[8] = {self, "__bench-worker"};
		for (int k = 0; k < 5 && args[k]; k++)
			argv[k + 2] = args[k];
		execv(self, argv);
		_exit(127);
	}
	close(fds[1]);
	*out = fdopen(fds[0], "r");
	if (!*out) {
		close(fds[0]);
		bench_wait_worker(child);
		return -1;
	}
	*pid = child;
	return 0;
}

int bench_wait_worker(int pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "tscshim bench: the worker failed (%s %d)\n",
		WIFEXITED(status) ? "exit status" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return -1;
}
