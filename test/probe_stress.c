/* Load, fault and ordering proofs, run under the shim by bats/stress.bats (short) and
 * `make soak` (long). Every mode prints its counts on one line and exits 1 on any
 * violation, 2 on a usage or set-up error. Nothing here is timed except the deadline
 * wake-ups, whose bounds are generous: machines are noisy, the checks are about order.
 *
 *   probe_stress status                  active=0|1 and resyncs, from tscshim_status
 *   probe_stress load SECONDS THREADS    THREADS (0: 4 x CPUs) call every served clock;
 *                                        each checks its own MONOTONIC, RAW, BOOTTIME
 *   probe_stress pingpong ROUNDS [main]  two threads pinned to different CPUs hand a clock
 *                                        value back and forth (release/acquire); the
 *                                        receiver's read must not be smaller
 *   probe_stress migrate SECONDS THREADS threads move to another CPU between the two ends
 *                                        of every interval: no negative interval
 *   probe_stress signal SECONDS HZ       ITIMER_REAL at HZ; the handler reads the clocks
 *                                        that the interrupted loop reads
 *   probe_stress fork CHILDREN [SPINNERS] children forked one at a time, each right after a
 *                                        re-synchronization, beside SPINNERS (3) reading threads;
 *                                        each child reads at once, within the bound
 *   probe_stress spawn                   posix_spawn, vfork+exec and fork+exec of `child`
 *   probe_stress exec                    replaces itself with `child`
 *   probe_stress child                   reads, checks, prints whether the shim serves
 *   probe_stress sleep MS ROUNDS         clock_nanosleep(TIMER_ABSTIME) to a deadline from
 *                                        the served clock; wake-up lateness by syscall */
#define _GNU_SOURCE
#include "tscshim.h"

#include "kernel_ns.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const clockid_t checked[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME};
static const char *const checked_names[] = {"monotonic", "monotonic_raw", "boottime"};
enum { CHECKED = 3 };

static char self[4096];

/* The kernel's clock, which no preload reaches: the reference for deadlines and for
 * bounding a run's length. */
static int64_t served_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ns_of(&ts);
}

static bool normalized(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

static bool shim_status(struct tscshim_status *s)
{
	int (*fn)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	memset(s, 0, sizeof *s);
	if (!fn)
		return false;
	fn(s);
	return true;
}

/* One line with what the counts are worth: whether the shim served, and how often it
 * re-synchronized (a stress run that never re-synchronized proved less). */
static void print_shim(void)
{
	struct tscshim_status s;
	bool loaded = shim_status(&s);
	printf(" loaded=%d active=%d from_cache=%d resyncs=%llu fallbacks=%llu\n", loaded,
	       s.active, s.from_cache, (unsigned long long)s.resyncs, (unsigned long long)s.fallbacks);
}

static int cpus_allowed(int *ids, int max)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 0;
	int n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			ids[n++] = c;
	return n;
}

static int pin(pthread_t thread, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof set, &set);
}

/* ---- load ---- */

struct load_arg {
	int64_t end_ns;
	long calls, checks, violations, unnormalized;
};

static void *load_thread(void *p)
{
	struct load_arg *a = p;
	int64_t last[CHECKED] = {0};
	for (long i = 0;; i++) {
		for (int c = 0; c < CHECKED; c++) {
			struct timespec ts;
			clock_gettime(checked[c], &ts);
			int64_t v = ns_of(&ts);
			if (v < last[c]) {
				if (a->violations++ < 5)
					printf("# %s stepped back %lld ns\n", checked_names[c],
					       (long long)(last[c] - v));
			}
			if (!normalized(&ts))
				a->unnormalized++;
			last[c] = v;
			a->checks++;
		}
		/* Every served clock, including the wall clock's three entry points, which
		 * may step, so only their form is checked. */
		struct timespec rt, tg;
		struct timeval tv;
		clock_gettime(CLOCK_REALTIME, &rt);
		gettimeofday(&tv, NULL);
		timespec_get(&tg, TIME_UTC);
		if (!normalized(&rt) || !normalized(&tg) || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
			a->unnormalized++;
		a->calls += CHECKED + 3;
		if ((i & 255) == 0 && kernel_ns(CLOCK_MONOTONIC) > a->end_ns)
			break;
	}
	return NULL;
}

static int load(double seconds, int threads)
{
	int ids[CPU_SETSIZE];
	int cpus = cpus_allowed(ids, CPU_SETSIZE);
	if (threads <= 0)
		threads = 4 * (cpus > 0 ? cpus : 1);
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	struct load_arg *a = calloc((size_t)threads, sizeof *a);
	if (!t || !a)
		return 2;
	int64_t start = kernel_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++) {
		a[i].end_ns = start + (int64_t)(seconds * 1e9);
		if (pthread_create(&t[i], NULL, load_thread, &a[i]) != 0)
			return 2;
	}
	long calls = 0, checks = 0, violations = 0, unnormalized = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		calls += a[i].calls;
		checks += a[i].checks;
		violations += a[i].violations;
		unnormalized += a[i].unnormalized;
	}
	printf("load: cpus=%d threads=%d calls=%ld checked=%ld duration_ms=%lld violations=%ld unnormalized=%ld",
	       cpus, threads, calls, checks, (long long)((kernel_ns(CLOCK_MONOTONIC) - start) / 1000000),
	       violations, unnormalized);
	print_shim();
	free(t);
	free(a);
	return violations || unnormalized ? 1 : 0;
}

