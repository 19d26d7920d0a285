/* Records (shim/record.h): reading, answering, marking, measuring and keeping a verdict, a
 * rate and the costs, in the machine-wide record and the per-user cache; the format and
 * matching rules are calib/cache.c's, where the records are and the load's check
 * shim/record_load.c's. */
#define _GNU_SOURCE
#include "record.h"
#include "record_load.h"

#include "disruption.h"
#include "environment.h"
#include "line.h"
#include "load_page.h"
#include "say.h"

#include "kernel_clock.h"
#include "refclock.h"
#include "raw_syscall.h"
#include "safefile.h"
#include "system.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The decision's buffer for a record's text, on the load page (which loading writes
 * anyway: no page of its own): LOAD_TEXT_SIZE holds a record of one CPU set of up to 1024
 * CPUs with two builds' costs (about 560 bytes for a few CPUs); a longer text is read into
 * the scratch (a page of its own). */
enum { LOAD_TEXT_SIZE = 960 };
static struct {
	char text[LOAD_TEXT_SIZE];
} at_load ON_LOAD_PAGE;

/* A long file's text, and a whole cache to rewrite (a forced decision), after the gate's
 * page of the fork-wiped scratch (shim/line.h): faulted in only when used. */
struct record_buffers {
	char text[CACHE_MAX_SIZE + 1];
	struct cache_file file;
};
_Static_assert(RECORD_SCRATCH_GATES_BYTES + sizeof(struct record_buffers) <= sizeof wiped.decision_scratch,
	       "the record's buffers fit the scratch after the gate's page");
#define buffers (*(struct record_buffers *)(void *)(wiped.decision_scratch + RECORD_SCRATCH_GATES_BYTES))

/* Rarer: the lock name (only when measuring), the messages (only when a file could not be
 * used or written), the path of this build's cache beside another build's. In .bss, not
 * after it: the fork-wiped pages end the data (shim/data_layout.ld). */
static struct {
	char lock_name[SAFEFILE_PATH_MAX + 8];
	char note[SAFEFILE_PATH_MAX + 160]; /* what went wrong with the cache, for verbose */
	char err[SAFEFILE_PATH_MAX + 160];  /* one step's message at a time: written on a failure */
	char sibling[SAFEFILE_PATH_MAX + 8]; /* this build's cache beside another build's */
} rare;

const char *record_note(void)
{
	return rare.note;
}

/* ---- at the decision: the texts ---- */

bool record_system_text(const struct option_values *o, struct record_text *t)
{
	const char *path = o->text[OPT_SYSTEM_RECORD];
	if (path[0] != '/')
		return false;
	/* Its directory root's, not a symlink, writable by nobody else (one lstat): then only
	 * root can have made the link in it, and a link's target never changes. The text onto
	 * the load page where it fits (one readlinkat), else into the scratch. */
	struct safefile_trust root = {.owner = 0, .max_size = CACHE_MAX_SIZE, .link = 1};
	*t = (struct record_text){.path = path, .machine_wide = true, .text = at_load.text};
	int rc = safefile_read_link(path, &root, at_load.text, sizeof at_load.text, &t->len, rare.err, sizeof rare.err);
	if (rc == SAFEFILE_OK && t->len == sizeof at_load.text) {
		t->text = buffers.text;
		rc = safefile_read_link_target(path, CACHE_MAX_SIZE, buffers.text, sizeof buffers.text, &t->len, rare.err,
					       sizeof rare.err);
	}
	if (rc == SAFEFILE_OK)
		return true;
	if (say_level >= 2 || (say_level >= 1 && rc != SAFEFILE_MISSING))
		say("machine-wide record ", rare.err, NULL);
	return false;
}

/* The file at path: onto the load page where it fits, else into the scratch. Open, read, close: the open proves
 * the file the user's (O_NOATIME), root's is fstat'ed too. The safefile status. */
static int read_cache_at(const char *path, struct record_text *t)
{
	struct safefile_trust mine = {.owner = record_cache_owner(), .max_size = CACHE_MAX_SIZE, .lean = 1};
	*t = (struct record_text){.text = at_load.text, .path = path};
	int rc = safefile_read_file(path, &mine, at_load.text, sizeof at_load.text, &t->len, rare.err, sizeof rare.err);
	if (rc == SAFEFILE_OK && t->len == sizeof at_load.text) {
		/* It may be longer: the whole of it, a page of the scratch touched. */
		t->text = buffers.text;
		rc = safefile_read_file(path, &mine, buffers.text, sizeof buffers.text, &t->len, rare.err,
					sizeof rare.err);
	}
	return rc;
}

/* Says why the per-user cache cannot answer: at TSCSHIM_VERBOSE=2, and at 1 (and in the
 * verbose line's note) when it exists but is unusable. */
