/* Processes for `tscshim ab`. Each starts as the leader of a process group of its own
 * with stdin from /dev/null and its output in files, under a variant's environment;
 * waiting is on a pidfd, so that a timeout or a signal to ab never leaves one running;
 * stopping is SIGTERM to the group, then SIGKILL after a grace period. */
#define _GNU_SOURCE
#include "ab_process.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

volatile sig_atomic_t ab_interrupted;

static void on_signal(int sig)
{
	ab_interrupted = sig;
}

void ab_catch_signals(void)
{
	/* No SA_RESTART: a wait in progress returns EINTR and sees the flag. */
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* What a server or command leaves behind when its leader exits comes back to ab,
	 * which reaps it while stopping the group. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static int open_to(const char *path, int fd)
{
	int f = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : open("/dev/null", O_WRONLY);
	if (f < 0 || dup2(f, fd) < 0)
		return -1;
	close(f);
	return 0;
}

/* In the child, which has one thread: setenv is safe here. */
static int child_environment(const struct ab_spawn *s)
{
	const struct ab_variant *v = s->variant;
	if (!v || !v->shim)
		return 0;
	for (int id = 0; id < OPTION_COUNT; id++)
		if (v->set[id] && setenv(option_table[id].name, v->text[id], 1) != 0)
			return -1;
	if (s->stats ? setenv("TSCSHIM_STATS", s->stats, 1) != 0 : unsetenv("TSCSHIM_STATS") != 0)
		return -1;
	return cli_set_preload(s->library);
}

int ab_start(const struct ab_spawn *s, struct ab_child *c)
{
	memset(c, 0, sizeof *c);
	c->pidfd = -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tscshim ab: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int in = open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, STDIN_FILENO) < 0 || open_to(s->out, STDOUT_FILENO) != 0 ||
		    open_to(s->err, STDERR_FILENO) != 0 || child_environment(s) != 0)
			_exit(126);
		/* Nothing of ab's own reaches the child: an inherited pipe (a test harness's) would
		 * keep its reader waiting for as long as a server lives. */
		syscall(SYS_close_range, 3, ~0U, 0); /* no close_range() in musl */
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigaction(SIGINT, &dfl, NULL), sigaction(SIGTERM, &dfl, NULL), sigaction(SIGHUP, &dfl, NULL);
		if (s->shell) {
			execl("/bin/sh", "sh", "-c", s->shell, (char *)NULL);
		} else {
			execvp(s->argv[0], s->argv);
			fprintf(stderr, "tscshim ab: %s: %s\n", s->argv[0], strerror(errno));
			_exit(errno == ENOENT ? 127 : 126);
		}
		_exit(127);
	}
	setpgid(pid, pid); /* also here: whichever runs first, the group exists before a kill */
	c->pid = pid;
	/* The system call: musl has no pidfd_open() (nor glibc before 2.36). */
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd < 0) {
		fprintf(stderr, "tscshim ab: pidfd_open: %s\n", strerror(errno));
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return 0;
}

static void reap(struct ab_child *c, struct rusage *ru)
{
	struct rusage ignored;
	while (wait4(c->pid, &c->status, 0, ru ? ru : &ignored) < 0 && errno == EINTR)
		;
	c->reaped = true;
	close(c->pidfd);
	c->pidfd = -1;
}

int ab_wait(struct ab_child *c, double timeout, struct rusage *ru)
{
	double deadline = timeout >= 0 ? cli_seconds_now() + timeout : 0;
	for (;;) {
		if (ab_interrupted)
			return 2;
		int ms = -1;
		if (timeout >= 0) {
			double left = deadline - cli_seconds_now();
			ms = left > 0 ? (int)(left * 1000) + 1 : 0;
		}
		struct pollfd p = {.fd = c->pidfd, .events = POLLIN};
		int n = poll(&p, 1, ms);
		if (n > 0) {
			reap(c, ru);
			return 0;
		}
		if (n == 0 && timeout >= 0 && cli_seconds_now() >= deadline)
			return 1;
		if (n < 0 && errno != EINTR)
			return 1;
	}
}

/* Reaps what of the group came back to ab (it is a subreaper); true when none is left. */
static bool group_gone(pid_t group)
{
	while (waitpid(-group, NULL, WNOHANG) > 0)
		;
	return kill(-group, 0) != 0 && errno == ESRCH;
}

void ab_stop(struct ab_child *c, double grace, bool *killed)
{
	*killed = false;
	if (c->pid <= 0)
		return;
	kill(-c->pid, SIGTERM);
	double deadline = cli_seconds_now() + grace;
	/* Polled, not waited for: the group may outlive its leader. */
	for (;;) {
		if (!c->reaped) {
			struct pollfd p = {.fd = c->pidfd, .events = POLLIN};
			if (poll(&p, 1, 0) > 0)
				reap(c, NULL);
		}
		if (c->reaped && group_gone(c->pid))
			break;
		if (cli_seconds_now() >= deadline) {
			*killed = true;
			kill(-c->pid, SIGKILL);
			if (!c->reaped)
				reap(c, NULL);
			/* Bounded: a process in uninterruptible sleep may take its time. */
			for (int i = 0; i < 5000 && !group_gone(c->pid); i++)
				usleep(1000);
			break;
		}
		usleep(2000);
	}
	c->pid = 0;
}

void ab_exit_text(char *buf, size_t size, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "status %#x", status);
}
