/* The decision at the first read, as hostile hosts make that read.
 *   probe_lazy none                     reads no clock at all (the stats line and the
 *                                       verbose line say whether anything was decided)
 *   probe_lazy handler BOUND_NS         the first clock read of the process is in a
 *                                       signal handler; it and 1000 reads after it must
 *                                       lie within BOUND_NS of the kernel's clock
 *   probe_lazy threads BOUND_NS         two threads make the first read at once, then
 *                                       read 100000 times each, every value within
 *                                       BOUND_NS of the kernel's clock
 *   probe_lazy claim-mask BOUND_NS      (the hooks build preloaded) the first read, whose
 *                                       decision publishes the first line: at every slot
 *                                       claim, every signal that can be blocked must be;
 *                                       exit 3 if no claim was seen (nothing published)
 *   probe_lazy claim-mask-atfork BOUND_NS  the same where the decision measures (an
 *                                       unusable cache; a status query decides, as a
 *                                       read never measures): the program's pthread_atfork
 *                                       handlers, which the estimator's fork runs on the
 *                                       deciding thread, unblock SIGUSR1 and restore the
 *                                       mask through glibc (which unblocks SIGCANCEL)
 *   probe_lazy fork-mid-decision BOUND_NS  (the hooks build) a thread's first read is
 *                                       held at its decision's first claim while another
 *                                       thread forks: the child (whose fork-wiped page,
 *                                       the decision's scratch with it, the kernel zeroed)
 *                                       decides for itself; both read 1000 times within
 *                                       BOUND_NS; exit 3 if the hold was never reached
 *   probe_lazy fork-mid-status BOUND_NS (the hooks build) a thread's status query, which
 *                                       decides at once, is held at its first claim while
 *                                       the main thread forks; the child reads 3 times
 *                                       (with TSCSHIM_DECIDE_AFTER above 3 it must not
 *                                       decide: its stats line says); exit 3 if the hold
 *                                       was never reached
 *   probe_lazy altstack SIZE BOUND_NS   the read the decision is due at comes in a signal
 *                                       handler running on an alternate stack of SIZE
 *                                       bytes; then 1000 reads (exit 0: it did not crash);
 *                                       prints how many bytes of it were used (painted)
 *   probe_lazy kill-decider BOUND_NS    a thread whose seccomp filter kills it at
 *                                       openat (the decision's record read, with the claim
 *                                       held) makes the due read and dies; the main thread then reads
 *                                       100000 times and prints "decided=D reason=..."
 *   probe_lazy fork-storm BOUND_NS      a thread makes the due read (and 1000 after it)
 *                                       while the main thread forks 8 children, 300 us
 *                                       apart from when it begins; each child reads 20000 times, within
 *                                       BOUND_NS, and exits (its stats line is written)
 *   probe_lazy vm-mid-decision vfork|clone BOUND_NS  (the hooks build) a thread's
 *                                       decision is held at its first claim while a vfork
 *                                       or clone(CLONE_VM) child, sharing the memory,
 *                                       reads 1000 times: it must not decide (exit 3 if
 *                                       the hold was never reached)
 *   probe_lazy jump-out BOUND_NS        40 reads under a 50 us interval timer whose handler
 *                                       siglongjmps out of any read it interrupts (the
 *                                       reads that prepare and make the decision among
 *                                       them), then 100000 checked reads; prints
 *                                       "jump-out: jumps=J decided=D": the decision must
 *                                       still be made (no claim left held)
 *   probe_lazy fork-between-parts BOUND_NS  PROBE_READS_FIRST reads (some of which run
 *                                       parts of the decision), then a fork: the child
 *                                       (its fork-wiped count of parts zeroed) and the
 *                                       parent each read 1000 times within BOUND_NS
 * With PROBE_READS_FIRST=N in the environment, handler and threads make N checked reads
 * on the main thread first (below TSCSHIM_DECIDE_AFTER they pass through), so that the
 * read the decision is due at comes in the handler or from the two threads.
 * Each value is bracketed by two reads of the kernel's CLOCK_MONOTONIC through the
 * system call, which no preload reaches. Exit 1 on any value outside its bracket. */
