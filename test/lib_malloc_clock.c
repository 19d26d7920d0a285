/* A malloc wrapper that reads the clock on every allocation, as some allocators and
 * profilers do: dlsym inside the shim's lookup may allocate, and so re-enter the clock. */
#define _GNU_SOURCE
#include <stddef.h>
#include <time.h>

static long calls;

#ifdef __GLIBC__
extern void *__libc_malloc(size_t size);
#define next_malloc __libc_malloc
#else
/* musl has no __libc_malloc: the next malloc is libc's, found with dlsym, which in musl
 * does not allocate. Its free and realloc take what it returns, so they stay musl's. */
#include <dlfcn.h>
static void *next_malloc(size_t size)
{
	static void *(*next)(size_t);
	if (!next)
		next = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	return next(size);
}
#endif

void *malloc(size_t size)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		calls++;
	return next_malloc(size);
}
