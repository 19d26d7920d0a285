/* Building short messages without the printf family.
 *
 * The first snprintf in a process faults in libc's formatting code: 70-110 us on our VMs,
 * a third of the shim's whole warm start. The load path formats with these instead. Output
 * is always NUL-terminated and silently cut at the buffer's end. */
#ifndef CALIB_TEXT_H
#define CALIB_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct text {
	char *buf;
	size_t size, len;
	int truncated;
};

static inline struct text text_start(char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
	return (struct text){.buf = buf, .size = size};
}

/* Appends s, or as much of it as fits (then truncated is set). Out of line: these are
 * on no hot path, and inlined at every call they made the library's code larger than one
 * fault of its pages brings in. */
void text_add(struct text *t, const char *s);

/* Appends v in decimal. */
void text_add_u64(struct text *t, uint64_t v);

/* One printable line in buf: the parts joined, cut at size, control characters shown as
 * '?' (a path or a value from the environment cannot break the line). NULL ends the
 * list. Also a bounded string copy: text_line(buf, size, s, NULL). */
void text_line(char *buf, size_t size, const char *first, ...) __attribute__((sentinel));

#endif
