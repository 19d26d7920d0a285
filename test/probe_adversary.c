/* probe_adversary: hostile or unusual hosts for the decision in one read (bats/adversary.bats).
 *
 *   probe_adversary wait-go DIR READS BOUND_NS
 *       Loaded, writes DIR/loaded and reads no clock until DIR/go exists (at most 20 s),
 *       so that a test can change the records between the load's checks and the read
 *       that decides; then READS checked reads, and one line with the shim's status.
 *   probe_adversary vfork-decider-killed BOUND_NS
 *       A single-threaded process (glibc says so: __libc_single_threaded) whose vfork
 *       child makes the first read of a served clock, and so decides in the parent's
 *       address space, and is killed (a seccomp filter of its own, at its first openat:
 *       the record's read) mid-decision. The parent then reads 100,000 times and asks
 *       the status: the line says whether the process ever gave the dead decider up.
 *   probe_adversary status-in-malloc BOUND_NS
 *       The status query, documented async-signal-safe, made from a SIGSYS handler that
 *       interrupted malloc while it held its arena's lock (a seccomp filter traps brk:
 *       the handler runs inside malloc's sysmalloc, deterministically). Where the query
 *       forces a decision that measures (a record that passed the load but fails at the
 *       read), the estimator's fork() takes malloc's locks: the test runs it under a
 *       timeout. status-in-malloc-threads: the same with a second thread (idle): glibc's
 *       fork() takes malloc's locks only where other threads exist.
 *
 * Each value is bracketed by two reads of the kernel's CLOCK_MONOTONIC through the system
 * call. Exit 1 on any value outside its bracket, 2 on a set-up failure. */
#define _GNU_SOURCE
#include "checked_read.h"
#include "kernel_ns.h"

#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#if __has_include(<linux/audit.h>)
#define HAVE_SECCOMP_HEADERS 1
#include "seccomp_one_call.h"
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>


typedef int status_fn(struct tscshim_status *, size_t);
static status_fn *status_query;

static void shim_status(struct tscshim_status *st)
{
	memset(st, 0, sizeof *st);
	if (status_query)
		status_query(st, sizeof *st);
}

static void print_status(const char *what)
{
	struct tscshim_status st;
	shim_status(&st);
	printf("%s: decided=%d active=%d source=%d from_cache=%d reason=%s\n", what, st.decided, st.active, st.source,
	       st.from_cache, st.reason);
}


/* ---- wait-go ---- */

static int wait_go(const char *dir, long reads)
{
	char loaded[4096], go[4096];
	snprintf(loaded, sizeof loaded, "%s/loaded", dir);
	snprintf(go, sizeof go, "%s/go", dir);
	FILE *f = fopen(loaded, "w");
	if (!f)
		return 2;
	fclose(f);
	struct stat st;
	int waited = 0;
	while (stat(go, &st) != 0) {
		if (++waited > 20000)
			return 2;
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	for (long i = 0; i < reads; i++)
		checked_read();
	print_status("wait-go");
	return report("wait-go");
}

/* ---- a vfork child killed while it decides ---- */

static int vfork_decider_killed(void)
{
#ifndef HAVE_SECCOMP_HEADERS
	return 2;
#else
#ifdef __GLIBC__
	extern char __libc_single_threaded;
	printf("vfork-decider-killed: single_threaded=%d\n", (int)__libc_single_threaded);
#endif
	fflush(stdout);
	pid_t child = vfork();
	if (child == 0) {
		if (seccomp_one_call(__NR_openat, SECCOMP_RET_KILL_THREAD) != 0)
			_exit(2);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts); /* due: this child decides, and dies at the record */
		_exit(0);
	}
	int status = 0;
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 2;
	printf("vfork-decider-killed: child %s %d\n", WIFSIGNALED(status) ? "killed by signal" : "exited",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	if (!WIFSIGNALED(status))
		return 2; /* it never decided: nothing to test */
	for (int i = 0; i < 100000; i++)
		checked_read();
	print_status("vfork-decider-killed");
	return report("vfork-decider-killed");
#endif
}

/* ---- the status query in a handler that interrupted malloc ---- */

#ifdef HAVE_SECCOMP_HEADERS
static volatile sig_atomic_t trapped;

static void on_sigsys(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)info;
	/* brk refused: the kernel's brk answers a refusal with a break below the one asked for
	 * (glibc's wrapper reads it as the new break, and fails where it is lower; -ENOMEM
	 * would read as a break far above, and sysmalloc would use it), so 0; malloc then falls
	 * back to mmap, and goes on. */
	ucontext_t *uc = ctx;
	uc->uc_mcontext.gregs[REG_RAX] = 0;
	if (trapped++)
		return;
	static const char msg[] = "status-in-malloc: in the handler, inside malloc; asking the status\n";
	if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
		trapped += 0;
	struct tscshim_status st;
	shim_status(&st); /* async-signal-safe, says tscshim.h */
}
#endif

static __attribute__((unused)) void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static int status_in_malloc(bool threads)
{
#ifndef HAVE_SECCOMP_HEADERS
	(void)threads;
	return 2;
#else
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_t t;
	if (threads && pthread_create(&t, NULL, idle, NULL) != 0) /* a thread: glibc's fork takes malloc's locks */
		return 2;
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	sigaction(SIGSYS, &sa, NULL);
	if (seccomp_one_call(__NR_brk, SECCOMP_RET_TRAP) != 0)
		return 2;
	void *keep[64];
	int n = 0;
	for (; n < 64 && !trapped; n++)
		keep[n] = malloc(60 * 1024); /* below the mmap threshold: the arena grows by brk */
	for (int i = 0; i < n; i++)
		free(keep[i]);
	if (!trapped)
		return 2;
	for (int i = 0; i < 1000; i++)
		checked_read();
	print_status("status-in-malloc");
	return report("status-in-malloc");
#endif
}

int main(int argc, char **argv)
{
	status_query = (status_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_v2");
	if (argc == 5 && strcmp(argv[1], "wait-go") == 0) {
		bound_ns = atoll(argv[4]);
		return wait_go(argv[2], atol(argv[3]));
	}
	if (argc != 3)
		return 2;
	bound_ns = atoll(argv[2]);
	if (strcmp(argv[1], "vfork-decider-killed") == 0)
		return vfork_decider_killed();
	if (strcmp(argv[1], "status-in-malloc") == 0)
		return status_in_malloc(false);
	if (strcmp(argv[1], "status-in-malloc-threads") == 0)
		return status_in_malloc(true);
	return 2;
}
