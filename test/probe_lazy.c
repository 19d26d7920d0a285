/* The decision at the first read, as hostile hosts make that read.
 *   probe_lazy none                     reads no clock at all (the stats line and the
 *                                       verbose line say whether anything was decided)
 *   probe_lazy handler BOUND_NS         the first clock read of the process is in a
 *                                       signal handler; it and 1000 reads after it must
 *                                       lie within BOUND_NS of the kernel's clock
 *   probe_lazy threads BOUND_NS         two threads make the first read at once, then
 *                                       read 100000 times each, every value within
 *                                       BOUND_NS of the kernel's clock
 * Each value is bracketed by two reads of the kernel's CLOCK_MONOTONIC through the
 * system call, which no preload reaches. Exit 1 on any value outside its bracket. */
#define _GNU_SOURCE
#include "kernel_clock.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t bound_ns;
static _Atomic long violations;
static _Atomic int64_t worst_ns;

/* One served read between two kernel reads: how far outside [before, after] it lies. */
static void checked_read(void)
{
	struct timespec ts;
	int64_t before = kernel_ns(CLOCK_MONOTONIC);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t after = kernel_ns(CLOCK_MONOTONIC);
	int64_t v = ns_of(&ts);
	int64_t off = v < before ? before - v : v > after ? v - after : 0;
	int64_t seen = atomic_load(&worst_ns);
	while (off > seen && !atomic_compare_exchange_weak(&worst_ns, &seen, off))
		;
	if (off > bound_ns)
		atomic_fetch_add(&violations, 1);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	checked_read(); /* the process's first clock read: the decision runs here */
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

static int report(const char *what)
{
	printf("%s: violations=%ld worst_ns=%lld bound_ns=%lld\n", what, (long)atomic_load(&violations),
	       (long long)atomic_load(&worst_ns), (long long)bound_ns);
	return atomic_load(&violations) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "none") == 0) {
		puts("none: no clock read");
		return 0;
	}
	if (argc != 3)
		return 2;
	bound_ns = atoll(argv[2]);
	if (strcmp(argv[1], "handler") == 0) {
		struct sigaction sa = {.sa_handler = on_signal};
		sigaction(SIGUSR1, &sa, NULL);
		raise(SIGUSR1);
		if (!handled)
			return 2;
		for (int i = 0; i < 1000; i++)
			checked_read();
		return report("handler");
	}
	if (strcmp(argv[1], "threads") == 0) {
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
