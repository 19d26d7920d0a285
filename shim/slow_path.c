/* The slow part of a read (clock_read_slow, shim/clock.h): what the hot path (shim/line.h)
 * leaves, a read with no line, past a line's expiry or hard end, or of a stopped clock.
 * Owns the kernel reads past a hard end (kernel_read, which may raise the floor), the
 * reads of a stopped clock (stopped_read, held at what it served, or passed through),
 * the reads that find the hypervisor's disruption marker changed (disrupted_read), and
 * the passing bits. Writes a line only through shim/resync.c, in a turn it took; may not
 * claim slots or publish itself. */
#define _GNU_SOURCE
#include "clock.h"

#include "clock_state.h"
#include "disruption.h"
#include "real.h"
#include "resync.h"
#include "test_points.h"

#include "convert.h"
#include "refclock.h"

#include <stdatomic.h>
#include <time.h>

enum kernel_read_result {
	KERNEL_READ_SERVED,
	KERNEL_READ_RETRY,  /* the state changed: read the new line */
	KERNEL_READ_PASS,   /* a wall clock: the caller's own call answers */
	KERNEL_READ_FAILED, /* the kernel's clock failed every reading: errno is its */
};

/* The kernel's MONOTONIC now, for a read past a line's hard end, whose value becomes the
 * floor for good: the lower median of checked readings, as an anchor takes them. Three,
 * and where they do not agree (further apart than the counter says the three calls took,
 * plus half the bound: a reading out of order, the kernel's own or an interposer's), or
 * fewer than three were good, up to KERNEL_READS_MOST: two readings out of order in three
 * would otherwise be the median, and a floor set ahead stands (one in 800 such reads where
 * one reading in 50 is 20 us ahead). False when none was good, or the first call failed
 * (errno the kernel's). */
enum { KERNEL_READS_FIRST = 3, KERNEL_READS_MOST = 7 };
static bool kernel_monotonic_now(uint64_t *ns)
{
	uint64_t good[KERNEL_READS_MOST];
	int n = 0, tries = KERNEL_READS_FIRST;
	uint64_t began = read_counter();
	for (int i = 0; i < tries; i++) {
		struct timespec ts;
		int rc = real_clock_gettime(CLOCK_MONOTONIC, &ts);
		if (rc == 0 && timespec_is_time(&ts)) {
			/* Kept sorted: at most seven. */
			uint64_t v = timespec_to_ns(&ts);
			int at = n++;
			for (; at > 0 && good[at - 1] > v; at--)
				good[at] = good[at - 1];
			good[at] = v;
		} else if (rc != 0 && n == 0) {
			return false; /* failing: one call is its price, not three */
		}
		if (i == KERNEL_READS_FIRST - 1) {
			uint64_t took_ns = (uint64_t)((double)(read_counter() - began) * plan_cfg.calibrated_ns_per_tick);
			if (n < KERNEL_READS_FIRST || good[n - 1] - good[0] > took_ns + plan_cfg.bound_ns / 2)
				tries = KERNEL_READS_MOST;
		}
	}
	if (n == 0)
		return false;
	*ns = good[(n - 1) / 2];
	return true;
}

/* Past the hard end of line `l` (state w), with no turn to write: the kernel's clock,
 * never below the line's end or the floor (a wall clock: passed through). It moves the floor only by steps of at least
 * plan_cfg.kernel_read_step_ns, so that a crowd of readers here does not keep a writer from
 * publishing; in between it stands still, for at most the line's lead on the kernel
 * plus one step. KERNEL_READ_RETRY: the state changed, read the new line;
 * KERNEL_READ_PASS: a wall clock (never held: past the hard end it is the kernel's own,
 * which may have stepped back); KERNEL_READ_FAILED: the kernel's clock gave no time. */
static enum kernel_read_result kernel_read(unsigned clock, uint64_t w, const struct line *l, struct timespec *ts)
{
	if (clock_table[clock].wall)
		return KERNEL_READ_PASS;
	uint64_t kernel;
	if (!kernel_monotonic_now(&kernel))
		return KERNEL_READ_FAILED;
	uint64_t expected[2] = {w, __atomic_load_n(&wiped.floor, __ATOMIC_ACQUIRE)};
	uint64_t end = segment_value(&l->cur, SERVED_MONOTONIC, l->cur.until);
	uint64_t held = end > expected[1] ? end : expected[1];
	uint64_t value = held;
	if (kernel >= held + plan_cfg.kernel_read_step_ns) {
		TEST_POINT(TEST_POINT_KERNEL_READ);
		/* Committed before it is handed out: a writer that read the older floor
		 * fails its compare-and-swap and takes this one into account. */
		if (!counter_cas_pair(&wiped.state, expected, w, kernel))
			return KERNEL_READ_RETRY;
		atomic_max(&shadow_floor, kernel);
		value = kernel;
	} else if (__atomic_load_n(&wiped.state, __ATOMIC_ACQUIRE) != w) {
		return KERNEL_READ_RETRY;
	}
	atomic_fetch_add_explicit(&clock_tally.kernel_reads, 1, memory_order_relaxed);
	ns_to_timespec(line_kernel_read_value(l, (int)clock, value), ts);
	return KERNEL_READ_SERVED;
}

