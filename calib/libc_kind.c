/* Which C library: see libc_kind.h. Every symbol only one library defines is declared weak
 * here, so that no loader refuses the object for its absence: a weak reference the loader
 * cannot resolve reads as NULL (glibc and musl both), where a strong one kills the program
 * under musl ("Error relocating ...: symbol not found", exit 127). */
#define _GNU_SOURCE
#include "libc_kind.h"
#include "load_page.h"

#include "text.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>

#if defined(TSCSHIM_LIBC_MUSL) && defined(__GLIBC__)
#error "TSCSHIM_LIBC_MUSL set, but these are glibc's headers: build with musl-gcc"
#endif

/* The markers. Declared here, not taken from the headers: each library declares only its
 * own (glibc's is in <gnu/libc-version.h>, musl's in <stdio_ext.h>). */
extern const char *gnu_get_libc_version(void) __attribute__((weak));
extern size_t __freadahead(FILE *) __attribute__((weak));

/* The calls that differ. glibc's pthread_atfork is no exported function (a stub in
 * libc_nonshared.a calls __register_atfork with the object's __dso_handle, so that the
 * handler goes when the object is unloaded); musl exports pthread_atfork itself and has
 * no __register_atfork. pthread_attr_setaffinity_np is glibc's alone. The shim is linked
 * without the C runtime's start files, so it has no __dso_handle: its handler is
 * registered with no object, and -z nodelete keeps the shim loaded (Makefile). */
#ifdef __GLIBC__
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso) __attribute__((weak));
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
#pragma weak pthread_attr_setaffinity_np
#else
#pragma weak pthread_atfork
extern int pthread_attr_setaffinity_np(pthread_attr_t *, size_t, const cpu_set_t *)
	__attribute__((weak));
#endif

LOAD_PATH enum libc_kind libc_built_for(void)
{
#if defined(TSCSHIM_LIBC_MUSL)
	return LIBC_MUSL;
#elif defined(__GLIBC__) && !defined(__UCLIBC__)
	return LIBC_GLIBC; /* uClibc defines __GLIBC__ too */
#else
	return LIBC_OTHER;
#endif
}

/* An address the loader filled in, through a compiler barrier: a weak function's address
 * may be NULL, and the test must be made at run time, in every build. */
LOAD_PATH static int resolved(void (*fn)(void))
{
	__asm__("" : "+r"(fn));
	return fn != NULL;
}

LOAD_PATH enum libc_kind libc_running(void)
{
	if (resolved((void (*)(void))__freadahead))
		return LIBC_MUSL;
	if (resolved((void (*)(void))gnu_get_libc_version))
		return LIBC_GLIBC;
	return LIBC_OTHER;
}

const char *libc_kind_name(enum libc_kind kind)
{
	switch (kind) {
	case LIBC_GLIBC:
		return "glibc";
	case LIBC_MUSL:
		return "musl";
	default:
		return "another C library";
	}
}

LOAD_PATH int libc_check(char *why, size_t size)
{
	enum libc_kind built = libc_built_for(), running = libc_running();
	struct text t = text_start(why, size);
	if (built == running && built != LIBC_OTHER)
		return 0;
	text_add(&t, "built for ");
	text_add(&t, libc_kind_name(built));
	text_add(&t, ", but the program runs on ");
	text_add(&t, libc_kind_name(running));
	if (running == LIBC_GLIBC || running == LIBC_MUSL) {
		text_add(&t, ": preload the library built for ");
		text_add(&t, libc_kind_name(running));
	}
	return -1;
}

int libc_atfork_child(void (*child)(void))
{
#ifdef __GLIBC__
	if (!resolved((void (*)(void))__register_atfork))
		return ENOSYS;
	return __register_atfork(NULL, NULL, child, &__dso_handle == NULL ? NULL : __dso_handle);
#else
	if (!resolved((void (*)(void))pthread_atfork))
		return ENOSYS;
	return pthread_atfork(NULL, NULL, child);
#endif
}

int libc_attr_setaffinity(pthread_attr_t *attr, const struct cpu_mask *cpus)
{
	if (!resolved((void (*)(void))pthread_attr_setaffinity_np))
		return ENOSYS;
	_Static_assert(sizeof cpus->word == sizeof(cpu_set_t), "a cpu_mask is a cpu_set_t");
	return pthread_attr_setaffinity_np(attr, sizeof cpus->word, (const cpu_set_t *)(const void *)cpus->word);
}
