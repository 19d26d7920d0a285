/* The load-time decision, in steps, cheapest refusal first:
 *   1. options (secure execution: none), disabled, nothing to serve;
 *   2. the CPU alone: no invariant TSC, or not the required clocksource;
 *   3. the process's CPU set and the boot;
 *   4. the machine-wide record, then the per-user cache: a record for this set or a
 *      consistent one for a superset (an inconclusive one still waiting for its retry
 *      time means: pass through without measuring);
 *   5. else measured, in a child process within the budget, and cached;
 *   6. the reliability verdict;
 *   7. the clock started;
 *   8. the benefit gate: with TSCSHIM_SERVE=auto the path is closed again (every call
 *      passes through) unless it costs at least TSCSHIM_MIN_GAIN_PCT percent less than
 *      the kernel's clock, as measured once per cache record (shim/cost.c);
 *   9. the record kept: a record measured now, or costs measured for a cached record,
 *      written to the per-user cache (after step 8, so that the costs go with it).
 *
 * It runs in the constructor of a library preloaded into any program: at most 4 KiB of
 * stack (make stack-usage checks it), no thread, no heap on a warm start, nothing left
 * behind. Buffers for files live in static storage: the constructor runs once. */
#define _GNU_SOURCE
#include "shim.h"

#include "benefit.h"
#include "cache.h"
#include "counter.h"
#include "estimate.h"
#include "estimate_child.h"
#include "refclock.h"
#include "safefile.h"
#include "system.h"
#include "text.h"
#include "verdict.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct gate_result gate = {.max_shift_ns = UINT64_MAX, .source = ""};

static unsigned verbosity;

/* Too big for the constructor's stack, and needed once. */
static struct {
	char file[CACHE_MAX_SIZE + 1];
	struct cache_file cache;       /* the per-user cache as read (count 0: none usable) */
	struct cache_file system;
	char cache_path[SAFEFILE_PATH_MAX];
	char note[SAFEFILE_PATH_MAX + 160]; /* what went wrong with the cache, for verbose */
	char err[SAFEFILE_PATH_MAX + 160];  /* each step's message, one step at a time */
	char lock_name[SAFEFILE_PATH_MAX + 8];
	/* The record the verdict came from (its costs, if it has them), and one to write to
	 * the per-user cache at keep_path once the benefit gate has run (keep_pending). */
	const struct cache_record *used;
	struct cache_record keep;
	const char *keep_path;
	bool keep_pending;
	int lock; /* held from a cold start's measurement until its record is written */
	char why[TSCSHIM_REASON_SIZE]; /* the benefit gate's reason, being written */
} scratch = {.lock = -1};

/* One line on stderr, "tscshim: " and the parts. Neither fprintf (for an unbuffered
 * stream glibc formats through an 8 KiB buffer on the stack, which a small stack such as
 * ulimit -s 16 does not have) nor printf's formatting (about 2 KiB of stack more). */
static void say(const char *first, ...) __attribute__((sentinel));
static void say(const char *first, ...)
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

static void pass_through(const char *reason)
{
	safefile_message(gate.reason, sizeof gate.reason, reason, NULL);
	gate.active = false;
}

static const char *lookup_environment(const char *name)
{
	return getenv(name);
}

/* What a record says, as the verdict's input. */
static void analysis_of(const struct cache_record *rec, struct estimate_analysis *a)
{
	memset(a, 0, sizeof *a);
	a->verdict = (enum estimate_verdict)rec->estimate_verdict;
	a->max_shift_ticks = rec->max_shift_ticks;
	a->loops = UINT64_MAX;
	a->min_ranges = UINT32_MAX;
}

static void use_record(const struct cache_record *rec, const char *source)
{
	scratch.used = rec;
	gate.rate_millihz = rec->rate_millihz;
	gate.covered = rec->cpus;
	gate.source = source;
	gate.from_cache = true;
}

