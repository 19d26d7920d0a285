/* Which C library this object was built for, which one the process runs on, and the few
 * calls whose symbol exists in only one of them.
 *
 * The shim is preloaded into programs of either library: the glibc build can land in a
 * musl program (an Alpine container, `/etc/ld.so.preload` on a mixed machine), the musl
 * build in a glibc one. musl resolves every symbol at load, so one unresolved glibc-only
 * symbol kills the program before main (exit 127); and code built against one library's
 * headers makes assumptions the other need not honour. So: every symbol that one library
 * lacks is referenced weakly (here, nowhere else), and under the wrong library the shim
 * passes every call through (libc_check).
 *
 * The running library is found without calling anything: by which of two weak references
 * the loader resolved, each to a public function only one library defines. */
#ifndef CALIB_LIBC_KIND_H
#define CALIB_LIBC_KIND_H

#include "system.h"

#include <pthread.h>
#include <stddef.h>

enum libc_kind { LIBC_OTHER, LIBC_GLIBC, LIBC_MUSL };

/* What this object was compiled against (the musl build says so with -DTSCSHIM_LIBC_MUSL,
 * since musl defines no macro of its own). */
enum libc_kind libc_built_for(void);

/* What the process runs on: musl if its __freadahead is there (a musl-only function,
 * present too under gcompat, the glibc emulation on musl, which defines glibc's marker),
 * else glibc if gnu_get_libc_version is there, else another library. Async-signal-safe. */
enum libc_kind libc_running(void);

/* "glibc", "musl", "another C library". */
const char *libc_kind_name(enum libc_kind kind);

/* 0 when the process runs on the library this object was built for; else -1 with the
 * reason in why (one line, no newline): "built for glibc, but the program runs on musl:
 * preload the library built for musl". Calls nothing but string copies. */
int libc_check(char *why, size_t size);

/* Registers `child` to run in the child after fork(), as pthread_atfork(NULL, NULL, child)
 * would: glibc's pthread_atfork is a static stub in libc_nonshared.a around the glibc-only
 * __register_atfork, which is reached weakly instead. Returns 0, or ENOSYS when the running
 * library offers neither. */
int libc_atfork_child(void (*child)(void));

/* pthread_attr_setaffinity_np(attr, cpus) where the running library has it (glibc); ENOSYS
 * where it has not (musl): the thread must then pin itself (sched_setaffinity(0, ...)). */
int libc_attr_setaffinity(pthread_attr_t *attr, const struct cpu_mask *cpus);

#endif
