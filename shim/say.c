#include "say.h"
#include "load_page.h"

#include "text.h"

#include <stdarg.h>
#include <unistd.h>

ON_LOAD_PAGE unsigned say_level;

void say(const char *first, ...)
{
	char line[1024]; /* the verbose decision with every figure and a cache note */
	struct text t = text_start(line, sizeof line - 1);
	text_add(&t, "tscshim: ");
	va_list ap;
	va_start(ap, first);
	for (const char *part = first; part; part = va_arg(ap, const char *))
		text_add(&t, part);
	va_end(ap);
	line[t.len++] = '\n';
	ssize_t ignored = write(STDERR_FILENO, line, t.len);
	(void)ignored;
}