static void say_cache_unusable(bool missing)
{
	if (!missing)
		text_line(rare.note, sizeof rare.note, rare.err, NULL);
	if (say_level >= 2 || (!missing && say_level >= 1))
		say("cache ", rare.err, "; measuring and rewriting it", NULL);
}

bool record_cache_text(const char *path, struct record_text *t)
{
	int rc = read_cache_at(path, t);
	if (rc == SAFEFILE_OK && cache_text_of_other_format(t->text, t->len)) {
		if (say_level >= 2)
			say("cache ", path, ": another build's; this build's records are kept beside it", NULL);
		if (cache_format_sibling(path, rare.sibling, sizeof rare.sibling) != 0)
			return false;
		rc = read_cache_at(rare.sibling, t);
	}
	if (rc != SAFEFILE_OK)
		say_cache_unusable(rc == SAFEFILE_MISSING);
	return rc == SAFEFILE_OK;
}

bool record_answer(const struct record_text *t, const struct cache_key *key, struct cache_record *out,
		   struct cache_answer *a)
{
	char why[128];
	int rc = cache_answer(t->text, t->len, key, out, a, why, sizeof why);
	if (rc == CACHE_OK)
		return true;
	text_line(rare.err, sizeof rare.err, t->path, rc == CACHE_OTHER_FORMAT ? ": another build's: " : ": corrupt: ",
		  why, NULL);
	if (!t->machine_wide)
		say_cache_unusable(false);
	else if (say_level >= 1)
		say("machine-wide record ", rare.err, NULL);
	return false;
}

/* ---- marks, the lock, measuring and keeping ---- */

/* Times of 1970 on path: the next process's check at load (cache_may_answer) finds it
 * marked, and measures there. */
static void mark(const char *path)
{
	struct timespec epoch[2] = {{0, 0}, {0, 0}};
	long rc = raw_syscall4(SYS_utimensat, AT_FDCWD, (long)path, (long)epoch, AT_SYMLINK_NOFOLLOW);
	if (rc == 0 && say_level >= 2)
		say("cache ", path, ": marked for a measurement at the next start's load", NULL);
}

void record_mark_stale(const char *path)
{
	/* Only files of our own: the cache, and this build's file beside it (where the cache
	 * holds another build's format, that build then measures once at its next start, and
	 * rewrites it: the load looks beside the cache only where the cache fails its check). */
	mark(path);
	if (cache_format_sibling(path, rare.sibling, sizeof rare.sibling) == 0)
		mark(rare.sibling);
}

