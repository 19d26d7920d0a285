/* Adversarial companion of test/probe_hostile.c (review39): the same promises, checked
 * the same way against build/test/librefclock.so (and build/test/librefwindow.so), with
 * what that probe does not try: readings of the reference that fail are not held against
 * the shim (a window of failures leaves the probe without a reference, not the shim in
 * fault), fork children, and signal handlers.
 *
 *   probe_hostile_adv SECONDS THREADS LIMIT_NS SETTLE_US [monotonic-reference]
 *   (and TSCTEST_PROBE_READS, as test/probe_hostile.c takes them)
 *
 * Variables:
 *   ADV_FORK_EVERY_MS=P  the main thread forks a child every P ms. Just before each fork
 *                        it reads every clock; the child (one thread) first asks
 *                        tscshim_status_sized (printing `child-status: active=...` once;
 *                        with ADV_CHILD_STATUS_CHECK=1, active=1 where the parent's said 0
 *                        just before is a broken promise),
 *                        then reads each clock ADV_CHILD_READS times (default 200):
 *                        every value a time, no invented failure, with
 *                        monotonic-reference no monotonic value below what its parent
 *                        read before the fork, and the mean cost of a read (printed: the
 *                        largest child's, `child_ns_per_read`).
 *   ADV_CHILD_NS_LIMIT=N a child's mean cost of a read above N ns is a broken promise
 *                        (unbounded slow-path cost), default 0: not checked.
 *   ADV_CHILD_CALLS_LIMIT=N  likewise for the mean number of calls a child's read made
 *                        to the kernel's clock (the double counts them; printed as
 *                        `child_calls_per_read`): a measure the machine's load does not
 *                        move. ADV_CHILD_TRACE=1 prints the first reads' costs.
 *   ADV_CHILD_LIMIT_NS=N each child read is also checked against the child's own kernel
 *                        clock by the system call around it: within N ns (monotonic
 *                        clocks may lie above it by no more either: a stand-still).
 *   ADV_TIMENS=OFFSETS   before the first fork the probe enters a new time namespace
 *                        with these offsets (/proc/self/timens_offsets lines, ';' between
 *                        them, e.g. "boottime -100 0"): the children live in it. Exit 3
 *                        where that cannot be done (needs root and CONFIG_TIME_NS).
 *   ADV_READ_GAP_US=G    each reader sleeps G us after reading the four clocks: lines
 *                        lapse between reads (re-anchored, not re-synchronized).
 *   ADV_SIGNAL_US=U      every U us a signal (SIGURG) hits a reader thread, whose handler
 *                        reads the four clocks and checks them as the threads do (values
 *                        are times; monotonic ones never below the handler's last).
 * Exit 1 on a broken promise, 2 on a usage error. */
#define _GNU_SOURCE
#include "hostile_check.h"
#include "tscshim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static struct hostile_double dbl;
static struct hostile_limits limits = {.reads_around = 1, .reference_tries = 20};
static int64_t read_gap_ns;
static _Atomic bool stop;

#define clocks hostile_clocks
#define CLOCKS HOSTILE_CLOCKS
#define report hostile_report
#define ns_of ns_of
#define syscall_ns kernel_ns

struct reader {
	pthread_t thread;
	pid_t tid;
	struct hostile_tally t[HOSTILE_CLOCKS];
};

/* ---- signal handlers ---- */

static _Atomic long handler_runs, handler_broken;
static __thread int64_t handler_previous[CLOCKS];

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	atomic_fetch_add(&handler_runs, 1);
	for (int k = 0; k < CLOCKS; k++) {
		struct timespec ts = {.tv_sec = -1, .tv_nsec = -1};
		if (clock_gettime(clocks[k].id, &ts) != 0) {
			if (errno != EINVAL)
				atomic_fetch_add(&handler_broken, 1);
			continue;
		}
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
			atomic_fetch_add(&handler_broken, 1);
			continue;
		}
		int64_t v = ns_of(&ts);
		if (clocks[k].monotonic && limits.reference_monotonic && v < handler_previous[k])
			atomic_fetch_add(&handler_broken, 1);
		handler_previous[k] = v;
	}
	errno = saved;
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	r->tid = (pid_t)syscall(SYS_gettid);
	int64_t previous[CLOCKS] = {0};
	bool previous_served[CLOCKS] = {false};
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int k = 0; k < CLOCKS; k++)
			hostile_read_one(&dbl, &limits, k, &r->t[k], &previous[k], &previous_served[k]);
		if (read_gap_ns) {
			struct timespec nap = {.tv_sec = read_gap_ns / 1000000000, .tv_nsec = read_gap_ns % 1000000000};
			nanosleep(&nap, NULL);
		}
	}
	return NULL;
}

static int status_active(void)
{
	int (*sized)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (sized)
		sized(&s, sizeof s);
	return s.active;
}