#define _GNU_SOURCE
#include "checked_read.h"
#include "kernel_ns.h"

#include "test_points.h"
#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#if __has_include(<linux/audit.h>) /* not in musl-gcc's headers: kill-decider is glibc's */
#define HAVE_SECCOMP_HEADERS 1
#include "seccomp_one_call.h"
#endif
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


/* PROBE_READS_FIRST's reads, on the calling thread. */
static void reads_first(void)
{
	const char *n = getenv("PROBE_READS_FIRST");
	for (long i = n ? atol(n) : 0; i > 0; i--)
		checked_read();
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	checked_read(); /* the read the decision is due at: it runs here */
	handled = 1;
}

static pthread_barrier_t start;

static void *reader(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < 100000; i++)
		checked_read();
	return NULL;
}

/* At a writer's claim: the thread's signal mask, read with the system call (glibc's
 * wrapper hides SIGCANCEL and SIGSETXID). */
static _Atomic int claims, claims_unblocked;

static void claim_hook(int point)
{
	if (point != TEST_POINT_CLAIMED)
		return;
	uint64_t mask = 0;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof mask);
	uint64_t unblockable = 1ull << (SIGKILL - 1) | 1ull << (SIGSTOP - 1);
	atomic_fetch_add(&claims, 1);
	if ((mask | unblockable) != ~0ull)
		atomic_fetch_add(&claims_unblocked, 1);
}

/* An absolute CLOCK_REALTIME deadline s seconds ahead, through the system call: a served
 * read here would be a first read of its own, and could make this thread the decider. */
static const struct timespec *deadline(int s)
{
	static __thread struct timespec at;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &at);
	at.tv_sec += s;
	return &at;
}

/* Holds the first claim (the decider's first publication) until the fork is made. */
static sem_t at_claim, forked;
static _Atomic int held;

static void hold_hook(int point)
{
	if (point != TEST_POINT_CLAIMED || atomic_exchange(&held, 1))
		return;
	sem_post(&at_claim);
	sem_timedwait(&forked, deadline(10));
}

static void *status_asker(void *arg)
{
	(void)arg;
	int (*fn)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	struct tscshim_status s;
	if (fn)
		fn(&s);
	return NULL;
}

static void *first_reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		checked_read();
	return NULL;
}

/* A host's fork handlers that leave the mask other than they found it. */
static sigset_t mask_before_fork;

static void before_fork(void)
{
	pthread_sigmask(SIG_BLOCK, NULL, &mask_before_fork);
}

static void after_fork_in_parent(void)
{
	pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
}

/* The shim's status (all zero without the shim): a query that decides at once where the
 * claim is free, and finds it held (decided=0) where a decision is stuck. */
static void shim_status(struct tscshim_status *st)
{
	typedef int status_fn(struct tscshim_status *, size_t);
	status_fn *fn = (status_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_v2");
	memset(st, 0, sizeof *st);
	if (fn)
		fn(st, sizeof *st);
}


/* A thread runs `holder` (whose decision is held at its first claim); meanwhile the main
 * thread forks a child that makes child_reads checked reads, then both report as
 * "<name> child" and "<name> parent". Exit 3 if the hold was never reached. */
/* The test hook set to hold the claim, and a thread started on holder that reaches it:
 * 0 once it holds it, 2 without the test build, 3 if it never got there. */
static int start_holding(void *(*holder)(void *), pthread_t *t)
{
	void (**slot)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
	if (!slot)
		return 2;
	sem_init(&at_claim, 0, 0);
	sem_init(&forked, 0, 0);
	*slot = hold_hook;
	pthread_create(t, NULL, holder, NULL);
	return sem_timedwait(&at_claim, deadline(10)) == 0 ? 0 : 3;
}

static int fork_while_held(void *(*holder)(void *), int child_reads, const char *name)
{
	pthread_t t;
	int held = start_holding(holder, &t);
	if (held != 0)
		return held;
	char what[64];
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < child_reads; i++)
			checked_read();
		snprintf(what, sizeof what, "%s child", name);
		exit(report(what)); /* exit: the stats line is written */
	}
	sem_post(&forked);
	pthread_join(t, NULL);
	int status = 0;
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 2;
	snprintf(what, sizeof what, "%s parent", name);
	return report(what) || WEXITSTATUS(status);
}