/* ---- pingpong ---- */

static struct {
	_Alignas(64) _Atomic uint64_t turn;   /* odd: B's turn to check, even: A's */
	_Alignas(64) _Atomic int64_t value[2]; /* by clock parity, so a stale slot is never read */
	long rounds;
	long violations[2];
	int64_t worst[2];
} pp;

static void pingpong_side(int me)
{
	for (long r = 0; r < pp.rounds; r++) {
		uint64_t mine = 2 * (uint64_t)r + (uint64_t)me; /* the turn value at which I check */
		while (atomic_load_explicit(&pp.turn, memory_order_acquire) != mine)
			__builtin_ia32_pause();
		clockid_t c = checked[r % CHECKED];
		if (mine > 0) {
			/* The other side read its value, then published it with release: this read
			 * is ordered after it and must not be smaller. */
			int64_t theirs = atomic_load_explicit(&pp.value[(mine - 1) & 1], memory_order_relaxed);
			int64_t v = served_ns(c);
			if (v < theirs) {
				pp.violations[me]++;
				if (theirs - v > pp.worst[me])
					pp.worst[me] = theirs - v;
			}
		}
		/* Side `me` checks at turns 2r + me on checked[r % 3]; the value for turn n + 1 is
		 * read at turn n on checked[(n + 1) / 2 % 3], the same clock. */
		clockid_t next = checked[(mine + 1) / 2 % CHECKED];
		atomic_store_explicit(&pp.value[mine & 1], served_ns(next), memory_order_relaxed);
		atomic_store_explicit(&pp.turn, mine + 1, memory_order_release);
	}
}

static void *pingpong_thread(void *p)
{
	pingpong_side((int)(intptr_t)p);
	return NULL;
}

/* Both sides in threads of their own, or side 0 in the main thread (`main_plays`): the
 * main thread is the one that ran the shim's constructor. */
static int pingpong(long rounds, bool main_plays)
{
	int ids[CPU_SETSIZE];
	int cpus = cpus_allowed(ids, CPU_SETSIZE);
	if (cpus < 2) {
		printf("pingpong: skipped, %d CPU allowed\n", cpus);
		return 0;
	}
	pp.rounds = rounds;
	pthread_t a, b;
	int64_t start = kernel_ns(CLOCK_MONOTONIC);
	if (pthread_create(&b, NULL, pingpong_thread, (void *)1) != 0 || pin(b, ids[1]) != 0)
		return 2;
	if (main_plays) {
		if (pin(pthread_self(), ids[0]) != 0)
			return 2;
		pingpong_side(0);
	} else {
		if (pthread_create(&a, NULL, pingpong_thread, (void *)0) != 0 || pin(a, ids[0]) != 0)
			return 2;
		pthread_join(a, NULL);
	}
	pthread_join(b, NULL);
	long violations = pp.violations[0] + pp.violations[1];
	printf("pingpong: cpus=%d,%d rounds=%ld checked=%ld duration_ms=%lld violations=%ld worst_ns=%lld",
	       ids[0], ids[1], rounds, 2 * rounds - 1,
	       (long long)((kernel_ns(CLOCK_MONOTONIC) - start) / 1000000), violations,
	       (long long)(pp.worst[0] > pp.worst[1] ? pp.worst[0] : pp.worst[1]));
	print_shim();
	return violations ? 1 : 0;
}

/* ---- migrate ---- */

struct migrate_arg {
	int64_t end_ns;
	int first;
	const int *ids;
	int cpus;
	long intervals, migrations, violations, failed_moves;
	int64_t worst;
};

