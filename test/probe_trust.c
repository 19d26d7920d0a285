/* The served clock's promises, tried as hostile or merely unusual hosts would: more
 * threads than CPUs beside a CPU hog, writers paused, signalled, jumped out of at chosen
 * points (through build/test/libtscshim-hooks.so), a time-namespace fork, a noisy, slow
 * or jumping reference (through build/test/librefclock.so). Run by bats/trust.bats
 * (short) and `make soak` (long). Each mode prints one line of counts and the shim's own
 * (status, counters) and exits 1 on a broken promise, 2 on a usage error, 3 when the
 * case cannot be staged here (bats skips).
 *
 * The truth is the system call, which nothing preloaded reaches. A reading v is checked
 * against a kernel bracket [k1, k2] taken around it: its error is how far v lies outside
 * the bracket, so a preempted check can only loosen, never fake, the bound.
 *
 *   probe_trust load THREADS SECONDS HOGS LIMIT_NS
 *   probe_trust hook pause-first|pause-all|longjmp|signal-wait POINT MS THREADS SECONDS LIMIT_NS
 *   probe_trust timens both|boottime LIMIT_NS
 *   probe_trust accuracy SECONDS LIMIT_NS
 *   probe_trust jump MS LIMIT_NS */
#define _GNU_SOURCE
#include "test_points.h"
#include "tscshim.h"

#include "kernel_ns.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static int64_t served(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ns_of(&ts);
}

static void print_shim(void)
{
	int (*fn)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	if (fn)
		fn(&s);
	printf(" loaded=%d active=%d resyncs=%llu fallbacks=%llu\n", fn != NULL, s.active,
	       (unsigned long long)s.resyncs, (unsigned long long)s.fallbacks);
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- readers that check ---- */

static _Atomic bool stop_readers;
static _Atomic int64_t truth_offset; /* what the reference double adds (a jump) */
static _Atomic int64_t check_after;  /* kernel time before which errors are not counted */

struct reader {
	pthread_t thread;
	long calls, checks, backwards;
	int64_t worst_ns, longest_still_ns;
};

static void check_one(struct reader *r, int64_t *still_value, int64_t *still_since)
{
	int64_t k1 = kernel_ns(CLOCK_MONOTONIC) + atomic_load(&truth_offset);
	int64_t v = served(CLOCK_MONOTONIC);
	int64_t k2 = kernel_ns(CLOCK_MONOTONIC) + atomic_load(&truth_offset);
	r->checks++;
	if (k1 >= atomic_load(&check_after)) {
		int64_t error = v < k1 ? k1 - v : v > k2 ? v - k2 : 0;
		if (error > r->worst_ns)
			r->worst_ns = error;
	}
	if (v == *still_value) {
		if (k1 - *still_since > r->longest_still_ns)
			r->longest_still_ns = k1 - *still_since;
	} else {
		*still_value = v;
		*still_since = k2;
	}
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	int64_t last = 0, still_value = -1, still_since = 0;
	while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++) {
			int64_t v = served(CLOCK_MONOTONIC);
			if (v < last && r->backwards++ < 3)
				printf("# stepped back %lld ns\n", (long long)(last - v));
			last = v;
		}
		r->calls += 65;
		check_one(r, &still_value, &still_since);
	}
	return NULL;
}

static _Atomic bool stop_hogs;
static void *hog_main(void *p)
{
	(void)p;
	volatile uint64_t x = 0;
	while (!atomic_load_explicit(&stop_hogs, memory_order_relaxed))
		x++;
	return NULL;
}

struct crowd {
	int n;
	struct reader *r;
};

static int crowd_start(struct crowd *c, int n)
{
	c->n = n;
	c->r = calloc((size_t)n, sizeof *c->r);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&c->r[i].thread, &attr, reader_main, &c->r[i]) != 0) {
			fprintf(stderr, "probe_trust: cannot start thread %d\n", i);
			return -1;
		}
	return 0;
}

/* Joins, prints the summary, returns 1 on a broken promise. */
static int crowd_finish(struct crowd *c, int64_t limit_ns, const char *label)
{
	atomic_store(&stop_readers, true);
	long calls = 0, checks = 0, backwards = 0;
	int64_t worst = 0, still = 0;
	for (int i = 0; i < c->n; i++) {
		pthread_join(c->r[i].thread, NULL);
		calls += c->r[i].calls;
		checks += c->r[i].checks;
		backwards += c->r[i].backwards;
		if (c->r[i].worst_ns > worst)
			worst = c->r[i].worst_ns;
		if (c->r[i].longest_still_ns > still)
			still = c->r[i].longest_still_ns;
	}
	printf("%s threads=%d calls=%ld checks=%ld backwards=%ld worst_error_ns=%lld longest_still_ns=%lld",
	       label, c->n, calls, checks, backwards, (long long)worst, (long long)still);
	print_shim();
	free(c->r);
	return backwards > 0 || worst > limit_ns;
}

