/* Taking anchors: every served clock read against the counter at one moment, each
 * reading checked (shim/anchor.c). Private to the clock's writer side. */
#ifndef SHIM_ANCHOR_H
#define SHIM_ANCHOR_H

#include "line.h"

#include "segment.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)
void take_anchor(struct anchor *a, int tries, int want, const struct line *line);
#pragma GCC visibility pop

/* Inline, as they were before the writer side was split (recover, resync). */

/* Whether the anchor has a good reading of every clock line l serves. */
static inline bool anchor_reads_served(const struct anchor *a, const struct line *l)
{
	for (int k = 0; k < TRACKS; k++)
		if (track_serves(l, k) && !(a->valid & (1u << k)))
			return false;
	return true;
}

/* Whether every clock has a good reading in the anchor. (Not whether its readings are
 * quiet: taking a noisy clock's anchor again until one happens to be quiet would start
 * its line on the luckiest.) */
static inline bool anchor_complete(const struct anchor *a)
{
	return a->valid == (1u << TRACKS) - 1;
}

#endif