static void *migrate_thread(void *p)
{
	struct migrate_arg *a = p;
	int64_t last[CHECKED] = {0};
	for (long i = 0;; i++) {
		clockid_t c = checked[i % CHECKED];
		int64_t begin = served_ns(c);
		/* Returns once the thread runs on the target CPU (it is moved off the old one
		 * before the call completes). */
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(a->ids[(a->first + i) % a->cpus], &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0)
			a->failed_moves++;
		else
			a->migrations++;
		int64_t end = served_ns(c);
		if (end < begin || begin < last[i % CHECKED]) {
			a->violations++;
			int64_t back = end < begin ? begin - end : last[i % CHECKED] - begin;
			if (back > a->worst)
				a->worst = back;
		}
		last[i % CHECKED] = end;
		a->intervals++;
		if ((i & 63) == 0 && kernel_ns(CLOCK_MONOTONIC) > a->end_ns)
			break;
	}
	return NULL;
}

static int migrate(double seconds, int threads)
{
	int ids[CPU_SETSIZE];
	int cpus = cpus_allowed(ids, CPU_SETSIZE);
	if (cpus < 2) {
		printf("migrate: skipped, %d CPU allowed\n", cpus);
		return 0;
	}
	if (threads <= 0)
		threads = cpus;
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	struct migrate_arg *a = calloc((size_t)threads, sizeof *a);
	if (!t || !a)
		return 2;
	int64_t start = kernel_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++) {
		a[i] = (struct migrate_arg){.end_ns = start + (int64_t)(seconds * 1e9), .first = i,
					    .ids = ids, .cpus = cpus};
		if (pthread_create(&t[i], NULL, migrate_thread, &a[i]) != 0)
			return 2;
	}
	long intervals = 0, migrations = 0, violations = 0, failed = 0;
	int64_t worst = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		intervals += a[i].intervals;
		migrations += a[i].migrations;
		violations += a[i].violations;
		failed += a[i].failed_moves;
		if (a[i].worst > worst)
			worst = a[i].worst;
	}
	printf("migrate: cpus=%d threads=%d intervals=%ld migrations=%ld failed_moves=%ld duration_ms=%lld violations=%ld worst_ns=%lld",
	       cpus, threads, intervals, migrations, failed,
	       (long long)((kernel_ns(CLOCK_MONOTONIC) - start) / 1000000), violations,
	       (long long)worst);
	print_shim();
	free(t);
	free(a);
	return violations || failed ? 1 : 0;
}

/* ---- signal ---- */

/* Shared between the loop and the handler that interrupts it, in the same thread: lock-
 * free atomics (plain loads and stores on x86-64), the only async-signal-safe kind. */
static _Atomic int64_t loop_published[CHECKED];  /* the loop's last value, stored after its check */
static _Atomic int64_t handler_last[CHECKED];    /* the handler's last value */
static _Atomic long handler_runs, handler_violations, loop_violations;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	for (int c = 0; c < CHECKED; c++) {
		struct timespec ts;
		clock_gettime(checked[c], &ts);
		int64_t v = ns_of(&ts);
		/* Everything the loop published was read before this read. */
		if (v < atomic_load_explicit(&loop_published[c], memory_order_relaxed) ||
		    v < atomic_load_explicit(&handler_last[c], memory_order_relaxed))
			atomic_fetch_add_explicit(&handler_violations, 1, memory_order_relaxed);
		atomic_store_explicit(&handler_last[c], v, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&handler_runs, 1, memory_order_relaxed);
	errno = saved;
}

static int signals(double seconds, long hz)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		return 2;
	long period_us = hz > 0 ? 1000000 / hz : 100;
	if (period_us < 1)
		period_us = 1;
	struct itimerval it = {.it_interval = {0, period_us}, .it_value = {0, period_us}};
	if (setitimer(ITIMER_REAL, &it, NULL) != 0)
		return 2;
	int64_t start = kernel_ns(CLOCK_MONOTONIC), end = start + (int64_t)(seconds * 1e9);
	long loops = 0;
	for (long i = 0;; i++) {
		for (int c = 0; c < CHECKED; c++) {
			/* What the handler read before this load was read before this read. */
			int64_t before = atomic_load_explicit(&handler_last[c], memory_order_relaxed);
			int64_t prev = atomic_load_explicit(&loop_published[c], memory_order_relaxed);
			int64_t v = served_ns(checked[c]);
			if (v < before || v < prev)
				atomic_fetch_add_explicit(&loop_violations, 1, memory_order_relaxed);
			atomic_store_explicit(&loop_published[c], v, memory_order_relaxed);
		}
		loops++;
		if ((i & 255) == 0 && kernel_ns(CLOCK_MONOTONIC) > end)
			break;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	long violations = handler_violations + loop_violations;
	printf("signal: hz=%ld handler_runs=%ld loop_calls=%ld checked=%ld duration_ms=%lld violations=%ld",
	       hz, (long)handler_runs, loops * CHECKED, (loops + handler_runs) * CHECKED,
	       (long long)((kernel_ns(CLOCK_MONOTONIC) - start) / 1000000), violations);
	print_shim();
	/* A handler that never ran proved nothing. */
	return violations || handler_runs == 0 ? 1 : 0;
}