/* Step 4a: root's record for every online CPU. */
static const struct cache_record *from_system_record(const struct option_values *o,
						     const struct cache_key *key)
{
	const char *path = o->text[OPT_SYSTEM_RECORD];
	if (path[0] != '/')
		return NULL;
	char *err = scratch.err;
	struct safefile_trust root = {.owner = 0, .check_directory = 1, .max_size = CACHE_MAX_SIZE};
	int rc = cache_read(path, &root, scratch.file, sizeof scratch.file, &scratch.system, err,
			    sizeof scratch.err);
	if (rc != CACHE_OK) {
		if (verbosity >= 2 || (verbosity >= 1 && rc != CACHE_MISSING))
			say("machine-wide record ", err, NULL);
		return NULL;
	}
	int i = cache_find(&scratch.system, key);
	/* Inconclusive: the process measures for itself. */
	if (i < 0 || scratch.system.record[i].estimate_verdict == ESTIMATE_INCONCLUSIVE) {
		if (verbosity >= 2)
			say("machine-wide record ", path, ": not for this boot, CPU or CPU set", NULL);
		return NULL;
	}
	return &scratch.system.record[i];
}

/* Step 4b: the per-user cache path: the option, or the default. NULL: no cache. */
static const char *cache_path(const struct option_values *o)
{
	const char *option = o->text[OPT_CACHE];
	if (strcmp(option, "off") == 0)
		return NULL;
	if (option[0])
		return option;
	if (cache_default_path(getenv("XDG_RUNTIME_DIR"), scratch.cache_path,
			       sizeof scratch.cache_path) != 0)
		return NULL;
	return scratch.cache_path;
}

static const struct cache_record *from_cache(const char *path, const struct cache_key *key)
{
	char *err = scratch.err;
	struct safefile_trust mine = {.owner = geteuid(), .max_size = CACHE_MAX_SIZE};
	int rc = cache_read(path, &mine, scratch.file, sizeof scratch.file, &scratch.cache, err,
			    sizeof scratch.err);
	if (rc != CACHE_OK) {
		scratch.cache.count = 0;
		if (rc != CACHE_MISSING)
			safefile_message(scratch.note, sizeof scratch.note, err, NULL);
		if (verbosity >= 2 || (rc != CACHE_MISSING && verbosity >= 1))
			say("cache ", err, "; measuring and rewriting it", NULL);
		return NULL;
	}
	int i = cache_find(&scratch.cache, key);
	if (i < 0) {
		if (verbosity >= 2)
			say("cache ", path, ": measured on another boot, CPU or CPU set; measuring", NULL);
		return NULL;
	}
	return &scratch.cache.record[i];
}

/* Step 5: measured in a child, into *m and the record to keep (inconclusive when the
 * child did not answer, with m->problem saying why). Returns 0, or -1 with gate.reason set
 * when nothing may be measured. */
static int measured(const struct option_values *o, const struct cache_key *key,
		    const struct cache_record *previous, struct cache_record *rec,
		    struct measurement *m)
{
	int seccomp = read_seccomp_mode();
	if (seccomp == 1) {
		pass_through("seccomp strict mode: the estimator cannot run; passing through");
		return -1;
	}
	uint32_t min = (uint32_t)o->num[OPT_ESTIMATE_MIN_LOOPS];
	struct estimate_config config = {
		.probes_per_cpu = (uint32_t)o->num[OPT_PROBES],
		.budget_ns = o->num[OPT_ESTIMATE_BUDGET_US] * 1000,
		.limits = {.min_ranges = min, .min_loops = min},
		.cpus = key->cpus,
	};
	uint64_t calibrate_ns = o->num[OPT_CALIBRATE_US] * 1000;
	/* The child's estimate may overrun its deadline by an attempt's tail; an eighth of
	 * the budget and 5 ms are kept for that, the fork and the answer. */
	uint64_t wait_ns = config.budget_ns + calibrate_ns + 5000000;
	config.budget_ns -= config.budget_ns / 8;
	char *err = scratch.err;
	if (measure_in_child(&config, calibrate_ns, wait_ns, m, err, sizeof scratch.err) != 0) {
		memset(m, 0, sizeof *m);
		m->analysis.verdict = ESTIMATE_INCONCLUSIVE;
		safefile_message(m->problem, sizeof m->problem, err, NULL);
	}
	if (m->problem[0] && seccomp == 2) {
		/* A filter's rules cannot be read back: say that one is there. */
		struct text t = {.buf = m->problem, .size = sizeof m->problem, .len = strlen(m->problem)};
		text_add(&t, " (a seccomp filter is in force)");
	}
	if (m->problem[0] && verbosity >= 1)
		say(m->problem, NULL);
	memset(rec, 0, sizeof *rec);
	safefile_message(rec->boot_id, sizeof rec->boot_id, key->boot_id, NULL);
	rec->cpu_signature = key->cpu_signature;
	rec->cpus = *key->cpus;
	rec->estimate_verdict = m->analysis.verdict;
	rec->max_shift_ticks = m->analysis.max_shift_ticks;
	rec->rate_millihz = m->rate_millihz;
	if (m->analysis.verdict == ESTIMATE_INCONCLUSIVE || m->rate_millihz == 0) {
		rec->estimate_verdict = ESTIMATE_INCONCLUSIVE;
		rec->retry_interval_ms = cache_retry_interval_ms(previous);
		rec->retry_at_ns = refclock_now_ns(CLOCK_MONOTONIC) + rec->retry_interval_ms * 1000000;
	}
	gate.rate_millihz = m->rate_millihz;
	gate.covered = *key->cpus;
	gate.source = "measured now";
	return 0;
}

