/* The load-time decision: options, then the cache or the estimator and a calibration,
 * then the verdict; opens the TSC path only when every check passes. */
#define _GNU_SOURCE
#include "shim.h"

#include "cache.h"
#include "calibrate.h"
#include "counter.h"
#include "estimate.h"
#include "refclock.h"
#include "system.h"
#include "text.h"
#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <pthread.h>
#include <sched.h>

struct gate_result gate = {.max_shift_ns = UINT64_MAX};

static unsigned verbosity;

static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "tscshim: %s\n", line);
}

static void pass_through(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(gate.reason, sizeof gate.reason, fmt, ap);
	va_end(ap);
	gate.active = false;
}

static const char *lookup_environment(const char *name)
{
	return getenv(name);
}

/* The verdict and rate: from the cache when it matches this boot, CPU and CPU set,
 * else measured (and cached). Returns 0, or -1 with gate.reason set. */
static int measure(const struct option_values *o, const struct counter_identity *id,
		   struct verdict *v)
{
	char boot_id[sizeof ((struct cache_record *)0)->boot_id], clocksource[64], err[256];
	read_boot_id(boot_id, sizeof boot_id);
	clocksource[0] = '\0';
	if (o->num[OPT_REQUIRE_TSC_CLOCKSOURCE])
		read_current_clocksource(clocksource, sizeof clocksource);

	/* The cache key needs only the set's size and hash: on a warm start nothing else
	 * would allocate, so the common case stays off the heap. */
	int cpu_count;
	uint64_t set_hash;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		int ids[CPU_SETSIZE];
		cpu_count = 0;
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				ids[cpu_count++] = cpu;
		set_hash = cache_cpu_set_hash(ids, (uint32_t)cpu_count);
	} else {
		int *cpus = NULL;
		cpu_count = allowed_cpus(&cpus);
		if (cpu_count < 1) {
			pass_through("cannot read the CPU affinity");
			return -1;
		}
		set_hash = cache_cpu_set_hash(cpus, (uint32_t)cpu_count);
		free(cpus);
	}

	char path[OPTION_TEXT_MAX + 64] = "";
	bool use_cache = strcmp(o->text[OPT_CACHE], "off") != 0;
	if (use_cache) {
		if (o->text[OPT_CACHE][0]) {
			struct text t = text_start(path, sizeof path); /* no printf at load: text.h */
			text_add(&t, o->text[OPT_CACHE]);
		}
		else if (cache_default_path(getenv("XDG_RUNTIME_DIR"), path, sizeof path) != 0)
			use_cache = false;
	}

	struct estimate_analysis analysis = {0};
	struct cache_record rec;
	bool hit = false;
	if (use_cache) {
		int rc = cache_read(path, &rec, err, sizeof err);
		if (rc == CACHE_OK && cache_matches(&rec, boot_id, id->signature, id->model,
						    (uint32_t)cpu_count, set_hash)) {
			hit = true;
		} else if (verbosity >= 2 || (rc != CACHE_OK && rc != CACHE_MISSING && verbosity >= 1)) {
			if (rc == CACHE_OK)
				say("cache %s: measured on another boot, CPU or CPU set; rebuilding", path);
			else
				say("%s", err);
		}
	}
	if (hit) {
		analysis.verdict = (enum estimate_verdict)rec.estimate_verdict;
		analysis.max_shift_ticks = rec.max_shift_ticks;
		analysis.loops = UINT64_MAX;
		analysis.min_ranges = UINT32_MAX;
		gate.rate_millihz = rec.rate_millihz;
		gate.from_cache = true;
	} else {
		struct estimate_config config = {
			.probes_per_cpu = (uint32_t)o->num[OPT_PROBES],
			.budget_ns = o->num[OPT_ESTIMATE_BUDGET_US] * 1000,
			.limits = ESTIMATE_DEFAULT_LIMITS,
		};
		struct estimate_report report;
		if (estimate_run(&config, &report, err, sizeof err) != 0) {
			pass_through("%s", err);
			return -1;
		}
		analysis = report.analysis;
		estimate_report_free(&report);
		struct rate_estimate rate;
		if (calibrate_rate(o->num[OPT_CALIBRATE_US] * 1000, &rate, err, sizeof err) != 0) {
			pass_through("%s", err);
			return -1;
		}
		gate.rate_millihz = rate.rate_millihz;
		if (use_cache && analysis.verdict != ESTIMATE_INCONCLUSIVE) {
			rec = (struct cache_record){
				.cpu_signature = id->signature,
				.cpu_count = (uint32_t)cpu_count,
				.cpu_set_hash = set_hash,
				.estimate_verdict = (uint32_t)analysis.verdict,
				.max_shift_ticks = analysis.max_shift_ticks,
				.rate_millihz = rate.rate_millihz,
				.precision_ppm = rate.precision_ppm,
				.created_ns = refclock_now_ns(CLOCK_REALTIME),
			};
			snprintf(rec.boot_id, sizeof rec.boot_id, "%s", boot_id);
			snprintf(rec.cpu_model, sizeof rec.cpu_model, "%s", id->model);
			if (cache_write(path, &rec, err, sizeof err) != 0 && verbosity >= 1)
				say("cache not written: %s", err);
		}
	}

	struct verdict_inputs in = {
		.counter_present = id->present,
		.counter_invariant = id->invariant,
		.analysis = &analysis,
		.rate_millihz = gate.rate_millihz,
		.max_skew_ns = o->num[OPT_MAX_SKEW_NS],
		.require_tsc_clocksource = o->num[OPT_REQUIRE_TSC_CLOCKSOURCE] != 0,
		.clocksource = clocksource,
	};
	verdict_decide(&in, v);
	gate.max_shift_ns = v->max_shift_ns;
	return 0;
}

void gate_run(void)
{
	struct option_values o;
	char err[256];
	uint64_t began = refclock_now_ns(CLOCK_MONOTONIC);

	if (getauxval(AT_SECURE)) {
		/* setuid and the like: the environment and the cache belong to someone else. */
		pass_through("secure execution: environment and cache ignored, passing through");
		return;
	}
	if (options_load(&o, lookup_environment, err, sizeof err) != 0) {
		say("%s; passing every call to the real clock", err);
		pass_through("%s", err);
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
		struct counter_identity id;
		counter_identify_basic(&id);
		struct verdict v;
		if (measure(&o, &id, &v) == 0) {
			memcpy(gate.reason, v.reason, sizeof gate.reason);
			gate.reason[sizeof gate.reason - 1] = '\0';
			if (v.reliable) {
				struct line_setup setup = {
					.ns_per_tick = 1e12L / (long double)gate.rate_millihz,
					.max_error_ns = o.num[OPT_MAX_ERROR_NS],
					.resync_ms = o.num[OPT_RESYNC_MS],
					.served = gate.served,
					.fenced = gate.fenced,
				};
				if (clock_start(&setup, err, sizeof err) == 0)
					gate.active = true;
				else
					pass_through("%s", err);
			}
		}
	}
	if (verbosity >= 1)
		say("%s: %s (rate %llu.%03llu Hz%s, %s reads, decided in %llu us)",
		    gate.active ? "serving from the TSC" : "passing through", gate.reason,
		    (unsigned long long)(gate.rate_millihz / 1000),
		    (unsigned long long)(gate.rate_millihz % 1000),
		    gate.from_cache ? ", from cache" : "", gate.fenced ? "fenced" : "unfenced",
		    (unsigned long long)((refclock_now_ns(CLOCK_MONOTONIC) - began) / 1000));
}
