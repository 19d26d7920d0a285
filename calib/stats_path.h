/* TSCSHIM_STATS destinations: `stderr`, or an absolute path pattern in which %p stands
 * for the writing process's id and %% for a literal %, so that every process of a
 * program (a server's workers, a shell pipeline) writes a file of its own. */
#ifndef CALIB_STATS_PATH_H
#define CALIB_STATS_PATH_H

#include <stddef.h>

/* NULL if text is a valid destination, else why not (a constant string). */
const char *stats_path_check(const char *text);

/* Expands pattern for process pid into out. Returns 0, or -1 if the pattern is invalid or
 * the result does not fit in size bytes. */
int stats_path_expand(const char *pattern, long pid, char *out, size_t size);

#endif