static int load(int threads, double seconds, int hogs, int64_t limit)
{
	pthread_t h[64];
	hogs = hogs > 64 ? 64 : hogs;
	for (int i = 0; i < hogs; i++)
		pthread_create(&h[i], NULL, hog_main, NULL);
	struct crowd c;
	if (crowd_start(&c, threads) != 0)
		return 2;
	sleep_ns((int64_t)(seconds * 1e9));
	int bad = crowd_finish(&c, limit, "load:");
	atomic_store(&stop_hogs, true);
	for (int i = 0; i < hogs; i++)
		pthread_join(h[i], NULL);
	return bad;
}

/* ---- writers paused, signalled, jumped out of ---- */

enum hook_mode { PAUSE_FIRST, PAUSE_ALL, LONGJMP, SIGNAL_WAIT };
static enum hook_mode hook_mode;
static int hook_point;
static int64_t hook_pause_ns;
static _Atomic long hook_hits, jumps, handler_runs, handler_hangs;
static __thread bool is_victim;      /* the thread whose writer gets the signal */
static __thread sigjmp_buf victim_env;
static __thread volatile bool victim_armed;

static void on_jump(int sig)
{
	(void)sig;
	if (victim_armed) {
		atomic_fetch_add(&jumps, 1);
		siglongjmp(victim_env, 1);
	}
}

/* Waits for 1 ms of served time to pass, as an alarm handler with a timeout might; a
 * clock that stands still hangs it (2 s of kernel time counts as a hang). */
static void on_wait(int sig)
{
	(void)sig;
	int64_t s0 = served(CLOCK_MONOTONIC), k0 = kernel_ns(CLOCK_MONOTONIC);
	while (served(CLOCK_MONOTONIC) - s0 < 1000000) {
		if (kernel_ns(CLOCK_MONOTONIC) - k0 > 2000000000) {
			atomic_fetch_add(&handler_hangs, 1);
			return;
		}
	}
	atomic_fetch_add(&handler_runs, 1);
}

static void hook(int point)
{
	if (point != hook_point)
		return;
	switch (hook_mode) {
	case PAUSE_FIRST:
		if (atomic_fetch_add(&hook_hits, 1) == 0)
			sleep_ns(hook_pause_ns);
		break;
	case PAUSE_ALL:
		if (atomic_fetch_add(&hook_hits, 1) < 64)
			sleep_ns(hook_pause_ns);
		break;
	case LONGJMP:
		if (is_victim && atomic_load(&jumps) < 50) {
			atomic_fetch_add(&hook_hits, 1);
			raise(SIGUSR1);
		}
		break;
	case SIGNAL_WAIT:
		if (is_victim && atomic_load(&handler_runs) + atomic_load(&handler_hangs) < 20) {
			atomic_fetch_add(&hook_hits, 1);
			raise(SIGUSR2);
		}
		break;
	}
}

static _Atomic bool stop_victim;
static void *victim_main(void *p)
{
	(void)p;
	is_victim = true;
	while (!atomic_load(&stop_victim)) {
		if (sigsetjmp(victim_env, 1) == 0) {
			victim_armed = true;
			for (int i = 0; i < 1000; i++)
				served(CLOCK_MONOTONIC);
		}
		victim_armed = false;
	}
	return NULL;
}

static int hook_run(const char *mode, const char *point, int64_t ms, int threads, double seconds,
		    int64_t limit)
{
	void (**slot)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
	if (!slot) {
		fprintf(stderr, "probe_trust: needs build/test/libtscshim-hooks.so preloaded\n");
		return 2;
	}
	static const char *const modes[] = {"pause-first", "pause-all", "longjmp", "signal-wait"};
	static const char *const points[] = {"", "anchored", "claimed", "published", "kernel_read"};
	hook_mode = (enum hook_mode)-1;
	for (int i = 0; i < 4; i++)
		if (strcmp(mode, modes[i]) == 0)
			hook_mode = (enum hook_mode)i;
	for (int i = 1; i < 5; i++)
		if (strcmp(point, points[i]) == 0)
			hook_point = i;
	if ((int)hook_mode < 0 || !hook_point)
		return 2;
	hook_pause_ns = ms * 1000000;
	signal(SIGUSR1, on_jump);
	signal(SIGUSR2, on_wait);
	served(CLOCK_MONOTONIC);
	*slot = hook;

	pthread_t victim;
	bool with_victim = hook_mode == LONGJMP || hook_mode == SIGNAL_WAIT;
	if (with_victim)
		pthread_create(&victim, NULL, victim_main, NULL);
	struct crowd c;
	if (crowd_start(&c, threads) != 0)
		return 2;
	sleep_ns((int64_t)(seconds * 1e9));
	if (with_victim) {
		atomic_store(&stop_victim, true);
		pthread_join(victim, NULL);
	}
	*slot = NULL;
	/* After the last pause ends, time must still flow for everyone. */
	sleep_ns(hook_pause_ns + 20000000);
	char label[128];
	snprintf(label, sizeof label, "hook: mode=%s point=%s hits=%ld jumps=%ld handler_runs=%ld handler_hangs=%ld",
		 mode, point, atomic_load(&hook_hits), atomic_load(&jumps), atomic_load(&handler_runs),
		 atomic_load(&handler_hangs));
	int bad = crowd_finish(&c, limit, label);
	if (atomic_load(&hook_hits) == 0) {
		printf("# the hook never ran: nothing was tried\n");
		bad = 1;
	}
	return bad || atomic_load(&handler_hangs) > 0;
}

