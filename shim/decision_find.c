/* What a decision finds (shim/decision_find.h): the key of this boot, the look-ups a
 * question needs (the CPU set, the boot's id; the clocksource is the header's), and the
 * record that answers this boot and CPU set, the machine-wide one or the per-user cache's.
 * Owns the decision's frame (struct decision) and how its look-ups are made: each once,
 * and only where a record leaves the question open. Reads records and writes nothing:
 * may not judge what it found (shim/decision.c), measure, start the clock, or mark or
 * keep a record (shim/decision.c, shim/decision_forced.c).
 *
 * The boot is found by its wall-clock time (REALTIME less BOOTTIME, through the vDSO)
 * against a record's, its id under /proc only where no record's time agrees (a
 * wall-clock step since, or another boot); the CPU set only where no record of this boot
 * holds every CPU the boot can bring online. */
#define _GNU_SOURCE
#include "decision_find.h"

#include "say.h"

#include "raw_syscall.h"
#include "refclock.h"
#include "estimate.h"

/* A look-up the decision needed failed: why, for pass_through. */
static void lookup_failed(struct decision *d, enum state_reason code, const char *why)
{
	d->lookup_failed = why;
	d->lookup_failed_code = code;
}

static const char no_proc[] = "cannot read /proc/sys/kernel/random/boot_id (no /proc?): no record can be "
			      "trusted or kept without the boot's id; passing through at once, nothing measured";

/* ---- the look-ups, each made where a question needs it ---- */

/* The CPUs the process may run on, which are the main thread's (the process id's), not
 * those of whichever thread read the clock first: that one may be pinned to one CPU among
 * several others. Two system calls. */
static bool read_cpu_set(struct decision *d)
{
	int pid = (int)raw_syscall4(SYS_getpid, 0, 0, 0, 0);
	if (cpu_mask_allowed_of(pid, &d->cpus) < 1 && cpu_mask_allowed(&d->cpus) < 1) {
		lookup_failed(d, STATE_REASON_NO_AFFINITY, "cannot read the CPU affinity (more than 1024 CPUs?)");
		return false;
	}
	d->key.cpus = &d->cpus;
	return true;
}

/* The boot's id (three system calls under /proc). */
static bool read_boot(struct decision *d)
{
	if (read_boot_id(d->boot_id, sizeof d->boot_id) != 0 || !d->boot_id[0]) {
		lookup_failed(d, STATE_REASON_NO_PROC, no_proc);
		return false;
	}
	d->key.boot_id = d->boot_id;
	return true;
}

/* The boot, by its wall-clock time. A forced decision reads the boot id and the CPU set
 * (and the clocksource) at once: it may measure, and what it keeps names them. Without
 * /proc (seen at load) no record could be trusted or kept. */
bool key_of_this_boot(struct decision *d, bool forced)
{
	if (d->s.boot_unknown) {
		pass_through(d, STATE_REASON_NO_PROC, no_proc);
		return false;
	}
	/* The boot's time as the load's check took it, where it took it: two kernel reads
	 * fewer, each a system call where the kernel's clock is one. */
	uint64_t boot_wall = record_boot_wall_at_load();
	d->key = (struct cache_key){.boot_wall_ns = boot_wall ? boot_wall : refclock_boot_wall_ns(),
				    .any_cpu_signature = true};
	if (forced && (!read_boot(d) || !read_cpu_set(d))) {
		pass_through(d, d->lookup_failed_code, d->lookup_failed);
		return false;
	}
	if (forced)
		read_clocksource(d);
	return true;
}

/* ---- the record that answers ---- */

/* The record in a text that answers this process, into *out: asked first by the boot's
 * time and for every CPU; the CPU set is read where a record of this boot holds fewer
 * CPUs, the boot id where no record's boot time is this boot's. */
bool answer_in(struct decision *d, const struct record_text *t, struct cache_record *out)
{
	struct cache_answer a;
	while (record_answer(t, &d->key, out, &a) && !a.found) {
		bool asked = a.this_boot ? !d->key.cpus && read_cpu_set(d) : !d->key.boot_id && read_boot(d);
		if (!asked)
			return false;
	}
	return a.found;
}

/* The record that answers this boot and CPU set, into d->record with d->source: the
 * machine-wide one (at a read, only where the load's check passed it), else the per-user
 * cache's. An inconclusive machine-wide record is passed over (the process measures for
 * itself); an inconclusive cache record answers until its retry time (d->inconclusive).
 * False when none answers (lookup_failed says where a look-up failed). */
bool record_for_this_boot(struct decision *d, bool forced)
{
	struct record_text t;
	if ((forced || record_system_passed_load()) && record_system_text(d->o, &t)) {
		if (answer_in(d, &t, &d->record) && d->record.estimate_verdict != ESTIMATE_INCONCLUSIVE) {
			d->source = TSCSHIM_SOURCE_SYSTEM_RECORD;
			return true;
		}
		if (say_level >= 2 && !d->lookup_failed)
			say("machine-wide record ", t.path, ": not for this boot, CPU or CPU set", NULL);
	}
	if (d->lookup_failed || !cache_path_of(d) || !record_cache_text(cache_path_of(d), &t) ||
	    !answer_in(d, &t, &d->record))
		return false;
	d->inconclusive = d->record.estimate_verdict == ESTIMATE_INCONCLUSIVE;
	if (d->inconclusive && refclock_now_ns(CLOCK_MONOTONIC) >= d->record.retry_at_ns)
		return false; /* due for its retry: measured again (d->record, for the interval) */
	d->source = TSCSHIM_SOURCE_USER_CACHE;
	return true;
}