static void print_status(const char *prefix)
{
	int (*sized)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (sized)
		sized(&s, sizeof s);
	printf("%s: loaded=%d active=%d served_clocks=%u stopped_clocks=%u causes=%u,%u,%u,%u resyncs=%llu "
	       "reanchors=%llu stops=%llu held_reads=%llu unreadable_anchors=%llu kernel_reads=%llu resumes=%llu reason=%s\n",
	       prefix, sized != NULL, s.active, s.served_clocks, s.stopped_clocks, s.stop_cause[0], s.stop_cause[1],
	       s.stop_cause[2], s.stop_cause[3], (unsigned long long)s.resyncs, (unsigned long long)s.reanchors,
	       (unsigned long long)s.stops, (unsigned long long)s.held_reads,
	       (unsigned long long)s.unreadable_anchors, (unsigned long long)s.kernel_reads,
	       (unsigned long long)s.resumes, s.reason);
}

/* ---- fork children ---- */

static int child_reads = 200;
static int64_t child_limit_ns;
static const char *timens_text;
static int64_t child_ns_limit, child_calls_limit;

/* In the child: 0 kept every promise, 1 broke one; *ns_per_read through the pipe. */
static int child_reports;
#define CHILD_REPORT(...) (child_reports++ < 3 ? printf(__VA_ARGS__) : 0)

static int child_main(const int64_t before_fork[CLOCKS], int fd, bool say_status, int parent_active)
{
	if (say_status)
		print_status("child-status");
	int broken = 0;
	/* Before any read: the status says what the child will do, as its parent's said. */
	if (getenv("ADV_CHILD_STATUS_CHECK") && !parent_active && status_active()) {
		CHILD_REPORT("# child: the status says active=1 where its parent's line had stopped (active=0)\n");
		broken = 1;
	}
	bool trace = getenv("ADV_CHILD_TRACE") != NULL;
	int64_t start = syscall_ns(CLOCK_MONOTONIC);
	int64_t unused;
	uint64_t calls_start = dbl.last_call(CLOCK_MONOTONIC, &unused);
	long reads = 0;
	for (int i = 0; i < child_reads; i++)
		for (int k = 0; k < CLOCKS; k++) {
			struct timespec ts = {.tv_sec = -1, .tv_nsec = -1};
			errno = 0;
			reads++;
			int64_t t0 = trace ? syscall_ns(CLOCK_MONOTONIC) : 0;
			int rc = clock_gettime(clocks[k].id, &ts);
			if (trace && i < 3)
				CHILD_REPORT("# child read %d %s: rc=%d %lld ns, value - system call's %lld\n", i, clocks[k].name,
				       rc, (long long)(syscall_ns(CLOCK_MONOTONIC) - t0),
				       (long long)(ns_of(&ts) - syscall_ns(clocks[k].id)));
			if (rc != 0) {
				if (errno != EINVAL) {
					CHILD_REPORT("# child: %s failed with errno %d\n", clocks[k].name, errno);
					broken = 1;
				}
				continue;
			}
			if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
				CHILD_REPORT("# child: %s not a time\n", clocks[k].name);
				broken = 1;
				continue;
			}
			int64_t v = ns_of(&ts);
			if (child_limit_ns) {
				/* Against the child's own kernel clock (its time namespace's), by the
				 * system call, around the read. */
				int64_t k1 = syscall_ns(clocks[k].id);
				struct timespec again;
				clock_gettime(clocks[k].id, &again);
				int64_t k2 = syscall_ns(clocks[k].id);
				int64_t w = ns_of(&again);
				int64_t e = w < k1 - child_limit_ns ? k1 - w : w > k2 + child_limit_ns ? w - k2 : 0;
				if (e) {
					CHILD_REPORT("# child: %s served %lld ns off its own kernel clock\n", clocks[k].name,
					       (long long)(w < k1 ? w - k1 : w - k2));
					broken = 1;
				}
			}
			if (clocks[k].monotonic && limits.reference_monotonic && !timens_text && v < before_fork[k]) {
				CHILD_REPORT("# child: %s %lld below what its parent read before the fork\n", clocks[k].name,
				       (long long)(before_fork[k] - v));
				broken = 1;
			}
		}
	int64_t per[2] = {(syscall_ns(CLOCK_MONOTONIC) - start) / reads,
			  (int64_t)(dbl.last_call(CLOCK_MONOTONIC, &unused) - calls_start) * 100 / reads};
	if (write(fd, per, sizeof per) != sizeof per)
		broken = 1;
	fflush(stdout);
	return broken;
}

static long forks, children_broken;
static int64_t worst_child_ns, worst_child_calls_x100;

static bool enter_timens(void)
{
	if (unshare(CLONE_NEWTIME) != 0) {
		printf("# cannot unshare a time namespace here: %s\n", strerror(errno));
		return false;
	}
	char text[256];
	snprintf(text, sizeof text, "%s\n", timens_text);
	for (char *p = text; *p; p++)
		if (*p == ';')
			*p = '\n';
	int fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		printf("# cannot set the offsets: %s\n", strerror(errno));
		return false;
	}
	close(fd);
	return true;
}

