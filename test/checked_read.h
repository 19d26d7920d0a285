/* The probes' checked read: one served CLOCK_MONOTONIC read between two reads of the
 * kernel's clock (kernel_ns.h, the system call itself), and how far outside that bracket it
 * lies; the worst and the count beyond bound_ns are kept (atomically: threads and signal
 * handlers read too) and said by report(). Each probe that includes it has its own. */
#ifndef TEST_CHECKED_READ_H
#define TEST_CHECKED_READ_H

#include "kernel_ns.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static int64_t bound_ns;
static _Atomic long violations;
static _Atomic int64_t worst_ns;

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

/* "WHAT: violations=V worst_ns=W bound_ns=B"; 1 if any read was out of bounds, else 0. */
static int report(const char *what)
{
	printf("%s: violations=%ld worst_ns=%lld bound_ns=%lld\n", what, (long)atomic_load(&violations),
	       (long long)atomic_load(&worst_ns), (long long)bound_ns);
	return atomic_load(&violations) ? 1 : 0;
}

#endif
