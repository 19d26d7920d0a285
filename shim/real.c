/* The real functions found at load (shim/real.h): from the loader's tables, else dlsym(RTLD_NEXT), never ourselves. */
#define _GNU_SOURCE
#include "steps.h"
#include "real.h"
#include "load_page.h"

#include "environment.h"
#include "next_symbol.h"

#include "kernel_clock.h"
#include "libc_kind.h"
#include "raw_syscall.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

/* On the load page: the constructor's check reads the names, and a page of their own
 * would be one more fault for every process. */
static char real_names[REAL_FUNCTIONS][16] ON_LOAD_PAGE = {
	[REAL_CLOCK_GETTIME] = "clock_gettime",
	[REAL_GETTIMEOFDAY] = "gettimeofday",
	[REAL_TIMESPEC_GET] = "timespec_get",
};
ON_LOAD_PAGE void *_Atomic real_addresses[REAL_FUNCTIONS];
/* The C library, when the constructor found that it holds the next definitions; its
 * table answers each first need. NULL otherwise (dlsym answered at load). */
static const struct link_map *c_library ON_LOAD_PAGE;
static const char *dlsym_why ON_LOAD_PAGE; /* why dlsym was asked, else NULL */
static bool found_all ON_LOAD_PAGE;        /* the constructor has settled where they come from */

/* Ours, as the loader knows it: the list entry whose dynamic section this is. */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));
/* glibc's list of loaded objects; weak, for a loader that has none (musl's). */
#pragma weak _r_debug

#ifndef TSCSHIM_LIBC_MUSL
/* Variables that make glibc's dlsym answer otherwise than the tables do: a weak
 * definition passed over for a later strong one, an auditor's redirections. */
static char dynamic_weak_variable[] ON_LOAD_PAGE = "LD_DYNAMIC_WEAK";
static char audit_variable[] ON_LOAD_PAGE = "LD_AUDIT";
#endif

LOAD_PATH static const struct link_map *definer_from_list(const char **why)
{
#ifdef TSCSHIM_LIBC_MUSL
	*why = "the musl build asks dlsym";
	return NULL;
#else
	if (libc_running() != LIBC_GLIBC || !&_r_debug || !_r_debug.r_map) {
		*why = "not glibc's loader";
		return NULL;
	}
	extern char **environ;
	if (environment_value(environ, dynamic_weak_variable) || environment_value(environ, audit_variable)) {
		*why = "LD_DYNAMIC_WEAK or LD_AUDIT is set";
		return NULL;
	}
	const char *names[REAL_FUNCTIONS];
	for (int f = 0; f < REAL_FUNCTIONS; f++)
		names[f] = real_names[f];
	return next_symbol_definer(_r_debug.r_map, _DYNAMIC, getauxval(AT_SYSINFO_EHDR), names, REAL_FUNCTIONS,
				   why);
#endif
}

LOAD_PATH void real_find_all(void)
{
	const char *why = "";
	const struct link_map *definer = definer_from_list(&why);
	if (definer) {
		__atomic_store_n(&c_library, definer, __ATOMIC_RELEASE);
	} else {
		dlsym_why = why;
		for (int f = 0; f < REAL_FUNCTIONS; f++)
			atomic_store_explicit(&real_addresses[f], dlsym(RTLD_NEXT, real_names[f]),
					      memory_order_release);
	}
	__atomic_store_n(&found_all, true, __ATOMIC_RELEASE);
}

static void *look_up_in_c_library(enum real_function f)
{
	const struct link_map *definer = __atomic_load_n(&c_library, __ATOMIC_ACQUIRE);
	if (!definer && !__atomic_load_n(&found_all, __ATOMIC_ACQUIRE)) {
		/* Before the constructor (another library's constructor reads the clock): the
		 * loader has bound every object by then, so its list can answer already; where
		 * it cannot, the system call serves until the constructor asks dlsym. */
		const char *why;
		definer = definer_from_list(&why);
		if (definer)
			__atomic_store_n(&c_library, definer, __ATOMIC_RELEASE);
	}
	void *address = NULL;
	if (!definer || next_symbol_in_object(definer, real_names[f], gnu_hash(real_names[f]), &address) != NEXT_FOUND)
		return NULL; /* not yet, or an odd kind of symbol: the caller takes the system call */
	atomic_store_explicit(&real_addresses[f], address, memory_order_release);
	return address;
}

void *real_look_up(enum real_function f)
{
	/* Reading the loader's list asks getauxval, which sets errno where the process has no
	 * vDSO: the caller's call leaves errno as it found it. */
	int saved = errno;
	void *address = look_up_in_c_library(f);
	errno = saved;
	return address;
}

bool real_found_by_dlsym(const char **why)
{
	*why = dlsym_why ? dlsym_why : "";
	return dlsym_why != NULL;
}

bool real_is_c_library(void)
{
	return __atomic_load_n(&c_library, __ATOMIC_ACQUIRE) != NULL;
}

/* -1 and errno from a system call's negated error, as the C library returns it. */
static int errno_return(long rc)
{
	if (rc >= 0)
		return (int)rc;
	errno = (int)-rc;
	return -1;
}

int real_clock_gettime(clockid_t clock, struct timespec *ts)
{
#ifdef TSCTEST_STEPS_BUILD
	steps_kernel_read();
#endif
	clock_gettime_fn *fn = (clock_gettime_fn *)real_function(REAL_CLOCK_GETTIME);
	if (__builtin_expect(fn != NULL, 1))
		return fn(clock, ts);
	return errno_return(kernel_clock_gettime(clock, ts));
}

int real_gettimeofday(struct timeval *tv, void *tz)
{
	gettimeofday_fn *fn = (gettimeofday_fn *)real_function(REAL_GETTIMEOFDAY);
	if (__builtin_expect(fn != NULL, 1))
		return fn(tv, tz);
	return errno_return(raw_syscall4(SYS_gettimeofday, (long)tv, (long)tz, 0, 0));
}

int real_timespec_get(struct timespec *ts, int base)
{
	timespec_get_fn *fn = (timespec_get_fn *)real_function(REAL_TIMESPEC_GET);
	if (__builtin_expect(fn != NULL, 1))
		return fn(ts, base);
	/* C11: base on success, 0 for a base it does not know or a failure. */
	if (base != TIME_UTC || ts == NULL)
		return 0;
	return kernel_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}