/* Only one process measures for a cache at a time: a storm of cold starts would
 * otherwise run hundreds of estimators against each other, and most would come out
 * inconclusive. The first takes "<cache>.lock" (flock, released by the kernel however the
 * process ends) and measures; the others wait for its record, at most as long as a
 * measurement may take. A lock file another user owns is ignored (it could be held for
 * ever). Returns the locked descriptor, LOCK_NONE when there is no usable lock (measure
 * anyway), or LOCK_WAITED when another process measured meanwhile. */
enum { LOCK_NONE = -1, LOCK_WAITED = -2 };
static int measure_lock(const char *path, uint64_t wait_ns)
{
	char *name = scratch.lock_name;
	struct text t = text_start(name, sizeof scratch.lock_name);
	text_add(&t, path);
	text_add(&t, ".lock");
	if (t.truncated)
		return LOCK_NONE;
	int fd = open(name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	struct stat st;
	if (fd < 0)
		return LOCK_NONE;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
		close(fd);
		return LOCK_NONE;
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
	return LOCK_WAITED;
}

static void write_cache(const char *path, const struct cache_record *rec)
{
	char *err = scratch.err;
	cache_insert(&scratch.cache, rec);
	if (cache_write(path, &scratch.cache, false, scratch.file, sizeof scratch.file, err,
			sizeof scratch.err) != 0) {
		safefile_message(scratch.note, sizeof scratch.note, err, "; every start measures", NULL);
		if (verbosity >= 1)
			say("cache ", scratch.note, NULL);
	} else {
		scratch.note[0] = '\0';
	}
}

/* An inconclusive record: pass through until its retry time, and say so. */
static void inconclusive(const struct cache_record *rec, const char *detail, struct verdict *v)
{
	uint64_t now = refclock_now_ns(CLOCK_MONOTONIC);
	uint64_t wait = rec->retry_at_ns > now ? rec->retry_at_ns - now : 0;
	memset(v, 0, sizeof *v);
	v->max_shift_ns = UINT64_MAX;
	struct text t = text_start(v->reason, sizeof v->reason);
	text_add(&t, "estimate inconclusive");
	text_add(&t, detail);
	text_add(&t, "; measured again in ");
	text_add_u64(&t, (wait + 999999999u) / 1000000000u);
	text_add(&t, " s");
}

/* Steps 2 to 6. Returns true with v filled (reliable or not), false with gate.reason set.
 * Out of line, so that its large locals are off the stack when the path is measured. */
static __attribute__((noinline)) bool decide(const struct option_values *o, struct verdict *v)
{
	struct counter_identity id;
	counter_identify_basic(&id);
	char clocksource[64] = "";
	if (o->num[OPT_REQUIRE_TSC_CLOCKSOURCE])
		read_current_clocksource(clocksource, sizeof clocksource);
	struct verdict_inputs in = {
		.counter_present = id.present,
		.counter_invariant = id.invariant,
		.max_skew_ns = o->num[OPT_MAX_SKEW_NS],
		.require_tsc_clocksource = o->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = clocksource,
		.min_interleavings = (uint32_t)o->num[OPT_ESTIMATE_MIN_LOOPS],
	};
	if (verdict_refuse_early(&in, v))
		return true;

	struct cpu_mask cpus;
	if (cpu_mask_allowed(&cpus) < 1) {
		pass_through("cannot read the CPU affinity (more than 1024 CPUs?)");
		return false;
	}
	char boot_id[sizeof ((struct cache_record *)0)->boot_id];
	read_boot_id(boot_id, sizeof boot_id);
	struct cache_key key = {.boot_id = boot_id, .cpu_signature = id.signature, .cpus = &cpus};
	struct estimate_analysis a;

	const struct cache_record *rec = from_system_record(o, &key);
	const char *path = NULL;
	if (rec) {
		use_record(rec, "from the machine-wide record");
	} else {
		path = cache_path(o);
		rec = path ? from_cache(path, &key) : NULL;
		if (rec && rec->estimate_verdict == ESTIMATE_INCONCLUSIVE &&
		    refclock_now_ns(CLOCK_MONOTONIC) < rec->retry_at_ns) {
			use_record(rec, "from the cache");
			inconclusive(rec, " on an earlier start", v);
			return true;
		}
		if (rec && rec->estimate_verdict == ESTIMATE_INCONCLUSIVE && verbosity >= 2)
			say("cache ", path, ": an inconclusive record is due for a retry; measuring", NULL);
		if (rec && rec->estimate_verdict != ESTIMATE_INCONCLUSIVE) {
			use_record(rec, "from the cache");
			scratch.keep_path = path;
		}
	}
	int lock = LOCK_NONE;
	if (!gate.from_cache && path) {
		uint64_t wait_ns = (o->num[OPT_ESTIMATE_BUDGET_US] + o->num[OPT_CALIBRATE_US]) * 1000 + 5000000;
		lock = measure_lock(path, wait_ns);
		if (lock == LOCK_WAITED) {
			rec = from_cache(path, &key);
			if (!rec || (rec->estimate_verdict == ESTIMATE_INCONCLUSIVE &&
				     refclock_now_ns(CLOCK_MONOTONIC) >= rec->retry_at_ns)) {
				pass_through("another process was measuring and left no answer within the budget");
				return false;
			}
			use_record(rec, "from the cache, after another process measured");
			scratch.keep_path = path;
			if (rec->estimate_verdict == ESTIMATE_INCONCLUSIVE) {
				inconclusive(rec, " on another process's start", v);
				return true;
			}
		}
	}
	if (gate.from_cache) {
		analysis_of(rec, &a);
	} else {
		struct cache_record fresh;
		struct measurement m;
		int rc = measured(o, &key, rec, &fresh, &m);
		if (rc == 0 && path) {
			/* Written after the benefit gate (keep_record), with its costs. */
			scratch.keep = fresh;
			scratch.keep_path = path;
			scratch.keep_pending = true;
			scratch.used = &scratch.keep;
			scratch.lock = lock;
		} else if (lock >= 0) {
			close(lock);
		}
		if (rc != 0)
			return false;
		if (fresh.estimate_verdict == ESTIMATE_INCONCLUSIVE) {
			char detail[sizeof m.problem + 80];
			struct text t = text_start(detail, sizeof detail);
			text_add(&t, ": ");
			if (m.problem[0]) {
				text_add(&t, m.problem);
			} else {
				text_add_u64(&t, m.analysis.loops);
				text_add(&t, " loops, at least ");
				text_add_u64(&t, m.analysis.min_ranges);
				text_add(&t, " ranges per CPU pair (need ");
				text_add_u64(&t, in.min_interleavings);
				text_add(&t, " each)");
			}
			inconclusive(&fresh, detail, v);
			return true;
		}
		a = m.analysis;
	}
	in.analysis = &a;
	in.rate_millihz = gate.rate_millihz;
	verdict_decide(&in, v);
	return true;
}

/* ---- step 8: the benefit gate ---- */

/* "23.4": ps as ns with one decimal. */
static void text_add_ps(struct text *t, uint64_t ps)
{
	uint64_t tenths = (ps + 50) / 100;
	text_add_u64(t, tenths / 10);
	char frac[3] = {'.', (char)('0' + tenths % 10), '\0'};
	text_add(t, frac);
}

static struct cost cost_in_ns(const struct cost_ps *c)
{
	return (struct cost){.kernel_ns = c->kernel / 1e3, .syscall_ns = c->syscall / 1e3,
			     .fenced_ns = c->fenced / 1e3, .unfenced_ns = c->unfenced / 1e3};
}

/* The costs: the record's if it has them, else measured now (on the path just opened)
 * and put in the record kept for the per-user cache when there is one. */
static void find_costs(void)
{
	const struct cache_record *rec = scratch.used;
	int c = __builtin_ctz(gate.served); /* the first served clock stands for them all */
	uint64_t build = shim_build_id();
	if (rec && rec->kernel_ps && rec->syscall_ps && rec->fenced_ps && rec->unfenced_ps &&
	    build && rec->cost_build == build) {
		gate.cost = (struct cost_ps){rec->kernel_ps, rec->syscall_ps, rec->fenced_ps,
					     rec->unfenced_ps};
		if (cost_still_applies(clock_table[c].id, gate.rate_millihz, &gate.cost))
			return;
		/* Another interposer changed how the kernel's clock is read: measure again. */
	}
	cost_measure(clock_table[c].id, gate.rate_millihz, &gate.cost);
	gate.cost_measured_now = true;
	if (!rec || !scratch.keep_path)
		return; /* root's record (no keep_path) is not ours to write; no cache: every start */
	if (rec != &scratch.keep)
		scratch.keep = *rec;
	scratch.keep.kernel_ps = gate.cost.kernel;
	scratch.keep.syscall_ps = gate.cost.syscall;
	scratch.keep.fenced_ps = gate.cost.fenced;
	scratch.keep.unfenced_ps = gate.cost.unfenced;
	scratch.keep.cost_build = build;
	scratch.keep_pending = true;
}

/* "the kernel's clock costs 23.4 ns here (a system call), the counter 27.6 ns". */
static void describe_costs(struct text *t, uint64_t counter_ps)
{
	struct cost c = cost_in_ns(&gate.cost);
	text_add(t, "the kernel's clock costs ");
	text_add_ps(t, gate.cost.kernel);
	text_add(t, benefit_kernel_path(&c) == KERNEL_PATH_SYSCALL ? " ns here (a system call), the counter "
								   : " ns here, the counter ");
	text_add_ps(t, counter_ps);
	text_add(t, " ns");
}

/* With the path open: keeps it (TSCSHIM_SERVE=always, or the counter is cheaper by the
 * minimum gain) and says why in the reason, or closes it again, costing the hot path
 * nothing more than a clock the shim does not serve. */
static __attribute__((noinline)) void benefit_gate(const struct option_values *o)
{
	find_costs();
	uint64_t counter_ps = gate.fenced ? gate.cost.fenced : gate.cost.unfenced;
	unsigned min_gain = (unsigned)o->num[OPT_MIN_GAIN_PCT];
	bool pays = benefit_pays(gate.cost.kernel / 1e3, counter_ps / 1e3, min_gain);
	char *why = scratch.why;
	struct text t = text_start(why, sizeof scratch.why);
	if (pays || o->num[OPT_SERVE] == SERVE_ALWAYS) {
		/* The reliability reason stays first: tests and people look for it. */
		text_add(&t, gate.reason);
		text_add(&t, pays ? "; " : "; TSCSHIM_SERVE=always: ");
		describe_costs(&t, counter_ps);
		memcpy(gate.reason, why, sizeof gate.reason);
		return;
	}
	clock_close();
	gate.active = false;
	gate.not_worth_it = true;
	text_add(&t, "pass-through: ");
	describe_costs(&t, counter_ps);
	text_add(&t, gate.fenced ? " (fenced), not " : " (unfenced), not ");
	text_add_u64(&t, min_gain);
	text_add(&t, "% cheaper (TSCSHIM_MIN_GAIN_PCT)");
	memcpy(gate.reason, why, sizeof gate.reason);
}

/* Step 9, whatever the verdict: the record measured now, or a cached one with costs. */
static void keep_record(void)
{
	if (scratch.keep_pending)
		write_cache(scratch.keep_path, &scratch.keep);
	if (scratch.lock >= 0)
		close(scratch.lock);
	scratch.lock = -1;
}

/* The verbose line's cost part: every figure, where it came from, and the setting. */
static void say_costs(struct text *t, const struct option_values *o)
{
	if (!gate.cost.kernel)
		return;
	struct cost c = cost_in_ns(&gate.cost);
	text_add(t, "; per call: kernel ");
	text_add_ps(t, gate.cost.kernel);
	text_add(t, " ns (");
	text_add(t, kernel_path_name(benefit_kernel_path(&c)));
	text_add(t, "), system call ");
	text_add_ps(t, gate.cost.syscall);
	text_add(t, " ns, fenced ");
	text_add_ps(t, gate.cost.fenced);
	text_add(t, " ns, unfenced ");
	text_add_ps(t, gate.cost.unfenced);
	text_add(t, gate.cost_measured_now ? " ns, measured now; TSCSHIM_SERVE=" : " ns, from the record; TSCSHIM_SERVE=");
	text_add(t, o->num[OPT_SERVE] == SERVE_ALWAYS ? "always" : "auto");
	text_add(t, ", TSCSHIM_MIN_GAIN_PCT=");
	text_add_u64(t, o->num[OPT_MIN_GAIN_PCT]);
}

/* The verbose line: the decision, its figures, and what went wrong with the cache. */
/* Out of line: its buffers stay off the stack of the measurements' deeper calls. */
static __attribute__((noinline)) void say_decision(uint64_t began, const struct option_values *o)
{
	char figures[400];
	struct text t = text_start(figures, sizeof figures);
	text_add(&t, " (rate ");
	text_add_u64(&t, gate.rate_millihz / 1000);
	text_add(&t, ".");
	text_add(&t, gate.rate_millihz % 1000 < 100 ? (gate.rate_millihz % 1000 < 10 ? "00" : "0") : "");
	text_add_u64(&t, gate.rate_millihz % 1000);
	text_add(&t, " Hz");
	text_add(&t, gate.source[0] ? ", " : "");
	text_add(&t, gate.source);
	text_add(&t, gate.fenced ? ", fenced" : ", unfenced");
	text_add(&t, " reads, decided in ");
	text_add_u64(&t, (refclock_now_ns(CLOCK_MONOTONIC) - began) / 1000);
	text_add(&t, " us");
	say_costs(&t, o);
	text_add(&t, ")");
	/* The benefit gate's reason starts "pass-through: ", which the line says already. */
	const char *reason = gate.reason + (gate.not_worth_it ? strlen("pass-through: ") : 0);
	say(gate.active ? "serving from the TSC: " : "passing through: ", reason, figures,
	    scratch.note[0] ? "; cache " : "", scratch.note, NULL);
}

void gate_run(void)
{
	struct option_values o;
	char *err = scratch.err;
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);

	if (getauxval(AT_SECURE)) {
		/* setuid and the like: the environment and the cache belong to someone else. */
		pass_through("secure execution: environment and cache ignored, passing through");
		return;
	}
	/* Step 1. */
	if (options_load(&o, lookup_environment, err, sizeof scratch.err) != 0) {
		say(err, "; passing every call to the real clock", NULL);
		pass_through(err);
		return;
	}
	verbosity = (unsigned)o.num[OPT_VERBOSE];
	stats_setup(o.text[OPT_STATS]);
	gate.served = (uint32_t)o.num[OPT_CLOCKS];
	gate.fenced = o.num[OPT_FENCE] != 0;
	if (o.num[OPT_DISABLE]) {
		pass_through("TSCSHIM_DISABLE=1");
	} else if (gate.served == 0) {
		pass_through("TSCSHIM_CLOCKS=none");
	} else {
		struct verdict v;
		if (decide(&o, &v)) {
			memcpy(gate.reason, v.reason, sizeof gate.reason);
			gate.reason[sizeof gate.reason - 1] = '\0';
			gate.max_shift_ns = v.max_shift_ns;
			if (v.reliable) {
				struct line_setup setup = {
					.ns_per_tick = 1e12L / (long double)gate.rate_millihz,
					.max_error_ns = o.num[OPT_MAX_ERROR_NS],
					.resync_ms = o.num[OPT_RESYNC_MS],
					.served = gate.served,
					.fenced = gate.fenced,
				};
				/* Steps 7 and 8. */
				if (clock_start(&setup, err, sizeof scratch.err) == 0) {
					gate.active = true;
					benefit_gate(&o);
				} else {
					pass_through(err);
				}
			}
		}
		keep_record();
	}
	if (verbosity >= 1)
		say_decision(began, &o);
}

bool gate_cpu_set_covered(void)
{
	struct cpu_mask now;
	return cpu_mask_allowed(&now) > 0 && cpu_mask_is_subset(&now, &gate.covered);
}
