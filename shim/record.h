/* Records: the files where the decision finds a verdict and a rate (and the benefit
 * gate's costs) instead of measuring them, how it measures when none answers, and where
 * it keeps what it measured. The format and the matching rules are calib/cache.h's; the
 * trust rules for each file are doc/STARTUP.md's.
 *
 * The machine-wide record is a symbolic link whose target is the record's text: the
 * load reads it whole with one readlinkat, onto the load page, and the decision checks
 * its directory with one lstat. The per-user cache is a regular file: the load lstats it,
 * the decision reads it (open, read, close; an fstat too for root). Everything here runs
 * inside the decision or the load: no heap, buffers in static storage (one decision at a
 * time), messages as fixed strings or in that storage. */
#ifndef SHIM_RECORD_H
#define SHIM_RECORD_H

#include "cache.h"
#include "estimate_child.h"
#include "options.h"

#include <stdbool.h>
#include <stdint.h>

/* The first page of the fork-wiped scratch (shim/line.h: its first 128 bytes the line's
 * state) is the gate's: the claim and the stack of a decision at a read. The record's
 * buffers (a long file's text, a whole cache to rewrite) begin after it. */
#define RECORD_SCRATCH_GATES_BYTES (4096 - 128)

/* A record file's text as read now. */
struct record_text {
	const char *text;
	size_t len;
	const char *path;  /* the file it is the text of, for messages and marks */
	bool machine_wide; /* the machine-wide record's, else a per-user cache's */
};

/* The machine-wide record's text, or false (missing, untrusted: said at TSCSHIM_VERBOSE=2,
 * at 1 when not missing): its directory checked (root's, not a symlink, writable by nobody
 * else: one lstat), then the link's target read (one readlinkat), onto the load page where
 * it fits. */
bool record_system_text(const struct option_values *o, struct record_text *t);

/* This build's per-user cache text, or false (none usable: said at TSCSHIM_VERBOSE=2, and
 * at 1 when it exists but is unusable). Where the file at path holds another format
 * version (another build's), this build's records are in the file beside it
 * (cache_format_sibling), read instead: the two never destroy each other's. */
bool record_cache_text(const char *path, struct record_text *t);

/* What a record's text answers for key (cache_answer), or false for a text that is not a
 * usable record (said at TSCSHIM_VERBOSE as record_cache_text says). */
bool record_answer(const struct record_text *t, const struct cache_key *key, struct cache_record *out,
		   struct cache_answer *a);

/* Sets the per-user cache's times back to 1970, and those of this build's file beside
 * it, so that the next start measures at load (record_may_answer): a read found it unable
 * to answer this process. */
void record_mark_stale(const char *path);

/* Only one process measures for a cache at a time: the first takes "<cache>.lock" (an
 * flock, released by the kernel however the process ends) and measures; the others wait
 * for its record, at most wait_ns. Returns the locked descriptor, RECORD_LOCK_NONE when
 * there is no usable lock (measure anyway), or RECORD_LOCK_WAITED when another process
 * measured meanwhile (read the cache again). */
enum { RECORD_LOCK_NONE = -1, RECORD_LOCK_WAITED = -2 };
int record_lock(const char *path, uint64_t wait_ns);
void record_unlock(int lock);

/* Measures in a child process (calib/estimate_child.h) with the options' budget, into
 * *m and the record *out for key (inconclusive when the child did not answer, with
 * m->problem saying why). Returns 0, or -1 with *why when nothing may be measured. */
int record_measure(const struct option_values *o, const struct cache_key *key,
		   const struct cache_record *previous, struct cache_record *out,
		   struct measurement *m, const char **why);

/* Puts rec into the per-user cache at path, keeping its other records, and a copy into
 * this build's file beside it, which a build of another format version never writes
 * (where path holds such a build's file, only there): whichever build rewrites the cache
 * next, this one still finds its records. Says in record_note() why not when it cannot. */
void record_keep(const char *path, const struct cache_record *rec);

/* What went wrong with the per-user cache, for the verbose line; "" if nothing. */
const char *record_note(void);

/* The wait before an inconclusive record is measured again, as text for a reason:
 * "estimate inconclusive<detail>; measured again in N s". */
void record_inconclusive_reason(const struct cache_record *rec, const char *detail, char *out,
				size_t size);

#endif
