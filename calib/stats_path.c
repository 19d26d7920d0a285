/* TSCSHIM_STATS destinations (calib/stats_path.h): stderr, or a path pattern with %p. */
#include "stats_path.h"

#include <stdio.h>
#include <string.h>

const char *stats_path_check(const char *text)
{
	if (strcmp(text, "stderr") == 0 || text[0] == '\0')
		return NULL;
	/* A relative path would land in whatever directory each process is in at exit. */
	if (text[0] != '/')
		return "expected `stderr` or an absolute path";
	for (const char *p = text; (p = strchr(p, '%')) != NULL; p += 2)
		if (p[1] != 'p' && p[1] != '%')
			return "in a path, % must be followed by p (process id) or % (a literal %)";
	return NULL;
}

int stats_path_expand(const char *pattern, long pid, char *out, size_t size)
{
	if (stats_path_check(pattern) != NULL || size == 0)
		return -1;
	size_t len = 0;
	for (const char *p = pattern; *p; p++) {
		char piece[24];
		size_t n = 1;
		piece[0] = *p;
		if (*p == '%') {
			p++;
			if (*p == 'p')
				n = (size_t)snprintf(piece, sizeof piece, "%ld", pid);
		}
		if (len + n >= size)
			return -1;
		memcpy(out + len, piece, n);
		len += n;
	}
	out[len] = '\0';
	return 0;
}
