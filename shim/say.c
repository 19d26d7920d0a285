/* The shim's one stderr line (shim/say.h), written with one write(2), async-signal-safe.
 * Owns the copy of stderr taken at load and the verbosity; what is said is its callers'. */
#include "say.h"
#include "load_page.h"

#include "raw_syscall.h"
#include "text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <stdarg.h>
#include <stdbool.h>
#include <unistd.h>

ON_LOAD_PAGE unsigned say_level;
ON_LOAD_PAGE int say_fd = STDERR_FILENO;
/* The copy of the stderr of load, and which file that was; -1 for none. */
static int stderr_kept = -1;
static struct stat stderr_at_load;

void say_keep_stderr(void)
{
	long fd = raw_syscall4(SYS_fcntl, STDERR_FILENO, F_DUPFD_CLOEXEC, 64, 0);
	if (fd >= 0 && raw_syscall4(SYS_fstat, fd, (long)&stderr_at_load, 0, 0) == 0)
		stderr_kept = (int)fd;
}

/* Whether fd is open on the file stderr was at load. */
static bool is_stderr_of_load(int fd)
{
	struct stat now;
	return raw_syscall4(SYS_fstat, fd, (long)&now, 0, 0) == 0 && now.st_dev == stderr_at_load.st_dev &&
	       now.st_ino == stderr_at_load.st_ino;
}

void say_at_exit(void)
{
	if (stderr_kept < 0 || is_stderr_of_load(STDERR_FILENO))
		return;
	/* The copy too may have been closed, or its number reused by the program: then the
	 * line is not written at all, rather than into one of the program's files. */
	say_fd = is_stderr_of_load(stderr_kept) ? stderr_kept : -1;
}

static void say_parts(char *line, size_t size, const char *first, va_list ap)
{
	struct text t = text_start(line, size - 1);
	text_add(&t, "tscshim: ");
	for (const char *part = first; part; part = va_arg(ap, const char *))
		text_add(&t, part);
	line[t.len++] = '\n';
	if (say_fd >= 0) {
		ssize_t written = write(say_fd, line, t.len);
		if (written < 0) {
			/* Nowhere left to say it: the line is lost, as stderr's would be. */
		}
	}
}

void say(const char *first, ...)
{
	char line[1024]; /* the verbose decision with every figure and a cache note */
	va_list ap;
	va_start(ap, first);
	say_parts(line, sizeof line, first, ap);
	va_end(ap);
}

void say_brief(const char *first, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, first);
	say_parts(line, sizeof line, first, ap);
	va_end(ap);
}
