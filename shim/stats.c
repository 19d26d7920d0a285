/* The per-process call counts and where the stats line goes (shim/stats.h). Owns the
 * counts; the line's text and its writing at exit are shim/status.c's. */
#include "stats.h"
#include "load_page.h"

#include "options.h"
#include "stats_path.h"
#include "tscshim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert((int)STAT_CLOCKS == (int)TSCSHIM_STAT_CLOCKS && (int)STAT_OTHER == (int)TSCSHIM_STAT_OTHER,
	       "the public status counts the stats line's slots, in its order");

struct stats_slot stats_slots[STATS_SLOTS];
static _Atomic uint32_t slots_taken;
__thread struct stats_slot *stats_my_slot __attribute__((tls_model("initial-exec")));
ON_LOAD_PAGE bool stats_enabled;

/* A thread's first count takes it a slot; past the last, all share it, atomically. */
void stats_count_slow(unsigned clock, bool served)
{
	struct stats_slot *s = stats_my_slot;
	if (!s) {
		uint32_t i = atomic_fetch_add_explicit(&slots_taken, 1, memory_order_relaxed);
		s = stats_my_slot = &stats_slots[i < STATS_SLOTS ? i : STATS_SLOTS - 1];
	}
	if (s == &stats_slots[STATS_SLOTS - 1])
		__atomic_fetch_add(&s->count[clock][served], 1, __ATOMIC_RELAXED);
	else
		s->count[clock][served]++;
}


void stats_totals(uint64_t total[STAT_CLOCKS][2])
{
	for (int c = 0; c < STAT_CLOCKS; c++)
		total[c][0] = total[c][1] = 0;
	for (int i = 0; i < STATS_SLOTS; i++)
		for (int c = 0; c < STAT_CLOCKS; c++)
			for (int s = 0; s < 2; s++)
				total[c][s] += __atomic_load_n(&stats_slots[i].count[c][s], __ATOMIC_RELAXED);
}

static char destination[OPTION_TEXT_MAX]; /* `stderr` or a path pattern (stats_path.h) */
static uint64_t write_failures;
static struct stat stderr_at_load;
static bool stderr_open_at_load;

uint64_t stats_write_failures(void)
{
	return __atomic_load_n(&write_failures, __ATOMIC_RELAXED);
}

/* fd 2 is the stderr this process had at load, not a descriptor reused since. */
static bool stderr_unchanged(void)
{
	struct stat now;
	return stderr_open_at_load && fstat(STDERR_FILENO, &now) == 0 &&
	       now.st_dev == stderr_at_load.st_dev && now.st_ino == stderr_at_load.st_ino;
}

static void report_failure(const char *what, int error)
{
	__atomic_fetch_add(&write_failures, 1, __ATOMIC_RELAXED);
	if (strcmp(destination, "stderr") == 0 || !stderr_unchanged())
		return;
	char line[OPTION_TEXT_MAX + PATH_MAX];
	int len = snprintf(line, sizeof line, "tscshim: TSCSHIM_STATS: %s: %s\n", what, strerror(error));
	if (len > (int)sizeof line - 1)
		len = (int)sizeof line - 1;
	ssize_t ignored = write(STDERR_FILENO, line, (size_t)len);
	(void)ignored;
}

/* Writes text where destination says, for this process. NULL, or what failed (errno set). */
static const char *write_line(const char *text, size_t len)
{
	static char path[PATH_MAX];
	if (strcmp(destination, "stderr") == 0) {
		/* Closed or replaced: the line would land in one of the program's own files. */
		if (!stderr_unchanged()) {
			errno = EBADF;
			return "stderr";
		}
		return write(STDERR_FILENO, text, len) == (ssize_t)len ? NULL : "stderr";
	}
	if (stats_path_expand(destination, (long)getpid(), path, sizeof path) != 0) {
		errno = ENAMETOOLONG;
		return destination;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return path;
	ssize_t n = write(fd, text, len);
	int error = n < 0 ? errno : ENOSPC;
	/* Where a file system reports a failed write only at close (NFS, a full quota), the
	 * line is lost all the same: counted as a failure. */
	if (close(fd) != 0 && n == (ssize_t)len) {
		n = -1;
		error = errno;
	}
	if (n == (ssize_t)len)
		return NULL;
	errno = error;
	return path;
}

void stats_write(const char *text, size_t len)
{
	const char *failed = write_line(text, len);
	if (failed)
		report_failure(failed, errno);
}

/* At load: whether the write at exit can be expected to succeed, as this process is now
 * (an existing file it may write, or a directory it may create files in). */
static bool destination_usable(void)
{
	/* Static: the constructor's stack is small, and this runs once, alone. */
	static char path[PATH_MAX];
	if (strcmp(destination, "stderr") == 0)
		return stderr_open_at_load;
	if (stats_path_expand(destination, (long)getpid(), path, sizeof path) != 0)
		return false;
	struct stat st;
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) &&
		       faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
	char *slash = strrchr(path, '/');
	if (slash == path)
		slash++;
	*slash = '\0';
	return faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) == 0;
}

void stats_setup(const char *where)
{
	if (!where[0])
		return;
	/* The option parser bounds the text to OPTION_TEXT_MAX, the size of destination, and
	 * checks the pattern. */
	memcpy(destination, where, strlen(where) + 1);
	stderr_open_at_load = fstat(STDERR_FILENO, &stderr_at_load) == 0;
	if (!destination_usable())
		write_failures = 1;
	stats_enabled = true;
}
