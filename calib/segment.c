#include "segment.h"

static void set_slope(struct segment *s, enum track k, long double ns_per_tick,
		      long double fallback)
{
	struct conversion c;
	if (conversion_from_slope(&c, ns_per_tick) != 0)
		conversion_from_slope(&c, fallback);
	s->mult[k] = c.mult;
	s->shift[k] = c.shift;
}

static int64_t midpoint(int64_t lo, int64_t hi)
{
	return lo + (hi - lo) / 2;
}

void segment_first(struct line *out, const struct anchor *a, long double ns_per_tick,
		   uint64_t life_ticks)
{
	*out = (struct line){.active = 1};
	out->cur.start = a->counter;
	for (int k = 0; k < TRACKS; k++) {
		out->cur.base[k] = a->ns[k];
		set_slope(&out->cur, (enum track)k, ns_per_tick, ns_per_tick);
	}
	out->expiry = a->counter + life_ticks;
	out->cur.until = out->expiry + life_ticks;
	out->prev = out->cur;
	out->realtime_offset = (uint64_t)midpoint(a->realtime_lo, a->realtime_hi);
	out->boottime_offset = (uint64_t)midpoint(a->boottime_lo, a->boottime_hi);
}

static bool offset_changed(int64_t current, int64_t lo, int64_t hi)
{
	return (current < lo || current > hi) && hi - lo <= OFFSET_BRACKET_MAX_NS;
}

void offsets_refresh(struct line *next, const struct anchor *a)
{
	/* The kernel changes these offsets only by steps (settimeofday, an NTP step, a
	 * suspend). Keep ours while the new measurement's interval still holds it, so REALTIME
	 * does not wobble; move only when a narrow interval excludes it (a preempted
	 * measurement must not become the offset). */
	int64_t real = (int64_t)next->realtime_offset;
	if (offset_changed(real, a->realtime_lo, a->realtime_hi))
		next->realtime_offset = (uint64_t)midpoint(a->realtime_lo, a->realtime_hi);
	int64_t boot = (int64_t)next->boottime_offset;
	if (boot < a->boottime_lo && offset_changed(boot, a->boottime_lo, a->boottime_hi))
		next->boottime_offset = (uint64_t)midpoint(a->boottime_lo, a->boottime_hi);
}

void segment_plan(const struct plan_inputs *in, struct plan *out)
{
	const struct line *old = in->old;
	const struct anchor *a = in->anchor;
	out->next = *old;
	out->outcome = PLAN_CONTINUE;
	out->error_measured = false;
	out->error_ns = 0;

	/* Nobody read the clock for two lives (an idle program, preempted threads): the line
	 * was clamped, not wrong. It re-anchors without counting as a fault. */
	bool stale = in->now >= old->cur.until || a->counter >= old->cur.until;
	if (stale) {
		out->outcome = PLAN_STALE;
	} else {
		out->error_measured = true;
		out->error_ns = (int64_t)(line_value(old, TRACK_MONO, a->counter) - a->ns[TRACK_MONO]);
		if (out->error_ns > (int64_t)in->watchdog_ns) {
			/* The counter ran ahead of the kernel: it cannot be trusted. Stepping back
			 * would be the only way to follow, so stop serving instead. */
			out->outcome = PLAN_STOP;
			out->next.active = 0;
			return;
		}
		if (out->error_ns < -(int64_t)in->watchdog_ns)
			out->outcome = PLAN_REANCHOR;
	}

	/* A fresh segment starts where the old one's hard end is, so that no reader of the
	 * old publication evaluates it beyond the point where the new one takes over. */
	uint64_t start = stale ? a->counter : old->cur.until;
	struct line *next = &out->next;
	next->prev = old->cur;
	next->cur.start = start;
	for (int k = 0; k < TRACKS; k++) {
		long double rate = in->rate[k];
		uint64_t from_old = segment_value(&old->cur, (enum track)k, start);
		long double elapsed = (long double)(start - a->counter) * rate;
		uint64_t kernel_at_start = a->ns[k] + (uint64_t)elapsed;
		uint64_t base = from_old;
		if (out->outcome != PLAN_CONTINUE) /* never below what the old line handed out */
			base = kernel_at_start > from_old ? kernel_at_start : from_old;
		next->cur.base[k] = base;
		/* Reach the kernel's projected value at the next expiry, slewing at most 1/16
		 * away from its rate (the kernel itself slews by at most 500 ppm). */
		long double target = (long double)kernel_at_start + (long double)in->life_ticks * rate;
		long double slope = (target - (long double)base) / (long double)in->life_ticks;
		long double lo = rate * 15 / 16, hi = rate * 17 / 16;
		set_slope(&next->cur, (enum track)k, slope < lo ? lo : slope > hi ? hi : slope, rate);
	}
	next->expiry = start + in->life_ticks;
	next->cur.until = next->expiry + in->life_ticks;
	offsets_refresh(next, a);
	if (out->outcome == PLAN_REANCHOR && in->reanchors_in_a_row + 1 >= 3) {
		out->outcome = PLAN_STOP;
		next->active = 0;
	}
}
