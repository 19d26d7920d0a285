/* Short messages built without the printf family (calib/text.h). */
#include "text.h"

#include "load_page.h"

#include <stdarg.h>

LOAD_PATH void text_add(struct text *t, const char *s)
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

LOAD_PATH void text_add_u64(struct text *t, uint64_t v)
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

void text_line(char *buf, size_t size, const char *first, ...)
{
	if (!buf || size == 0)
		return;
	struct text t = text_start(buf, size);
	va_list ap;
	va_start(ap, first);
	for (const char *part = first; part; part = va_arg(ap, const char *))
		text_add(&t, part);
	va_end(ap);
	for (char *s = buf; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}
