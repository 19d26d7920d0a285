#define _GNU_SOURCE
#include "real.h"
#include "load_page.h"

#include "kernel_clock.h"

#include <dlfcn.h>

/* Names as arrays, not pointers: no relocation, so loading the shim writes no page for
 * them (every page a process dirties at load costs it a fault). */
static const char real_names[REAL_FUNCTIONS][16] = {
	[REAL_CLOCK_GETTIME] = "clock_gettime",
	[REAL_GETTIMEOFDAY] = "gettimeofday",
	[REAL_TIMESPEC_GET] = "timespec_get",
};
ON_LOAD_PAGE struct real_symbol real_symbols[REAL_FUNCTIONS];

void *real_look_up(enum real_function f)
{
	struct real_symbol *sym = &real_symbols[f];
	int expected = 0;
	if (!atomic_compare_exchange_strong(&sym->state, &expected, 1))
		return atomic_load_explicit(&sym->address, memory_order_acquire);
	atomic_store_explicit(&sym->address, dlsym(RTLD_NEXT, real_names[f]), memory_order_release);
	atomic_store(&sym->state, 2);
	return atomic_load(&sym->address);
}

int real_clock_gettime(clockid_t clock, struct timespec *ts)
{
	clock_gettime_fn *fn = (clock_gettime_fn *)real_function(REAL_CLOCK_GETTIME);
	if (__builtin_expect(!fn, 0))
		return kernel_clock_gettime(clock, ts);
	return fn(clock, ts);
}