int record_lock(const char *path, uint64_t wait_ns)
{
	char *name = rare.lock_name;
	struct text t = text_start(name, sizeof rare.lock_name);
	text_add(&t, path);
	text_add(&t, ".lock");
	if (t.truncated)
		return RECORD_LOCK_NONE;
	int fd = open(name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	struct stat st;
	if (fd < 0)
		return RECORD_LOCK_NONE;
	/* A lock file another user owns is ignored: it could be held for ever. */
	if (fstat(fd, &st) != 0 || st.st_uid != record_cache_owner() || !S_ISREG(st.st_mode)) {
		record_unlock(fd);
		return RECORD_LOCK_NONE;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	uint64_t deadline = refclock_now_ns(CLOCK_MONOTONIC) + wait_ns;
	while (refclock_now_ns(CLOCK_MONOTONIC) < deadline) {
		struct timespec nap = {.tv_nsec = 500000};
		if (nanosleep(&nap, NULL) != 0 && errno != EINTR)
			break;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
	}
	record_unlock(fd); /* releases the lock if it was taken: the record is what we waited for */
	return RECORD_LOCK_WAITED;
}

void record_unlock(int lock)
{
	if (lock >= 0 && close(lock) != 0 && say_level >= 2)
		say("cache lock: close failed", NULL);
}

int record_measure(const struct option_values *o, const struct cache_key *key,
		   const struct cache_record *previous, struct cache_record *out,
		   struct measurement *m, const char **why)
{
	int seccomp = read_seccomp_mode();
	if (seccomp == 1) {
		*why = "seccomp strict mode: the estimator cannot run; passing through";
		return -1;
	}
	uint32_t min = (uint32_t)o->num[OPT_ESTIMATE_MIN_LOOPS];
	/* The CPU set the child measures, copied off the decision's page: that page is wiped
	 * in a fork child once marked (where other threads exist, or the clock started), and
	 * the estimator's child would find it empty. */
	static struct cpu_mask measured_cpus;
	measured_cpus = *key->cpus;
	struct estimate_config config = {
		.probes_per_cpu = (uint32_t)o->num[OPT_PROBES],
		.budget_ns = o->num[OPT_ESTIMATE_BUDGET_US] * 1000,
		.limits = {.min_ranges = min, .min_loops = min},
		.cpus = &measured_cpus,
	};
	uint64_t calibrate_ns = o->num[OPT_CALIBRATE_US] * 1000;
	/* The child's estimate may overrun its deadline by an attempt's tail; an eighth of
	 * the budget and 5 ms are kept for that, the fork and the answer. */
	uint64_t wait_ns = config.budget_ns + calibrate_ns + 5000000;
	config.budget_ns -= config.budget_ns / 8;
	if (measure_in_child(&config, calibrate_ns, wait_ns, m, rare.err, sizeof rare.err) != 0) {
		memset(m, 0, sizeof *m);
		m->analysis.verdict = ESTIMATE_INCONCLUSIVE;
		text_line(m->problem, sizeof m->problem, rare.err, NULL);
	}
	if (m->problem[0] && seccomp == 2) {
		/* A filter's rules cannot be read back: say that one is there. */
		struct text t = {.buf = m->problem, .size = sizeof m->problem, .len = strlen(m->problem)};
		text_add(&t, " (a seccomp filter is in force)");
	}
	if (m->problem[0] && say_level >= 1)
		say(m->problem, NULL);
	memset(out, 0, sizeof *out);
	text_line(out->boot_id, sizeof out->boot_id, key->boot_id, NULL);
	out->boot_wall_ns = key->boot_wall_ns;
	out->cpu_signature = key->cpu_signature;
	out->counter_invariant = 1; /* measured only where the counter is invariant */
	out->cpus = *key->cpus;
	out->all_cpus = cpu_mask_holds_every_possible(key->cpus);
	out->vmclock = disruption_device_exists();
	out->estimate_verdict = m->analysis.verdict;
	out->max_shift_ticks = m->analysis.max_shift_ticks;
	out->rate_millihz = m->rate_millihz;
	if (m->analysis.verdict == ESTIMATE_INCONCLUSIVE || m->rate_millihz == 0) {
		out->estimate_verdict = ESTIMATE_INCONCLUSIVE;
		out->retry_interval_ms = cache_retry_interval_ms(previous);
		out->retry_at_ns = refclock_now_ns(CLOCK_MONOTONIC) + out->retry_interval_ms * 1000000;
	}
	return 0;
}

/* The file at path read whole and parsed into buffers.file (count 0 where it holds none
 * of this format). The cache's status. */
static int read_whole(const char *path)
{
	struct safefile_trust mine = {.owner = record_cache_owner(), .max_size = CACHE_MAX_SIZE};
	size_t len = 0;
	buffers.file.count = 0;
	int rc = safefile_read_file(path, &mine, buffers.text, sizeof buffers.text, &len, rare.err, sizeof rare.err);
	if (rc != SAFEFILE_OK)
		return rc;
	char why[128];
	rc = cache_parse(buffers.text, len, &buffers.file, why, sizeof why);
	if (rc != CACHE_OK)
		buffers.file.count = 0;
	return rc;
}

/* Writes buffers.file to path; says why not in the note. */
static void write_whole(const char *path)
{
	if (cache_write(path, &buffers.file, false, buffers.text, sizeof buffers.text, rare.err, sizeof rare.err) !=
	    0) {
		text_line(rare.note, sizeof rare.note, rare.err, "; every start measures", NULL);
		if (say_level >= 1)
			say("cache ", rare.note, NULL);
	}
}

void record_keep(const char *path, const struct cache_record *rec)
{
	/* Read again now, so that the rewrite keeps its records for other CPU sets and
	 * whatever other processes wrote since. Only a forced decision keeps a record: it
	 * measured, so a read more is nothing. */
	rare.note[0] = '\0';
	bool theirs = read_whole(path) == CACHE_OTHER_FORMAT;
	if (cache_format_sibling(path, rare.sibling, sizeof rare.sibling) != 0) {
		if (theirs)
			return;
	} else if (theirs) {
		read_whole(rare.sibling);
	}
	cache_insert(&buffers.file, rec);
	if (!theirs)
		write_whole(path);
	if (rare.sibling[0] && rare.note[0] == '\0')
		write_whole(rare.sibling);
}

void record_inconclusive_reason(const struct cache_record *rec, const char *detail, char *out,
				size_t size)
{
	uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
	uint64_t wait = rec->retry_at_ns > now ? rec->retry_at_ns - now : 0;
	struct text t = text_start(out, size);
	text_add(&t, "estimate inconclusive");
	text_add(&t, detail);
	text_add(&t, "; measured again in ");
	text_add_u64(&t, (wait + 999999999u) / 1000000000u);
	text_add(&t, " s");
}
