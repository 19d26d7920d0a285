/* The kernel's own clock functions, read from the vDSO the kernel maps into every process
 * (getauxval(AT_SYSINFO_EHDR)). Where the C library's clock_gettime only wraps the
 * vDSO's (glibc's does: a pointer, a call, errno on failure), a pass-through call may
 * call the vDSO itself and cost what the C library's function costs, although the shim
 * stands in front of it (shim/interpose.c).
 *
 * Pure reads of memory the kernel mapped: no lock, no allocation, no system call;
 * async-signal-safe, so it may run in a decision that a signal handler's read makes. */
#ifndef SHIM_VDSO_H
#define SHIM_VDSO_H

#include <stdint.h>

/* The address of the vDSO's global function `name` in the image loaded at base (an
 * ELF header; 0 for none), or NULL: no such function, or an image this cannot read
 * (no SysV hash table, an odd layout). */
void *vdso_function_at(uintptr_t base, const char *name);

/* The same in this process's vDSO (NULL where it has none, as under valgrind). */
void *vdso_function(const char *name);

#endif