/* ---- child, fork, spawn, exec ---- */

/* Reads every checked clock for ~20 ms of kernel time: never backwards, each read between
 * the kernel's clock just before and just after it (within ten times the error bound,
 * TSCSHIM_MAX_ERROR_NS, default 1000 ns: far below a child that served its parent's next
 * segment early, up to a life ahead), and in step with the kernel at the end (a child
 * that kept its parent's state, or a writer's turn taken in the parent at the fork,
 * instead of anchoring anew would not keep in step). */
static int child_check(bool quiet)
{
	const char *bound_text = getenv("TSCSHIM_MAX_ERROR_NS");
	int64_t outside_bound = 10 * (bound_text ? atoll(bound_text) : 1000);
	int64_t last[CHECKED] = {0};
	long violations = 0, outside = 0, calls = 0;
	int64_t outside_worst = 0;
	int64_t end = kernel_ns(CLOCK_MONOTONIC) + 20000000;
	while (kernel_ns(CLOCK_MONOTONIC) < end) {
		for (int c = 0; c < CHECKED; c++) {
			int64_t before = kernel_ns(checked[c]);
			int64_t v = served_ns(checked[c]);
			int64_t after = kernel_ns(checked[c]);
			int64_t off = v < before ? before - v : v > after ? v - after : 0;
			if (off > outside_worst)
				outside_worst = off;
			if (off > outside_bound)
				outside++;
			if (v < last[c])
				violations++;
			last[c] = v;
			calls++;
		}
	}
	int64_t lag_worst = 0;
	for (int c = 0; c < CHECKED; c++) {
		int64_t lag = kernel_ns(checked[c]) - served_ns(checked[c]);
		if (lag > lag_worst)
			lag_worst = lag;
	}
	/* 1 ms: a hundred times the served error bound, far below a stuck clock's 20 ms. */
	bool behind = lag_worst > 1000000;
	struct tscshim_status s;
	bool loaded = shim_status(&s);
	/* A fork child checks the counter's clock: one that passed through proved nothing. */
	bool unserved = quiet && !(loaded && s.active);
	if (!quiet || outside || violations || behind || unserved) {
		printf("child: loaded=%d active=%d calls=%ld violations=%ld outside=%ld outside_worst_ns=%lld lag_ns=%lld\n",
		       loaded, s.active, calls, violations, outside, (long long)outside_worst,
		       (long long)lag_worst);
		fflush(stdout);
	}
	return violations || outside || behind || unserved ? 1 : 0;
}

static _Atomic bool spinners_stop;

static void *spinner(void *p)
{
	(void)p;
	while (!atomic_load_explicit(&spinners_stop, memory_order_relaxed))
		served_ns(CLOCK_MONOTONIC);
	return NULL;
}

static void start_spinners(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spinner, NULL);
}