static void fork_one(bool say_status)
{
	static bool in_timens;
	if (timens_text && !in_timens) {
		if (!enter_timens())
			exit(3);
		in_timens = true;
	}
	int64_t before[CLOCKS];
	int parent_active = status_active();
	for (int k = 0; k < CLOCKS; k++) {
		struct timespec ts;
		before[k] = clock_gettime(clocks[k].id, &ts) == 0 ? ns_of(&ts) : 0;
	}
	int fds[2];
	if (pipe(fds) != 0)
		return;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(child_main(before, fds[1], say_status, parent_active));
	}
	close(fds[1]);
	int64_t per[2] = {0, 0};
	if (read(fds[0], per, sizeof per) != sizeof per)
		per[0] = per[1] = -1;
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	forks++;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		children_broken++;
	if (per[0] > worst_child_ns)
		worst_child_ns = per[0];
	if (per[1] > worst_child_calls_x100)
		worst_child_calls_x100 = per[1];
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	double seconds;
	int threads;
	if (!hostile_parse_args(argc, argv, "probe_hostile_adv", &limits, &seconds, &threads))
		return 2;
	const char *v;
	int64_t fork_every_ns = (v = getenv("ADV_FORK_EVERY_MS")) ? atoll(v) * 1000000 : 0;
	int64_t signal_ns = (v = getenv("ADV_SIGNAL_US")) ? atoll(v) * 1000 : 0;
	if ((v = getenv("ADV_CHILD_READS")) && atoi(v) > 0)
		child_reads = atoi(v);
	child_ns_limit = (v = getenv("ADV_CHILD_NS_LIMIT")) ? atoll(v) : 0;
	child_calls_limit = (v = getenv("ADV_CHILD_CALLS_LIMIT")) ? atoll(v) : 0;
	child_limit_ns = (v = getenv("ADV_CHILD_LIMIT_NS")) ? atoll(v) : 0;
	timens_text = getenv("ADV_TIMENS");
	read_gap_ns = (v = getenv("ADV_READ_GAP_US")) ? atoll(v) * 1000 : 0;
	if (!hostile_double_find(&dbl) || threads < 1 || threads > 64) {
		fprintf(stderr, "probe_hostile_adv: needs build/test/librefclock.so preloaded after the shim\n");
		return 2;
	}
	if (signal_ns) {
		struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
		sigemptyset(&sa.sa_mask);
		sigaction(SIGURG, &sa, NULL);
	}
	status_active(); /* the decision, now: its moment starts the settling */
	limits.decided_at_ns = kernel_ns(CLOCK_MONOTONIC);
	struct reader *r = calloc((size_t)threads, sizeof *r);
	for (int i = 0; i < threads; i++)
		pthread_create(&r[i].thread, NULL, reader_main, &r[i]);
	int64_t end = syscall_ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9);
	int64_t next_fork = fork_every_ns ? syscall_ns(CLOCK_MONOTONIC) + fork_every_ns : INT64_MAX;
	int64_t next_signal = signal_ns ? syscall_ns(CLOCK_MONOTONIC) + signal_ns : INT64_MAX;
	int victim = 0;
	bool said = false;
	for (int64_t now; (now = syscall_ns(CLOCK_MONOTONIC)) < end;) {
		if (now >= next_fork) {
			fork_one(!said);
			said = true;
			next_fork = syscall_ns(CLOCK_MONOTONIC) + fork_every_ns;
		}
		if (now >= next_signal) {
			if (r[victim].tid)
				syscall(SYS_tgkill, getpid(), r[victim].tid, SIGURG);
			victim = (victim + 1) % threads;
			next_signal = now + signal_ns;
		}
		int64_t wake = next_fork < next_signal ? next_fork : next_signal;
		wake = wake < end ? wake : end;
		int64_t nap = wake - syscall_ns(CLOCK_MONOTONIC);
		if (nap > 0) {
			struct timespec ts = {.tv_sec = nap / 1000000000, .tv_nsec = nap % 1000000000};
			nanosleep(&ts, NULL);
		}
	}
	atomic_store(&stop, true);
	struct hostile_tally all[HOSTILE_CLOCKS];
	memset(all, 0, sizeof all);
	for (int i = 0; i < threads; i++) {
		pthread_join(r[i].thread, NULL);
		for (int k = 0; k < HOSTILE_CLOCKS; k++)
			hostile_tally_add(&all[k], &r[i].t[k]);
	}
	bool broken = hostile_tally_print(all);
	if (fork_every_ns) {
		printf("forks: children=%ld broken=%ld child_ns_per_read=%lld child_calls_per_read=%lld.%02lld\n", forks,
		       children_broken, (long long)worst_child_ns, (long long)(worst_child_calls_x100 / 100),
		       (long long)(worst_child_calls_x100 % 100));
		broken |= children_broken > 0 || (child_ns_limit && worst_child_ns > child_ns_limit) ||
			  (child_calls_limit && worst_child_calls_x100 > child_calls_limit * 100);
	}
	if (signal_ns) {
		printf("signals: handler_runs=%ld broken=%ld\n", atomic_load(&handler_runs), atomic_load(&handler_broken));
		broken |= atomic_load(&handler_broken) > 0;
	}
	print_status("status");
	free(r);
	return broken;
}
