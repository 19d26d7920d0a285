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

static inline void text_add(struct text *t, const char *s)
{
	for (; *s; s++) {
		if (t->len + 1 >= t->size) {
			t->truncated = 1;
			return;
		}
		t->buf[t->len++] = *s;
		t->buf[t->len] = '\0';
	}
}

static inline void text_add_u64(struct text *t, uint64_t v)
{
	char digits[21];
	int i = 20;
	digits[i] = '\0';
	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	text_add(t, digits + i);
}

/* One printable line in buf: the parts joined, cut at size, control characters shown as
 * '?' (a path or a value from the environment cannot break the line). NULL ends the
 * list. Also a bounded string copy: text_line(buf, size, s, NULL). */
void text_line(char *buf, size_t size, const char *first, ...) __attribute__((sentinel));

#endif