static void stop_spinners(pthread_t *t, int n)
{
	atomic_store(&spinners_stop, true);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* Waits (reading the clock, at most ~50 ms) until this process re-synchronizes again. */
static void await_resync(void)
{
	struct tscshim_status s;
	shim_status(&s);
	uint64_t seen = s.resyncs;
	int64_t give_up = kernel_ns(CLOCK_MONOTONIC) + 50000000;
	do
		served_ns(CLOCK_MONOTONIC);
	while (shim_status(&s) && s.resyncs == seen && kernel_ns(CLOCK_MONOTONIC) < give_up);
}

/* One child at a time, each forked right after a re-synchronization in the parent (by
 * the main thread or a spinner): the child then starts while the parent's newest line
 * still serves from its previous segment, before the one it planned begins. */
static int forks(int children, int spinners)
{
	pthread_t t[3];
	start_spinners(t, spinners);
	int bad = 0;
	for (int i = 0; i < children; i++) {
		await_resync();
		pid_t pid = fork();
		if (pid == 0)
			_exit(child_check(true));
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	stop_spinners(t, spinners);
	printf("fork: children=%d failed=%d", children, bad);
	print_shim();
	return bad ? 1 : 0;
}

static int wait_child(pid_t pid, const char *how)
{
	int st;
	if (pid <= 0 || waitpid(pid, &st, 0) != pid) {
		printf("%s: could not start or wait\n", how);
		return 1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("%s: child failed (status 0x%x)\n", how, st);
		return 1;
	}
	printf("%s: ok\n", how);
	return 0;
}

static int spawn(void)
{
	char *args[] = {self, "child", NULL};
	pthread_t t[3];
	start_spinners(t, 3);
	int failed = 0;
	fflush(stdout);

	pid_t pid;
	if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0)
		pid = -1;
	failed |= wait_child(pid, "posix_spawn");

	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		execve(self, args, environ);
		_exit(127);
	}
	failed |= wait_child(pid, "vfork+exec");

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execve(self, args, environ);
		_exit(127);
	}
	failed |= wait_child(pid, "fork+exec");
	stop_spinners(t, 3);
	return failed;
}

/* ---- sleep ---- */

static int sleeps(long ms, int rounds, long upper_ms)
{
	int failed = 0;
	int64_t worst_early = 0, worst_late = 0;
	for (int i = 0; i < rounds; i++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t deadline = ns_of(&now) + ms * 1000000;
		struct timespec d = {.tv_sec = (time_t)(deadline / 1000000000), .tv_nsec = (long)(deadline % 1000000000)};
		int64_t began = kernel_ns(CLOCK_MONOTONIC);
		int rc;
		do
			rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &d, NULL);
		while (rc == EINTR);
		int64_t woke = kernel_ns(CLOCK_MONOTONIC);
		/* The kernel wakes no earlier than the deadline by its own clock; the deadline
		 * came from ours, so the wait measured by the kernel is ms within the served
		 * error, and late only by scheduling. */
		int64_t waited = woke - began;
		int64_t early = ms * 1000000 - waited, late = woke - deadline;
		if (early > worst_early)
			worst_early = early;
		if (late > worst_late)
			worst_late = late;
		if (rc != 0 || early > 1000000 || late > upper_ms * 1000000) {
			printf("# round %d: rc=%d waited %lld ns for %ld ms, late %lld ns\n", i, rc,
			       (long long)waited, ms, (long long)late);
			failed = 1;
		}
	}
	printf("sleep: ms=%ld rounds=%d worst_early_ns=%lld worst_late_ns=%lld failed=%d",
	       ms, rounds, (long long)worst_early, (long long)worst_late, failed);
	print_shim();
	return failed;
}

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 2;
	self[n] = '\0';
	setvbuf(stdout, NULL, _IOLBF, 0);

	const char *mode = argc >= 2 ? argv[1] : "";
	if (strcmp(mode, "status") == 0) {
		printf("status:");
		print_shim();
		return 0;
	}
	if (strcmp(mode, "load") == 0 && argc >= 4)
		return load(atof(argv[2]), atoi(argv[3]));
	if (strcmp(mode, "pingpong") == 0 && argc >= 3)
		return pingpong(atol(argv[2]), argc >= 4 && strcmp(argv[3], "main") == 0);
	if (strcmp(mode, "migrate") == 0 && argc >= 4)
		return migrate(atof(argv[2]), atoi(argv[3]));
	if (strcmp(mode, "signal") == 0 && argc >= 4)
		return signals(atof(argv[2]), atol(argv[3]));
	if (strcmp(mode, "fork") == 0 && argc >= 3)
		return forks(atoi(argv[2]), argc >= 4 ? atoi(argv[3]) : 3);
	if (strcmp(mode, "spawn") == 0)
		return spawn();
	if (strcmp(mode, "exec") == 0) {
		char *args[] = {self, "child", NULL};
		fflush(stdout);
		execve(self, args, environ);
		return 2;
	}
	if (strcmp(mode, "child") == 0)
		return child_check(false);
	if (strcmp(mode, "sleep") == 0 && argc >= 4)
		return sleeps(atol(argv[2]), atoi(argv[3]), argc >= 5 ? atol(argv[4]) : 200);
	fprintf(stderr, "usage: probe_stress status | load S THREADS | pingpong ROUNDS | migrate S THREADS |"
			" signal S HZ | fork CHILDREN [SPINNERS] | spawn | exec | child | sleep MS ROUNDS [UPPER_MS]\n");
	return 2;
}
