#define _GNU_SOURCE
#include "record.h"

#include "environment.h"
#include "line.h"
#include "vdso.h"
#include "load_page.h"
#include "say.h"

#include "kernel_clock.h"
#include "refclock.h"
#include "raw_syscall.h"
#include "safefile.h"
#include "system.h"
#include "text.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Too big for the decision's stack, and needed once per decision. What every warm
 * decision writes (the claim, the decision's own state, the parsed file, then the file's
 * text, about 460-640 bytes for a record of one CPU set with two builds' costs, the common
 * case) sits in the scratch that shares the fork-wiped page the first line's publication
 * writes anyway (shim/line.h): one fresh page, with the decision's stack the only other.
 * The claim is written before it is read (gate.c), so that the page faults once, not twice.
 * Every buffer is written before it is read, within one decision. may_alias: the scratch
 * is bytes. */
struct __attribute__((may_alias)) decision_buffers {
	/* The gate's claim of the decision (record_decision_claim): on this page so that a
	 * fork child finds it free; its own cache line, away from the buffers. */
	_Alignas(64) _Atomic uint64_t claim;
	/* The last read of the cache found another build's format there, and read this
	 * build's file beside it (record_mark_stale marks that one too). */
	bool read_beside;
	/* decision.c's state (record_decision_state). */
	_Alignas(64) unsigned char decision_state[RECORD_DECISION_STATE_SIZE];
	/* The file read last, parsed: the machine-wide record or the per-user cache (one at a
	 * time: the decision copies the record it keeps). count 0: none usable. */
	struct cache_file parsed;
	char file[CACHE_MAX_SIZE + 1];
};
_Static_assert(sizeof(struct decision_buffers) <= sizeof wiped.decision_scratch,
	       "the decision's buffers fit the scratch");
_Static_assert(offsetof(struct fork_wiped, decision_scratch) + offsetof(struct decision_buffers, file) + 640 <=
		       4096,
	       "a one-record file shares the first page with what every decision writes");
#define buffers (*(struct decision_buffers *)(void *)wiped.decision_scratch)

/* Rarer: the lock name (only when measuring), the messages (only when a file could not be
 * used or written), the path of this build's cache beside another build's. */
static AFTER_BSS struct {
	char lock_name[SAFEFILE_PATH_MAX + 8];
	char note[SAFEFILE_PATH_MAX + 160]; /* what went wrong with the cache, for verbose */
	char err[SAFEFILE_PATH_MAX + 160];  /* one step's message at a time: written on a failure */
	char sibling[SAFEFILE_PATH_MAX + 8]; /* this build's cache beside another build's */
	char long_cache_path[SAFEFILE_PATH_MAX]; /* a default path too long for the load page */
} rare;

/* What the load's checks found (record_may_answer), for the decision: whether the
 * machine-wide record passed, and its size then; the per-user cache's path where the load
 * made it (the default's, or the option's, which the options keep). On the load page. */
static struct {
	bool system_passed;
	bool cache_path_made;
	char cache_path[256];
} at_load ON_LOAD_PAGE;

_Atomic uint64_t *record_decision_claim(void)
{
	return &buffers.claim;
}

void *record_decision_state(void)
{
	return buffers.decision_state;
}

bool record_system_passed_load(void)
{
	return at_load.system_passed;
}

const char *record_note(void)
{
	return rare.note;
}

const struct cache_file *record_system_file(const struct option_values *o)
{
	const char *path = o->text[OPT_SYSTEM_RECORD];
	if (path[0] != '/')
		return NULL;
	struct safefile_trust root = {.owner = 0, .check_directory = 1, .max_size = CACHE_MAX_SIZE,
				      .directory_by_lstat = 1};
	int rc = cache_read(path, &root, buffers.file, sizeof buffers.file, &buffers.parsed,
			    rare.err, sizeof rare.err);
	if (rc != CACHE_OK) {
		if (say_level >= 2 || (say_level >= 1 && rc != CACHE_MISSING))
			say("machine-wide record ", rare.err, NULL);
		return NULL;
	}
	return &buffers.parsed;
}


/* What a record's file must be, checked at load from one lstat, with no file read: a
 * regular file (not a symlink), the owner's, readable by it and writable by nobody else, of
 * a size a record file can have, and not marked for a measurement (times of 1970:
 * record_mark_stale). The machine-wide record must also have been written in this boot
 * (boot_ns, where given: a second of slack for the clocks' rounding): a process cannot mark
 * root's file, so one kept from an earlier boot on a persistent path would otherwise
 * answer no read and let no start measure, all boot long. Whether a file is of this boot
 * is its content's to say, at the read; the per-user cache, which a read that finds it of
 * another boot marks, needs no clock read here. A file that fails here makes the process
 * measure at load, before its threads exist; the read then never measures. */
