/* The estimator in a child process (see estimate_child.h). */
#define _GNU_SOURCE
#include "estimate_child.h"

#include "calibrate.h"
#include "raw_syscall.h"
#include "refclock.h"
#include "safefile.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The process calls below go to the kernel directly (raw_syscall.h): each libc function
 * the shim names is one more symbol the loader binds in every process it is preloaded
 * into, and one more entry in the tables it reads there (calib/load_page.h). fork stays
 * libc's: it must run the host's fork handlers. */
static __attribute__((noreturn)) void exit_now(int code)
{
	long returned = raw_syscall4(SYS_exit_group, code, 0, 0, 0);
	(void)returned; /* exit_group does not return */
	__builtin_unreachable();
}

/* How much longer the estimate may take, and the caller wait for it, where the child's
 * start took start_ns: a host where a new process waits that long for a CPU (a busy loop
 * on every CPU) makes each of the estimator's hand-offs between its threads wait alike,
 * and its loops through the CPUs come that much more slowly (3-11 in 17 ms beside such
 * loops on a microVM, against hundreds in 1.3 ms on it idle). Three starts' worth, at most
 * twice the wait: the caller waits at most four times wait_ns in all. */
static uint64_t extra_for_start(uint64_t start_ns, uint64_t wait_ns)
{
	uint64_t extra = 3 * start_ns;
	return extra < 2 * wait_ns ? extra : 2 * wait_ns;
}

static __attribute__((noreturn, noinline)) void child(int fd, const struct estimate_config *given,
					    uint64_t calibrate_ns, uint64_t forked_at, uint64_t wait_ns)
{
	/* Its pid first, so that the caller can kill it at the deadline. */
	pid_t self = getpid();
	if (write(fd, &self, sizeof self) != (ssize_t)sizeof self)
		exit_now(1);
	struct measurement m;
	memset(&m, 0, sizeof m);
	uint64_t start = refclock_now_ns(CLOCK_MONOTONIC);
	struct estimate_config sized = *given;
	sized.budget_ns += extra_for_start(start > forked_at ? start - forked_at : 0, wait_ns);
	const struct estimate_config *config = &sized;
	char err[160] = "";
	struct estimate_report report;
	if (estimate_run(config, &report, err, sizeof err) != 0) {
		m.analysis.verdict = ESTIMATE_INCONCLUSIVE;
		text_line(m.problem, sizeof m.problem, err, NULL);
	} else {
		m.analysis = report.analysis;
		m.cpu_count = report.cpu_count;
		struct rate_estimate rate;
		if (calibrate_rate(calibrate_ns, &rate, err, sizeof err) == 0)
			m.rate_millihz = rate.rate_millihz;
		else
			text_line(m.problem, sizeof m.problem, err, NULL);
	}
	m.elapsed_ns = refclock_now_ns(CLOCK_MONOTONIC) - start;
	ssize_t ignored = write(fd, &m, sizeof m); /* atomic: sizeof m < PIPE_BUF */
	(void)ignored;
	exit_now(0);
}

