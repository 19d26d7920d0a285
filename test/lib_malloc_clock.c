/* A malloc wrapper that reads the clock on every allocation, as some allocators and
 * profilers do: dlsym inside the shim's lookup may allocate, and so re-enter the clock. */
#define _GNU_SOURCE
#include <stddef.h>
#include <time.h>

extern void *__libc_malloc(size_t size);
static long calls;

void *malloc(size_t size)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		calls++;
	return __libc_malloc(size);
}
