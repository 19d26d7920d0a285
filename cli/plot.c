/* Plots through gnuplot, when it is installed: the commands write their data and a script
 * into a temporary directory and run gnuplot on it. gnuplot is optional; without it the
 * commands say so in one line and print their tables as usual. */
#define _GNU_SOURCE
#include "plot.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What `command -v gnuplot` does: the first executable gnuplot on PATH. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	while (*path) {
		size_t len = strcspn(path, ":");
		char file[PATH_MAX];
		if (len > 0 && snprintf(file, sizeof file, "%.*s/%s", (int)len, path, name) < (int)sizeof file &&
		    access(file, X_OK) == 0)
			return true;
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}

bool plot_available(const char *command)
{
	if (on_path("gnuplot"))
		return true;
	fprintf(stderr, "tscshim %s: gnuplot not found on PATH, no plot written\n", command);
	return false;
}

const char *plot_terminal(const char *command, const char *file)
{
	size_t len = strlen(file);
	if (strpbrk(file, "'\n")) { /* it is quoted into the gnuplot script */
		fprintf(stderr, "tscshim %s: --plot: the file name must not contain a quote or newline\n", command);
		return NULL;
	}
	if (len > 4 && strcmp(file + len - 4, ".png") == 0)
		return "png";
	if (len > 4 && strcmp(file + len - 4, ".svg") == 0)
		return "svg";
	fprintf(stderr, "tscshim %s: --plot '%s': the file must end in .png or .svg\n", command, file);
	return NULL;
}

int plot_tempdir(char *dir, size_t size)
{
	const char *tmp = getenv("TMPDIR");
	if (snprintf(dir, size, "%s/tscshim-plot.XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)size)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

int plot_cleanup(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char file[PATH_MAX];
		snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
		unlink(file);
	}
	closedir(d);
	return rmdir(dir);
}

int plot_run(const char *command, const char *dir, const char *script)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, script);
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "tscshim %s: fork: %s\n", command, strerror(errno));
		return -1;
	}
	if (child == 0) {
		/* gnuplot's chatter must not mix into a --json document on stdout. */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execlp("gnuplot", "gnuplot", path, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "tscshim %s: gnuplot failed, no plot written\n", command);
		return -1;
	}
	return 0;
}

/* Selects the terminal inside the script: pngcairo where this gnuplot has it, else png. */
void plot_header(FILE *s, const char *terminal, const char *file, const char *title)
{
	if (strcmp(terminal, "svg") == 0)
		fprintf(s, "set terminal svg size 1000,650 dynamic\n");
	else
		fprintf(s, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) "
			   "{ set terminal pngcairo size 1000,650 } else { set terminal png size 1000,650 }\n");
	fprintf(s, "set output '%s'\nset title '%s' noenhanced\nset grid\nset key bottom right noenhanced\n",
		file, title);
}
