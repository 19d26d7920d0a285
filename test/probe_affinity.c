/* A process whose verdict covered only the CPUs allowed at load widens its affinity to
 * every CPU: the shim must stop serving at its next re-synchronization rather than trust
 * counters it never compared, and tscshim_status() must say why.
 *
 *   taskset -c 0 probe_affinity
 * prints: before=<active> after=<active> served_after=<0|1> reason=<text> */
#define _GNU_SOURCE
#include "tscshim.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef int status_fn(struct tscshim_status *);

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	status_fn *status = (status_fn *)dlsym(RTLD_DEFAULT, "tscshim_status");
	if (!status) {
		puts("no shim");
		return 2;
	}
	struct tscshim_status st;
	now_ns();
	status(&st);
	int before = st.active;

	cpu_set_t all;
	CPU_ZERO(&all);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (long c = 0; c < cpus && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	if (sched_setaffinity(0, sizeof all, &all) != 0) {
		perror("sched_setaffinity");
		return 2;
	}
	/* Well past a life (0.5 ms at the default error bound) and the resync interval. */
	long long end = now_ns() + 50000000;
	while (now_ns() < end)
		;
	status(&st);
	printf("before=%d after=%d reason=%s\n", before, st.active, st.reason);
	return 0;
}
