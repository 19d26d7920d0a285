/* Preloaded into `tscshim ps` by bats/ps.bats, to have a process exit while ps reads it,
 * at a chosen point and with no timing: at ps's Nth read of the memory of process PID
 * (TSCTEST_EXIT_PID=PID, TSCTEST_EXIT_AT=N, default 1: the ELF header; later ones are
 * the block and what it points at), it kills that process and waits until the kernel
 * says it has exited (a pidfd becomes readable), then lets the read go on. The process
 * ps listed, and whose maps it read, is then gone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

typedef ssize_t pread_fn(int, void *, size_t, off_t);

/* Kills the process at the read the variables name, if fd is its memory. */
static void maybe_exit_it(int fd)
{
	static int reads;
	const char *pid = getenv("TSCTEST_EXIT_PID"), *at = getenv("TSCTEST_EXIT_AT");
	if (!pid)
		return;
	char link[64], want[64], target[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	snprintf(want, sizeof want, "/proc/%s/mem", pid);
	ssize_t len = readlink(link, target, sizeof target - 1);
	if (len < 0)
		return;
	target[len] = '\0';
	if (strcmp(target, want) != 0 || ++reads != (at ? atoi(at) : 1))
		return;
	int pidfd = (int)syscall(SYS_pidfd_open, atoi(pid), 0);
	if (kill(atoi(pid), SIGKILL) != 0 || pidfd < 0)
		abort(); /* the test's process was to be there */
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	if (poll(&p, 1, -1) != 1)
		abort();
	close(pidfd);
}

static ssize_t forward(const char *name, int fd, void *buf, size_t n, off_t offset)
{
	maybe_exit_it(fd);
	pread_fn *next = (pread_fn *)dlsym(RTLD_NEXT, name);
	return next(fd, buf, n, offset);
}

__attribute__((visibility("default"))) ssize_t pread(int fd, void *buf, size_t n, off_t offset)
{
	return forward("pread", fd, buf, n, offset);
}

/* glibc's other name of it (musl's headers make it a macro for pread). */
#ifndef pread64
__attribute__((visibility("default"))) ssize_t pread64(int fd, void *buf, size_t n, off_t offset)
{
	return forward("pread64", fd, buf, n, offset);
}
#endif
