#include "text.h"

#include <stdarg.h>

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
