/* Records: where the decision finds a verdict and a rate (and the benefit gate's costs)
 * instead of measuring them, how it measures when none answers, and where it keeps what
 * it measured. The format and the matching rules are calib/cache.h's; the trust rules for
 * each file are doc/STARTUP.md's.
 *
 * Everything here runs inside the decision: no heap, file buffers in this module's static
 * storage (the decision runs once), messages as fixed strings or in that storage. */
#ifndef SHIM_RECORD_H
#define SHIM_RECORD_H

#include "cache.h"
#include "estimate_child.h"
#include "options.h"

#include <stdatomic.h>
#include <stdint.h>

/* The machine-wide record's file as read now (in the buffer record_cache_file reads into
 * too: a record kept from it is copied first), or NULL (missing, untrusted, corrupt, said
 * at TSCSHIM_VERBOSE=2, at 1 when not missing). Five system calls: its directory's lstat
 * (root's, writable by nobody else), an open (no symlink), an fstat (root's file, writable
 * by nobody else), a read, a close. */
const struct cache_file *record_system_file(const struct option_values *o);

/* Whether the machine-wide record passed the load's checks: a read looks at it only then
 * (a forced decision always does: it may have been written since). */
bool record_system_passed_load(void);

/* Whether a record may answer this boot without measuring, judged at load from one or
 * two lstat calls (made directly, no libc), no file read, no clock read, nothing written:
 * the machine-wide record, or else the per-user cache, is a regular file (no symlink) of
 * its owner (root; the process's effective uid), writable by nobody else, of a record's
 * size, not marked for a measurement (record_mark_stale). The constructor asks it, to measure at load when nothing
 * can answer (a cold start, as bounded as ever) and otherwise to leave the decision to
 * the due read, which never measures: a "may" that turns out wrong (a record for another
 * CPU set, a copy with fresh times) makes that process pass through, and marks the cache
 * for a measurement at the next start's load (record_mark_stale). */
bool record_may_answer(const char *system_record, const char *cache, const char *xdg_runtime_dir);

/* Whether the kernel's boot id can be read (/proc mounted): without it no record can be
 * trusted or kept, and a measurement would be thrown away. One stat, at load. */
bool record_boot_known(void);

/* Sets the per-user cache's times back to 1970, so that the next start measures at load
 * (record_may_answer): a read found it unable to answer this process. */
void record_mark_stale(const char *path);

/* The per-user cache's path (the option, or the default), or NULL for none; no system
 * call where the load found it already. The cache, and its lock, belong to the effective
 * uid the process started with (the auxiliary vector's): a program that changed it since
 * reads the cache of the user it started as, or none. */
const char *record_cache_path(const struct option_values *o);

/* This build's per-user cache file, as read now, or NULL (none usable: "cache ..." said at
 * TSCSHIM_VERBOSE=2, and at 1 when it exists but is unusable). Where the file at path holds
 * another format version (another build's), this build's records are in a file beside it
 * (cache_format_sibling), which is read instead: the two never destroy each other's. */
const struct cache_file *record_cache_file(const char *path);

/* Only one process measures for a cache at a time: the first takes "<cache>.lock" (an
 * flock, released by the kernel however the process ends) and measures; the others wait
 * for its record, at most wait_ns. Returns the locked descriptor, RECORD_LOCK_NONE when
 * there is no usable lock (measure anyway), or RECORD_LOCK_WAITED when another process
 * measured meanwhile (read the cache again). */
enum { RECORD_LOCK_NONE = -1, RECORD_LOCK_WAITED = -2 };
int record_lock(const char *path, uint64_t wait_ns);

/* Measures in a child process (calib/estimate_child.h) with the options' budget, into
 * *m and the record *out for key (inconclusive when the child did not answer, with
 * m->problem saying why). Returns 0, or -1 with *why when nothing may be measured. */
int record_measure(const struct option_values *o, const struct cache_key *key,
		   const struct cache_record *previous, struct cache_record *out,
		   struct measurement *m, const char **why);

/* Puts rec into the per-user cache at path (or the file beside it, where path holds
 * another build's format), keeping its other records; says in record_note() why not when
 * it cannot. */
void record_keep(const char *path, const struct cache_record *rec);

/* The word the gate claims the decision with (shim/gate.c), on the pages the kernel
 * wipes in a fork child (MADV_WIPEONFORK, once marked): a child forked while another
 * thread decides finds it free, while a vfork or CLONE_VM child, which shares the memory,
 * finds it held. */
_Atomic uint64_t *record_decision_claim(void);

/* Room for decision.c's state on the same page, beside the claim and the buffers (a
 * decision then faults in that one page of data and its stack's). Its own until the
 * decision ends: one decision at a time in an address space. */
#define RECORD_DECISION_STATE_SIZE 1152
void *record_decision_state(void);

/* What went wrong with the per-user cache, for the verbose line; "" if nothing. */
const char *record_note(void);

/* The wait before an inconclusive record is measured again, as text for a reason:
 * "estimate inconclusive<detail>; measured again in N s". */
void record_inconclusive_reason(const struct cache_record *rec, const char *detail, char *out,
				size_t size);

#endif