/* ---- time namespaces ---- */

static int64_t worst_clock_error(clockid_t c, int rounds)
{
	int64_t worst = 0;
	for (int i = 0; i < rounds; i++) {
		int64_t k1 = kernel_ns(c), v = served(c), k2 = kernel_ns(c);
		int64_t e = v < k1 ? k1 - v : v > k2 ? v - k2 : 0;
		if (e > worst)
			worst = e;
		if (i % 1000 == 0)
			sleep_ns(100000);
	}
	return worst;
}

static int timens(const char *which, int64_t limit)
{
	served(CLOCK_MONOTONIC); /* the parent has a line to hand down */
	served(CLOCK_BOOTTIME);
	if (unshare(CLONE_NEWTIME) != 0) {
		printf("timens: cannot unshare a time namespace here: %s\n", strerror(errno));
		return 3;
	}
	int fd = open("/proc/self/timens_offsets", O_WRONLY);
	const char *text = strcmp(which, "boottime") == 0 ? "boottime 1000 0\n"
							  : "monotonic 1000 0\nboottime 1000 0\n";
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		printf("timens: cannot set offsets: %s\n", strerror(errno));
		return 3;
	}
	close(fd);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int64_t mono = worst_clock_error(CLOCK_MONOTONIC, 20000);
		int64_t boot = worst_clock_error(CLOCK_BOOTTIME, 20000);
		int64_t real = worst_clock_error(CLOCK_REALTIME, 2000);
		printf("timens: child offsets=%s worst_monotonic_ns=%lld worst_boottime_ns=%lld worst_realtime_ns=%lld",
		       which, (long long)mono, (long long)boot, (long long)real);
		print_shim();
		fflush(stdout);
		exit(mono > limit || boot > limit || real > limit);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* ---- accuracy against a noisy, slow or jumping reference ---- */

static int accuracy(double seconds, int64_t limit)
{
	struct crowd c;
	if (crowd_start(&c, 1) != 0)
		return 2;
	sleep_ns((int64_t)(seconds * 1e9));
	return crowd_finish(&c, limit, "accuracy:");
}

static int jump(int64_t ms, int64_t limit)
{
	void (*set_jump)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "tsctest_set_jump");
	if (!set_jump) {
		fprintf(stderr, "probe_trust: needs build/test/librefclock.so preloaded after the shim\n");
		return 2;
	}
	struct crowd c;
	if (crowd_start(&c, 2) != 0)
		return 2;
	sleep_ns(100000000);
	/* The kernel, as the shim sees it, jumps ahead: until the next re-synchronization
	 * the served clock is behind by the jump; 20 ms later it must be within the bound. */
	atomic_store(&check_after, kernel_ns(CLOCK_MONOTONIC) + ms * 1000000 + 20000000);
	atomic_store(&truth_offset, ms * 1000000);
	set_jump(ms * 1000000);
	sleep_ns(300000000);
	char label[64];
	snprintf(label, sizeof label, "jump: ms=%lld", (long long)ms);
	return crowd_finish(&c, limit, label);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "load") == 0 && argc == 6)
		return load(atoi(argv[2]), atof(argv[3]), atoi(argv[4]), atoll(argv[5]));
	if (strcmp(mode, "hook") == 0 && argc == 8)
		return hook_run(argv[2], argv[3], atoll(argv[4]), atoi(argv[5]), atof(argv[6]), atoll(argv[7]));
	if (strcmp(mode, "timens") == 0 && argc == 4)
		return timens(argv[2], atoll(argv[3]));
	if (strcmp(mode, "accuracy") == 0 && argc == 4)
		return accuracy(atof(argv[2]), atoll(argv[3]));
	if (strcmp(mode, "jump") == 0 && argc == 4)
		return jump(atoll(argv[2]), atoll(argv[3]));
	fprintf(stderr, "usage: see the comment at the top of test/probe_trust.c\n");
	return 2;
}