/* A stopped clock whose kernel clock is past all it handed out passes through: for a
 * cause that passes, at the slow path's first test until its next try to serve again is
 * due (retry_at); for one that does not (another CPU set, a corrupt plan), and for a wall
 * clock of such a line, at the hot path's first test, for good. */
static void pass_through_stopped(unsigned clock, enum track_stop cause, uint64_t retry_at)
{
	if (!track_stop_passes(cause)) {
		__atomic_store_n(&clock_config.served_index[clock_table[clock].id], 0, __ATOMIC_RELEASE);
		return;
	}
	atomic_store_explicit(&pass_until[clock], retry_at, memory_order_relaxed);
	atomic_fetch_or_explicit(&passing, 1u << clock, memory_order_release);
}

/* A read of a clock whose track stopped (or whose whole line did): the kernel's own
 * value, never below what the track handed out up to now (track_hold: so a monotonic
 * clock does not step back where the kernel's own did not). Once the kernel is past the
 * most the track could ever have handed out (its line's flat end), the clock passes
 * through (pass_through_stopped): every kernel value from then on is above anything it
 * served, in every thread. So too where the kernel's clock went back itself (below its
 * own last reading at the anchor that stopped the clock, or below a value it gave a held
 * read that read it before this one) by at least the hold's lead over it: its own values
 * went back, and holding would stand still for the whole step. A kernel clock that stands
 * still (frozen), runs slower than the line (a change of rate beyond what a
 * re-synchronization follows) or goes back by less than that lead is held until it
 * catches up. A wall clock is never held. Returns 1 with *ts, or -1 when the kernel's call failed (errno its): the
 * caller returns that, not a second call's answer, which no hold would cover. */
static int stopped_read(unsigned clock, const struct line *l, uint64_t t, struct timespec *ts)
{
	/* The other held reads' kernel values, taken before this read's own: each of them
	 * was read before it, so this one below them by more than the bound went back
	 * itself. Taken after, they could be readings made after this one (this thread
	 * preempted between its call and its comparison), and a kernel that only ran on
	 * would be taken for one that went back: passed through, below what it held. */
	uint64_t held_before = atomic_load_explicit(&held_kernel_most[clock], memory_order_acquire);
	struct timespec now;
	if (real_clock_gettime(clock_table[clock].id, &now) != 0)
		return -1; /* errno is the kernel's */
	TEST_POINT(TEST_POINT_HELD_READ);
	if (!timespec_is_time(&now)) {
		/* A success that is no time: the hold, never what was on the stack. */
		ns_to_timespec(track_hold(l, (int)clock, t), ts);
		return 1;
	}
	/* A line stopped whole tries to serve again as one, on MONOTONIC's schedule. */
	const struct track_health *h = l->active ? &l->health[clock] : &l->health[SERVED_MONOTONIC];
	enum track_stop cause = (enum track_stop)h->stopped;
	uint64_t kernel = timespec_to_ns(&now);
	if (cause == TRACK_SERVING) {
		/* Serving again from a later counter value (track_serves_at): until then the
		 * kernel's value, never below the line's. */
		uint64_t hold = track_hold(l, (int)clock, t);
		if (clock_table[clock].wall || kernel >= hold)
			*ts = now;
		else
			ns_to_timespec(hold, ts);
		return 1;
	}
	if (clock_table[clock].wall || kernel >= track_hold(l, (int)clock, UINT64_MAX)) {
		pass_through_stopped(clock, cause, h->retry_at);
		*ts = now;
		return 1;
	}
	uint64_t hold = track_hold(l, (int)clock, t);
	if (kernel >= hold) {
		*ts = now;
		return 1;
	}
	/* The kernel's own step back: how far it went below its own last reading at the
	 * anchor that stopped the clock, or how far it is below what a held read read before
	 * this one. Passed through where it is at least the hold's lead over the kernel (the
	 * served clock then goes back at most twice as far as the kernel did); a smaller one
	 * is held like any slowness. Passed through, a reading 2 us out of order while the
	 * kernel stood still dropped the clock by all the line had run ahead: 500-640 us. */
	uint64_t own_step = cause == TRACK_BEHIND ? h->went_back_ns : 0;
	if (held_before > kernel + plan_cfg.bound_ns && held_before - kernel > own_step)
		own_step = held_before - kernel;
	if (own_step > plan_cfg.bound_ns && hold - kernel <= 2 * own_step) {
		pass_through_stopped(clock, cause, h->retry_at);
		*ts = now;
		return 1;
	}
	atomic_max(&held_kernel_most[clock], kernel);
	atomic_fetch_add_explicit(&clock_tally.held_reads, 1, memory_order_relaxed);
	ns_to_timespec(hold, ts);
	return 1;
}