/* ---- a read due on a small alternate signal stack ---- */

static int on_altstack(long size)
{
	stack_t ss = {.ss_size = (size_t)size, .ss_sp = malloc((size_t)size)};
	if (!ss.ss_sp)
		return 2;
	memset(ss.ss_sp, 0xa5, (size_t)size); /* painted: what the handler used is what changed */
	if (sigaltstack(&ss, NULL) != 0)
		return 2;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
	sigaction(SIGUSR1, &sa, NULL);
	reads_first();
	raise(SIGUSR1);
	if (!handled)
		return 2;
	long untouched = 0;
	while (untouched < size && ((unsigned char *)ss.ss_sp)[untouched] == 0xa5)
		untouched++;
	printf("altstack: used=%ld of %ld\n", size - untouched, size);
	for (int i = 0; i < 1000; i++)
		checked_read();
	return report("altstack");
}

/* ---- a decider killed mid-decision ---- */

/* Kills the calling thread alone (no TSYNC) at its next openat: the decision's read of
 * the record, which it makes holding the claim. */
static int kill_me_at_open(void)
{
#ifndef HAVE_SECCOMP_HEADERS
	return -1;
#else
	return seccomp_one_call(__NR_openat, SECCOMP_RET_KILL_THREAD);
#endif
}

static void *doomed_reader(void *arg)
{
	(void)arg;
	if (kill_me_at_open() != 0)
		return (void *)1;
	checked_read(); /* due: the decision begins, and this thread dies reading the record */
	return NULL;
}

static int kill_decider(void)
{
	pthread_t t;
	void *result = NULL;
	pthread_create(&t, NULL, doomed_reader, NULL);
	pthread_join(t, &result);
	if (result)
		return 2;
	for (int i = 0; i < 100000; i++)
		checked_read();
	struct tscshim_status st;
	shim_status(&st);
	printf("kill-decider: decided=%d reason=%s\n", st.decided, st.reason);
	return report("kill-decider");
}

/* ---- a handler that jumps out of the reads that decide ---- */

static sigjmp_buf jump_target;
static volatile sig_atomic_t in_read;
static long jumps;

static void jump_out_of_read(int sig)
{
	(void)sig;
	if (!in_read)
		return;
	in_read = 0;
	jumps++;
	siglongjmp(jump_target, 1);
}