int measure_in_child(const struct estimate_config *config, uint64_t calibrate_ns,
		     uint64_t wait_ns, struct measurement *out, char *err, size_t err_size)
{
	_Static_assert(sizeof(struct measurement) <= 4096, "one atomic pipe write (PIPE_BUF)");
	int fds[2];
	long piped = raw_syscall4(SYS_pipe2, (long)fds, O_CLOEXEC, 0, 0);
	if (piped != 0) {
		text_line(err, err_size, "estimator: no pipe: ", strerror((int)-piped), NULL);
		return -1;
	}
	/* Two deadlines: the child's start (two forks, the estimator's first instructions:
	 * what a process costs here, 1-2 ms on a microVM, 3-18 ms beside a busy loop on every
	 * CPU) may take wait_ns, and its work wait_ns from its first word (its pid), more by
	 * what that start cost (extra_for_start). So the estimator's budget is spent on the
	 * estimate, not on a dear fork, and is sized by what a process costs here. */
	uint64_t forked_at = refclock_now_ns(CLOCK_MONOTONIC), deadline = forked_at + wait_ns;
	/* Two forks: the intermediate process exits at once and is reaped here; the
	 * estimator, orphaned, belongs to init. A killed estimator can take long to die (its
	 * thread pinned to a CPU that a real-time task holds must run there to exit), and
	 * nobody waits for it: the caller's wait is bounded by the deadline alone, and the
	 * host never sees a child of ours, nor its SIGCHLD. */
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		pid_t estimator = fork();
		if (estimator == 0)
			child(fds[1], config, calibrate_ns, forked_at, wait_ns);
		exit_now(estimator < 0 ? 1 : 0);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		text_line(err, err_size, "estimator: cannot start a child process: ",
				 strerror(errno), NULL);
		return -1;
	}
	/* The intermediate process is reaped as the answer is awaited, never before it: it
	 * exits at once, but on a loaded host "at once" was seen to take 13-46 ms (it must be
	 * scheduled twice, to fork and to exit), and a wait for it was outside the deadline. */
	bool reaped = false;
	int status;
	pid_t estimator = 0;
	size_t got = 0, want = sizeof estimator + sizeof *out;
	char answer[sizeof estimator + sizeof *out];
	int rc = -1;
	for (;;) {
		if (!reaped && raw_syscall4(SYS_wait4, pid, (long)&status, WNOHANG, 0) == pid)
			reaped = true;
		uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
		if (now >= deadline) {
			text_line(err, err_size, "estimator: no answer within the budget; child killed", NULL);
			break;
		}
		/* Until the intermediate is reaped, the pipe is watched in steps of 1 ms. */
		uint64_t wait = deadline - now;
		if (!reaped && wait > 1000000)
			wait = 1000000;
		struct timespec left = {.tv_sec = (time_t)(wait / 1000000000u), .tv_nsec = (long)(wait % 1000000000u)};
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		long n = raw_syscall4(SYS_ppoll, (long)&p, 1, (long)&left, 0);
		if (n <= 0) /* -EINTR among them */
			continue; /* the deadline check above ends it */
		ssize_t r = read(fds[0], answer + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* The child died without answering: a filter killed it, or it crashed. */
			text_line(err, err_size, "estimator: the child process ended without an answer",
					 NULL);
			break;
		}
		got += (size_t)r;
		if (got >= sizeof estimator && estimator == 0) {
			memcpy(&estimator, answer, sizeof estimator);
			uint64_t now_pid = refclock_now_ns(CLOCK_MONOTONIC);
			deadline = now_pid + wait_ns + extra_for_start(now_pid - forked_at, wait_ns);
		}
		if (got == want) {
			memcpy(out, answer + sizeof estimator, sizeof *out);
			out->problem[sizeof out->problem - 1] = '\0';
			rc = 0;
			break;
		}
	}
	/* Not yet gone at the end (its exit not yet scheduled): killed, then reaped, so that the
	 * host is never left a child of ours. A killed process needs only to run once more. */
	if (!reaped) {
		if (raw_syscall4(SYS_wait4, pid, (long)&status, WNOHANG, 0) != pid) {
			if (raw_syscall4(SYS_kill, pid, SIGKILL, 0, 0) != 0) {
				/* ESRCH: gone meanwhile; the wait below reaps it */
			}
			while (raw_syscall4(SYS_wait4, pid, (long)&status, 0, 0) == -EINTR)
				;
		}
	}
	close(fds[0]);
	/* Late, it would only write into a closed pipe (SIGPIPE); killed, it stops sooner. */
	if (rc != 0 && estimator > 0 && raw_syscall4(SYS_kill, estimator, SIGKILL, 0, 0) != 0) {
		/* ESRCH: it ended meanwhile, which is what the kill was for. */
	}
	return rc;
}