/* A read of a clock line `l` serves, after the hypervisor reported the counter
 * disrupted and before the line stopped for it (another thread has the turn): the
 * kernel's value, a monotonic clock's never below the line's at the disruption's moment
 * `at` (disruption_moment), which is at or above anything served before the move, and
 * where the stopped line will hold it (a wall clock: the kernel's own). Not the line's
 * value at this read's own counter: that runs on at the old host's rate, ahead of a
 * kernel the move slowed, and the stop would then hold below it. Returns 1 with *ts, or
 * -1 with the kernel's errno. */
static __attribute__((noinline)) int disrupted_read(unsigned clock, const struct line *l, uint64_t at,
						    struct timespec *ts)
{
	struct timespec now;
	if (real_clock_gettime(clock_table[clock].id, &now) != 0)
		return -1;
	uint64_t least = line_value(l, (int)clock, at);
	if (timespec_is_time(&now) && (clock_table[clock].wall || timespec_to_ns(&now) >= least))
		*ts = now;
	else
		ns_to_timespec(least, ts);
	return 1;
}

/* plan_cfg.write_attempts is loaded where it is compared (LOAD), not kept in a register
 * across the loop: kept, it cost this frame 16 bytes of the caller's stack
 * (test/stack-usage.py). */
int clock_read_slow(unsigned clock, struct timespec *ts)
{
	/* A stopped clock past its hold: through, until its next try is due. */
	if (__builtin_expect(atomic_load_explicit(&passing, memory_order_acquire) & (1u << clock), 0) &&
	    read_counter() < atomic_load_explicit(&pass_until[clock], memory_order_relaxed))
		return 0;
	for (int attempt = 0;; attempt++) {
		uint64_t w;
		struct line l;
		if (!snapshot(&w, &l))
			continue; /* replaced while copied: somebody made progress */
		/* The counter read after the line it is read against: a value read before a
		 * lapsed line's anchor would fall in the gap between the old line's hard end
		 * and the new one's start, where the line holds the old end (behind the kernel
		 * by the lapse). */
		uint64_t t = read_counter();
		if (w == 0) {
			/* No line: a fork child's first read (or one racing it). A recovery that
			 * found no good reading is not tried again for 1/8 of a life (the writer's
			 * token, unused before a first line): meanwhile reads pass through. */
			if (attempt >= LOAD(plan_cfg.write_attempts) || atomic_load_explicit(&wiped.writer_token, memory_order_relaxed) > t)
				return 0;
			enum track_stop why;
			uint32_t serving;
			if (recover(false, &why, &serving) == WRITE_NO_ANCHOR) {
				uint64_t retry_at = retry_after_failure(t, read_counter());
				atomic_store_explicit(&wiped.writer_token, retry_at, memory_order_relaxed);
				return 0;
			}
			note_write_succeeded();
			continue;
		}
		uint64_t mine;
		/* The hypervisor reported the counter disrupted since this line was anchored: the
		 * line stops (its rate is measured again before it serves), in the turn of
		 * whoever takes it; meanwhile nothing is served from it, and a read is the
		 * kernel's, never below what the line handed out (disrupted_read, kernel_read,
		 * stopped_read). */
		bool disrupted = disruption_unseen();
		uint64_t at = __builtin_expect(disrupted, 0) ? disruption_moment(disruption_marker_seen_now(), t) : t;
		if (__builtin_expect(disrupted, 0) && attempt == 0 && take_turn(t, &mine)) {
			enum write_result r = stop_for_disruption(w, &l, t);
			end_turn(mine, 0);
			if (r == WRITE_PUBLISHED)
				continue;
		}
		if (!track_serves_at(&l, (int)clock, t)) {
			if (!disrupted && line_may_resume(&l) && t >= l.health[SERVED_MONOTONIC].retry_at && attempt == 0 &&
			    take_turn(t, &mine)) {
				enum write_result r = resume_line(w, &l, t);
				end_turn(mine, 0);
				if (r == WRITE_PUBLISHED)
					continue; /* the new line: serving again, or its next try put off */
			}
			return stopped_read(clock, &l, t, ts);
		}
		/* Moved while the line served: held at its value at that moment, wherever this
		 * read's counter falls (past its hard end too: the line's end would be ahead of a
		 * kernel the move slowed by all the old host's rate ran on). Moved after it
		 * lapsed: the kernel read past the hard end, as before the move. */
		if (__builtin_expect(disrupted, 0) && at < l.cur.until)
			return disrupted_read(clock, &l, at, ts);
		if (t < l.cur.until) {
			if (t >= l.expiry && attempt == 0 && take_turn(t, &mine))
				write_turn(w, &l, t, mine); /* the new line equals this one up to its hard end */
			ns_to_timespec(line_value(&l, (int)clock, t), ts);
			return 1;
		}
		if (!disrupted && attempt < LOAD(plan_cfg.write_attempts) && take_turn(t, &mine)) {
			enum write_result r = write_turn(w, &l, t, mine);
			if (r == WRITE_PUBLISHED || r == WRITE_LOST)
				continue;
		}
		switch (kernel_read(clock, w, &l, ts)) {
		case KERNEL_READ_SERVED:
			return 1;
		case KERNEL_READ_PASS:
			return 0;
		case KERNEL_READ_FAILED:
			return -1;
		case KERNEL_READ_RETRY:
			break;
		}
	}
}
