/* Where the records are, and whether one may answer, as the load checks it
 * (shim/record_load.c): the load's questions, and the per-user cache's path and owner. */
#ifndef SHIM_RECORD_LOAD_H
#define SHIM_RECORD_LOAD_H

#include "options.h"

#include <stdbool.h>
#include <sys/types.h>

/* At load, without a call into libc, no file opened, nothing written but the load page:
 * whether a record may answer this boot without measuring, from one lstat of the
 * machine-wide record: a symbolic link, root's, of a record's length, made since this
 * boot began (the boot's time by two clock system calls: a record of an earlier boot kept on a
 * persistent path, which no process can mark, must not stop every start from measuring).
 * Else from one or two of the per-user cache: a regular file (no symlink) of the process's
 * effective uid, writable by nobody else, of a record's size, not marked for a measurement
 * (record_mark_stale); or this build's copy beside it, where the cache is marked. The
 * constructor asks it, to measure at load when nothing can answer (a cold start); a "may"
 * that turns out wrong makes that process pass through, and marks the cache for the next
 * start. */
bool record_may_answer(const char *system_record, const char *cache, const char *xdg_runtime_dir);

/* Whether the kernel's boot id can be read (/proc mounted): without it no record can be
 * trusted or kept, and a measurement would be thrown away. One stat, at load. */
bool record_boot_known(void);

/* Whether the machine-wide record passed the load's check: a read looks at it only then
 * (a forced decision always does: it may have been written since). */
bool record_system_passed_load(void);

/* The boot's wall-clock time the load's check of the machine-wide record took (REALTIME
 * less BOOTTIME, by system calls), 0 where it took none: the decision's key, which then
 * reads no clock for it. */
uint64_t record_boot_wall_at_load(void);

/* The per-user cache's path (the option, or the default), or NULL for none; no system
 * call where the load made it already. The cache, and its lock, belong to the effective
 * uid the process started with (the auxiliary vector's). */
const char *record_cache_path(const struct option_values *o);

/* The effective uid the per-user cache belongs to: the one the process started with, from
 * the auxiliary vector (no system call). */
uid_t record_cache_owner(void);

#endif
