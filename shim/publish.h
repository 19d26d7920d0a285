/* The published line and its slots, writer side (shim/publish.c, where the publication
 * protocol's rules are stated): publishing a line, and taking a consistent copy of the
 * current one. Private to the clock's writer side. */
#ifndef SHIM_PUBLISH_H
#define SHIM_PUBLISH_H

#include "line.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum write_result {
	WRITE_PUBLISHED,
	WRITE_LOST,      /* another publication (or a raised floor beyond the plan) came first */
	WRITE_NO_SLOT,
	WRITE_NO_ANCHOR, /* no good reading of MONOTONIC: nothing measured, nothing published */
};

#pragma GCC visibility push(hidden)
enum write_result publish(uint64_t expected[2], struct line *next, uint32_t floor_exempt, unsigned avoid,
			  bool signals_blocked);
#pragma GCC visibility pop

/* Inline, as they were before the writer side was split: a read past a line's end
 * (shim/slow_path.c) copies the line with no call more than it paid then. */
static inline void load_line(struct line *to, const struct line *from)
{
	const uint64_t *s = (const uint64_t *)from;
	uint64_t *d = (uint64_t *)to;
	for (size_t i = 0; i < sizeof *to / sizeof *d; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* A consistent copy of the current line; false if it was replaced while copied. */
static inline bool snapshot(uint64_t *state, struct line *out)
{
	const struct line *l;
	*state = line_read_begin(&l);
	load_line(out, l);
	return !line_read_retry(*state);
}

#endif