static uint64_t boot_wall_at_load(void);

LOAD_PATH static bool file_may_answer(const char *path, uid_t owner, bool this_boot, uint64_t *size)
{
	struct stat st;
	if (raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	if (!S_ISREG(st.st_mode) || st.st_uid != owner || !(st.st_mode & S_IRUSR) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size <= 0 || st.st_size > CACHE_MAX_SIZE)
		return false;
	*size = (uint64_t)st.st_size;
	uint64_t written = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	return st.st_mtim.tv_sec > 0 && (!this_boot || written + 1000000000ull >= boot_wall_at_load());
}

static char vdso_clock_name[] ON_LOAD_PAGE = "__vdso_clock_gettime";

/* The boot's wall-clock time at load, REALTIME less BOOTTIME: through the vDSO (no system
 * call; the reads of a process that reads a clock fault its pages in anyway), else (none,
 * as under valgrind) the system calls. */
LOAD_PATH static uint64_t boot_wall_at_load(void)
{
	typedef int vdso_clock_fn(clockid_t, struct timespec *);
	vdso_clock_fn *fn = (vdso_clock_fn *)vdso_function(vdso_clock_name);
	struct timespec boot, wall;
	if (fn && fn(CLOCK_BOOTTIME, &boot) == 0 && fn(CLOCK_REALTIME, &wall) == 0)
		return (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec -
		       ((uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec);
	return kernel_clock_ns(CLOCK_REALTIME) - kernel_clock_ns(CLOCK_BOOTTIME);
}

/* The suffix of this build's cache beside another build's (cache_format_sibling). */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
static char format_suffix[] ON_LOAD_PAGE = ".v" STRINGIFY(CACHE_FORMAT_VERSION);

/* On the load path: no libc call (raw_syscall.h), no string constant off the load page. */
LOAD_PATH bool record_may_answer(const char *system, const char *option, const char *xdg_runtime_dir)
{
	uint64_t size;
	if (system[0] == '/' && file_may_answer(system, 0, true, &size)) {
		at_load.system_passed = true;
		return true;
	}
	/* Small: a page-sized buffer here would reach a fresh page of the stack, a fault of its
	 * own. A default path longer than this (a very long XDG_RUNTIME_DIR) is made in static
	 * storage instead, a page touched only then. */
	char path[256];
	static char long_path[SAFEFILE_PATH_MAX];
	if (option[0] == 'o' && option[1] == 'f' && option[2] == 'f' && option[3] == '\0')
		return false;
	/* The uid the process was started with, from the auxiliary vector (the page of
	 * getauxval, which the load path calls anyway); the decision itself uses geteuid(),
	 * as a program may have changed it by then. */
	uid_t euid = (uid_t)getauxval(AT_EUID);
	if (!option[0]) {
		option = path;
		if (cache_default_path_for(xdg_runtime_dir, euid, path, sizeof path) != 0) {
			if (cache_default_path_for(xdg_runtime_dir, euid, long_path, sizeof long_path) != 0)
				return false; /* no cache can be kept: the decision says so */
			option = long_path;
		}
	}
	/* Kept for the decision, which then makes no system call to find it again. */
	if (option == path) {
		for (size_t i = 0; i < sizeof path; i++)
			if ((at_load.cache_path[i] = path[i]) == '\0')
				break;
		at_load.cache_path_made = true;
	}
	if (file_may_answer(option, euid, false, &size))
		return true;
	/* Where the cache holds another build's format, this build's records are beside it
	 * (record_cache_file); its load finds them there. One lstat more, only where the
	 * cache itself cannot answer (a cold start, which measures anyway, or that case). */
	char sibling[sizeof path + sizeof format_suffix];
	size_t n = 0;
	for (; option[n] && n < sizeof path; n++)
		sibling[n] = option[n];
	if (option[n])
		return false;
	for (size_t i = 0; i < sizeof format_suffix; i++)
		sibling[n + i] = format_suffix[i];
	return file_may_answer(sibling, euid, false, &size);
}

static char boot_id_path[] ON_LOAD_PAGE = "/proc/sys/kernel/random/boot_id";

LOAD_PATH bool record_boot_known(void)
{
	struct stat st;
	return raw_stat(boot_id_path, &st) == 0;
}


void record_mark_stale(const char *path)
{
	/* Times of 1970: the next process's check at load (file_may_answer) finds the file
	 * older than the boot, and measures there. Only a file of our own: the cache, and where
	 * it holds another build's format, this build's file beside it too. The load looks
	 * beside the cache only where the cache fails its check, so the other build's file is
	 * marked as well: that build then measures once at its next start, and rewrites it. */
	if (buffers.read_beside &&
	    raw_syscall4(SYS_utimensat, AT_FDCWD, (long)rare.sibling, (long)(struct timespec[2]){{0, 0}, {0, 0}},
			 AT_SYMLINK_NOFOLLOW) != 0 && say_level >= 2)
		say("cache ", rare.sibling, ": could not be marked for a measurement", NULL);
	struct timespec epoch[2] = {{0, 0}, {0, 0}};
	if (raw_syscall4(SYS_utimensat, AT_FDCWD, (long)path, (long)epoch, AT_SYMLINK_NOFOLLOW) == 0 &&
	    say_level >= 2)
		say("cache ", path, ": marked for a measurement at the next start's load", NULL);
}

/* The effective uid the per-user cache belongs to: the one the process started with, from
 * the auxiliary vector (no system call). */
static uid_t cache_owner(void)
{
	return (uid_t)getauxval(AT_EUID);
}

const char *record_cache_path(const struct option_values *o)
{
	const char *option = o->text[OPT_CACHE];
	if (strcmp(option, "off") == 0)
		return NULL;
	if (option[0])
		return option;
	if (at_load.cache_path_made)
		return at_load.cache_path;
	/* Not made at load (the machine-wide record answered there, or the default path is
	 * long). Never in secure execution, which passes through before any record is looked
	 * at. */
	extern char **environ;
	if (cache_default_path_for(environment_value(environ, "XDG_RUNTIME_DIR"), cache_owner(),
				   rare.long_cache_path, sizeof rare.long_cache_path) != 0)
		return NULL;
	return rare.long_cache_path;
}

/* The file at path into buffers.parsed (none usable: count 0). Returns cache_read's status. */
static int read_cache_at(const char *path)
{
	struct safefile_trust mine = {.owner = cache_owner(), .max_size = CACHE_MAX_SIZE};
	int rc = cache_read(path, &mine, buffers.file, sizeof buffers.file, &buffers.parsed,
			    rare.err, sizeof rare.err);
	if (rc != CACHE_OK)
		buffers.parsed.count = 0;
	return rc;
}

/* This build's file for the per-user cache at path: path, or where path holds another
 * build's format, the file beside it (*where says which). Returns the read's status. */
static int read_cache(const char *path, const char **where)
{
	*where = path;
	buffers.read_beside = false;
	int rc = read_cache_at(path);
	if (rc != CACHE_OTHER_FORMAT)
		return rc;
	if (say_level >= 2)
		say("cache ", rare.err, "; this build's records are kept beside it", NULL);
	if (cache_format_sibling(path, rare.sibling, sizeof rare.sibling) != 0)
		return CACHE_MISSING;
	*where = rare.sibling;
	buffers.read_beside = true;
	return read_cache_at(rare.sibling);
}

const struct cache_file *record_cache_file(const char *path)
{
	const char *where;
	int rc = read_cache(path, &where);
	if (rc != CACHE_OK) {
		if (rc != CACHE_MISSING)
			text_line(rare.note, sizeof rare.note, rare.err, NULL);
		if (say_level >= 2 || (rc != CACHE_MISSING && say_level >= 1))
			say("cache ", rare.err, "; measuring and rewriting it", NULL);
		return NULL;
	}
	return &buffers.parsed;
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
	if (fstat(fd, &st) != 0 || st.st_uid != cache_owner() || !S_ISREG(st.st_mode)) {
		close(fd);
		return RECORD_LOCK_NONE;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	uint64_t deadline = refclock_now_ns(CLOCK_MONOTONIC) + wait_ns;
	while (refclock_now_ns(CLOCK_MONOTONIC) < deadline) {
		struct timespec nap = {.tv_nsec = 500000};
		nanosleep(&nap, NULL);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
	}
	close(fd); /* releases the lock if it was taken: the record is what we waited for */
	return RECORD_LOCK_WAITED;
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
	out->counter_invariant = 1; /* measured only after step 4 found it invariant */
	out->cpus = *key->cpus;
	out->all_cpus = cpu_mask_holds_every_possible(key->cpus);
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

void record_keep(const char *path, const struct cache_record *rec)
{
	/* Read it again now, so that the rewrite keeps its records for other CPU sets and
	 * whatever other processes wrote since the decision's part read it (a verdict from
	 * the machine-wide record left it unread; a part may have read it long ago). Only a
	 * forced decision keeps a record: it measured, so one read more is nothing. */
	const char *where;
	read_cache(path, &where);
	cache_insert(&buffers.parsed, rec);
	if (cache_write(where, &buffers.parsed, false, buffers.file, sizeof buffers.file, rare.err,
			sizeof rare.err) != 0) {
		text_line(rare.note, sizeof rare.note, rare.err, "; every start measures", NULL);
		if (say_level >= 1)
			say("cache ", rare.note, NULL);
	} else {
		rare.note[0] = '\0';
	}
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
