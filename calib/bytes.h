/* memchr, memrchr, memcmp's equality and memcpy of a short text for the decision's path:
 * a loop of our own, so that a decision does not touch a page of libc's text the program
 * may never have used (memchr's lies apart from the string functions every program runs,
 * and a first touch of a page costs a microVM guest a fault, about 10 us). Texts here are
 * a record's: at most 4 KiB. */
#ifndef CALIB_BYTES_H
#define CALIB_BYTES_H

#include <stdbool.h>
#include <stddef.h>

/* The first c in p[0..n), or NULL. */
static inline const char *bytes_find(const char *p, char c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == c)
			return p + i;
	return NULL;
}

/* The last c in p[0..n), or NULL. */
static inline const char *bytes_find_last(const char *p, char c, size_t n)
{
	while (n > 0)
		if (p[--n] == c)
			return p + n;
	return NULL;
}

/* Whether a[0..n) and b[0..n) are the same bytes. */
static inline bool bytes_equal(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Copies src[0..n) to dest. */
static inline void bytes_copy(char *dest, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dest[i] = src[i];
}

#endif