static int jump_out(void)
{
	struct sigaction sa = {.sa_handler = jump_out_of_read};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every_50us = {{0, 50}, {0, 50}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &every_50us, NULL);
	struct timespec ts;
	for (volatile int i = 0; i < 40; i++) {
		if (sigsetjmp(jump_target, 1) == 0) {
			in_read = 1;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			in_read = 0;
		}
		for (volatile int k = 0; k < 20000; k++)
			;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	for (int i = 0; i < 100000; i++)
		checked_read();
	struct tscshim_status st;
	shim_status(&st);
	printf("jump-out: jumps=%ld decided=%d\n", jumps, st.decided);
	return report("jump-out");
}

/* ---- forks while another thread decides ---- */

static _Atomic int reading;

static void *flagged_reader(void *arg)
{
	atomic_store(&reading, 1);
	return first_reader(arg);
}

static int fork_storm(void)
{
	pthread_t t;
	pthread_create(&t, NULL, flagged_reader, NULL);
	while (!atomic_load(&reading))
		;
	pid_t children[8];
	for (int i = 0; i < 8; i++) {
		children[i] = fork();
		if (children[i] == 0) {
			for (int k = 0; k < 20000; k++)
				checked_read();
			exit(report("fork-storm child"));
		}
		usleep(300);
	}
	pthread_join(t, NULL);
	int failed = 0;
	for (int i = 0; i < 8; i++) {
		int status = 0;
		if (children[i] < 0 || waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed = 1;
	}
	return report("fork-storm parent") || failed;
}

/* ---- a fork between the decision's parts ---- */

static int fork_between_parts(void)
{
	reads_first();
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 2;
	for (int k = 0; k < 1000; k++)
		checked_read();
	if (child == 0)
		exit(report("fork-between-parts child"));
	int status = 0;
	bool child_ok = waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return report("fork-between-parts parent") || !child_ok;
}

/* ---- a child sharing the memory while a thread decides ---- */

static int shared_vm_child(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		checked_read();
	_exit(0);
}

static int vm_mid_decision(const char *how)
{
	pthread_t t;
	int held = start_holding(first_reader, &t);
	if (held != 0)
		return held;
	pid_t child;
	static char stack[256 * 1024];
	if (strcmp(how, "vfork") == 0) {
		child = vfork();
		if (child == 0)
			shared_vm_child(NULL);
	} else {
		child = clone(shared_vm_child, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
	}
	int status = 0;
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 2;
	sem_post(&forked);
	pthread_join(t, NULL);
	return report("vm-mid-decision");
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "none") == 0) {
		puts("none: no clock read");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "altstack") == 0) {
		bound_ns = atoll(argv[3]);
		return on_altstack(atol(argv[2]));
	}
	if (argc == 4 && strcmp(argv[1], "vm-mid-decision") == 0) {
		bound_ns = atoll(argv[3]);
		return vm_mid_decision(argv[2]);
	}
	if (argc != 3)
		return 2;
	bound_ns = atoll(argv[2]);
	if (strcmp(argv[1], "kill-decider") == 0)
		return kill_decider();
	if (strcmp(argv[1], "fork-storm") == 0)
		return fork_storm();
	if (strcmp(argv[1], "jump-out") == 0)
		return jump_out();
	if (strcmp(argv[1], "fork-between-parts") == 0)
		return fork_between_parts();
	if (strcmp(argv[1], "handler") == 0) {
		struct sigaction sa = {.sa_handler = on_signal};
		sigaction(SIGUSR1, &sa, NULL);
		reads_first();
		raise(SIGUSR1);
		if (!handled)
			return 2;
		for (int i = 0; i < 1000; i++)
			checked_read();
		return report("handler");
	}
	bool status_first = false;
	if (strcmp(argv[1], "claim-mask-atfork") == 0) {
		pthread_atfork(before_fork, after_fork_in_parent, NULL);
		argv[1] = "claim-mask";
		status_first = true;
	}
	if (strcmp(argv[1], "claim-mask") == 0) {
		void (**slot)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
		if (!slot)
			return 2;
		*slot = claim_hook; /* before the first read: the decision's own publication */
		if (status_first) /* a read never measures: a status query may, and does here */
			status_asker(NULL);
		for (int i = 0; i < 1000; i++)
			checked_read();
		printf("claim-mask: claims=%d unblocked=%d\n", atomic_load(&claims), atomic_load(&claims_unblocked));
		if (atomic_load(&claims) == 0)
			return 3;
		return atomic_load(&claims_unblocked) ? 1 : report("claim-mask");
	}
	if (strcmp(argv[1], "fork-mid-decision") == 0)
		return fork_while_held(first_reader, 1000, "fork-mid-decision");
	if (strcmp(argv[1], "fork-mid-status") == 0)
		return fork_while_held(status_asker, 3, "fork-mid-status");
	if (strcmp(argv[1], "threads") == 0) {
		reads_first();
		pthread_t t[2];
		pthread_barrier_init(&start, NULL, 2);
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, reader, NULL);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		return report("threads");
	}
	return 2;
}
