/* Pure analysis of a CAS-ordered probe sequence (see estimate.h for the reasoning). */
#include "estimate.h"

#include <stdlib.h>
#include <string.h>

const char *estimate_verdict_name(enum estimate_verdict v)
{
	switch (v) {
	case ESTIMATE_CONSISTENT: return "consistent";
	case ESTIMATE_STUCK: return "stuck counter";
	case ESTIMATE_NOT_MONOTONIC: return "not monotonic";
	case ESTIMATE_RATE_MISMATCH: return "rates differ";
	case ESTIMATE_DISJOINT: return "offset intervals do not intersect";
	case ESTIMATE_INCONCLUSIVE: return "inconclusive";
	}
	return "?";
}

/* Per-CPU scan state besides the published cpu_offset. */
struct scan {
	bool has_own;
	uint64_t own_last;      /* this CPU's previous read */
	/* this CPU's reads since the last base read */
	bool in_run;
	uint64_t run_first, run_last;
	/* base reads since this CPU's previous read (for the reverse rate check) */
	bool base_since;
	uint64_t base_first, base_last;
	bool seen_in_loop;
};

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static void close_run(struct cpu_offset *off, struct scan *s, bool has_prev_base,
		      uint64_t prev_base, uint64_t base, uint64_t *rate_violations)
{
	/* Every read in the run happened before `base`: offset > read - base. The latest
	 * read gives the tightest lower bound, the earliest the tightest upper bound. */
	int64_t lo = diff(s->run_last, base);
	if (lo > off->lo)
		off->lo = lo;
	if (has_prev_base) {
		int64_t hi = diff(s->run_first, prev_base);
		if (hi < off->hi)
			off->hi = hi;
		off->ranges++;
		if (s->run_last >= s->run_first && base >= prev_base &&
		    s->run_last - s->run_first > base - prev_base)
			(*rate_violations)++;
	}
	s->in_run = false;
}

static void judge(const struct cpu_offset *per_cpu, uint32_t cpus,
		  struct estimate_limits limits, struct estimate_analysis *out)
{
	int64_t lowest = 0, highest = 0;
	uint32_t disjoint = UINT32_MAX, stuck = UINT32_MAX, sparse = UINT32_MAX;
	uint32_t starved = UINT32_MAX;

	out->min_ranges = UINT32_MAX;
	for (uint32_t c = 0; c < cpus; c++) {
		const struct cpu_offset *off = &per_cpu[c];
		if (off->stuck > 0 && stuck == UINT32_MAX)
			stuck = c;
		if (off->probes < 2 && starved == UINT32_MAX)
			starved = c;
		if (c == 0)
			continue;
		if (off->ranges < out->min_ranges) {
			out->min_ranges = off->ranges;
			sparse = c;
		}
		if (off->lo > off->hi && disjoint == UINT32_MAX)
			disjoint = c;
		/* Disjoint or not, the offsets seen span at least lo..hi. */
		int64_t low = off->lo < off->hi ? off->lo : off->hi;
		int64_t high = off->lo < off->hi ? off->hi : off->lo;
		if (low < lowest)
			lowest = low;
		if (high > highest)
			highest = high;
	}
	if (cpus == 1)
		out->min_ranges = 0;
	/* An unbracketed side stays at INT64_MIN/MAX; the subtraction then saturates. */
	if (lowest == INT64_MIN || highest == INT64_MAX)
		out->max_shift_ticks = UINT64_MAX;
	else
		out->max_shift_ticks = (uint64_t)highest - (uint64_t)lowest;

	/* Violations are proofs whatever the sample size; poor statistics only weaken the
	 * claim that nothing is wrong. */
	if (stuck != UINT32_MAX) {
		out->verdict = ESTIMATE_STUCK;
		out->worst_cpu = stuck;
	} else if (out->rate_violations > 0) {
		/* A rate mismatch also breaks monotonicity sooner or later; name the cause. */
		out->verdict = ESTIMATE_RATE_MISMATCH;
	} else if (out->monotonic_violations > 0) {
		out->verdict = ESTIMATE_NOT_MONOTONIC;
	} else if (disjoint != UINT32_MAX) {
		/* Unreachable from a CAS-ordered sequence (both bounds come from adjacent
		 * probes, so disjoint intervals imply a step back), kept for other inputs. */
		out->verdict = ESTIMATE_DISJOINT;
		out->worst_cpu = disjoint;
	} else if (starved != UINT32_MAX) {
		out->verdict = ESTIMATE_INCONCLUSIVE;
		out->worst_cpu = starved;
	} else if ((cpus > 1 && out->min_ranges < limits.min_ranges) ||
		   out->loops < limits.min_loops) {
		out->verdict = ESTIMATE_INCONCLUSIVE;
		out->worst_cpu = sparse == UINT32_MAX ? 0 : sparse;
	} else {
		out->verdict = ESTIMATE_CONSISTENT;
	}
}

static void note_step_back(struct estimate_analysis *out, uint64_t from, uint64_t to)
{
	out->monotonic_violations++;
	if (from - to > out->largest_step_back)
		out->largest_step_back = from - to;
}

/* One pass over the sequence: the per-CPU state and what is shared across CPUs. */
struct pass {
	uint32_t cpus;
	struct scan *scan;
	struct cpu_offset *per_cpu;
	struct estimate_analysis *out;
	bool has_base;          /* a base (CPU 0) read was seen */
	uint64_t last_base;     /* the latest one */
	uint32_t seen_in_loop;  /* CPUs read since the last full loop */
};

/* Order and progress of read i: the sequence is in true time order, so a global step
 * back is a violation, and so is a CPU's own; a CPU that repeats its value is stuck. */
static void check_order(struct pass *p, const struct probe *seq, size_t i)
{
	uint32_t c = seq[i].cpu;
	uint64_t t = seq[i].counter;
	struct scan *s = &p->scan[c];
	if (i > 0 && t < seq[i - 1].counter)
		note_step_back(p->out, seq[i - 1].counter, t);
	if (s->has_own && t < s->own_last && !(i > 0 && seq[i - 1].cpu == c))
		note_step_back(p->out, s->own_last, t);
	if (s->has_own && t == s->own_last)
		p->per_cpu[c].stuck++;
	p->per_cpu[c].probes++;
}

/* A full loop is counted each time every CPU has been read since the last one. */
static void count_loop(struct pass *p, uint32_t c)
{
	if (p->scan[c].seen_in_loop)
		return;
	p->scan[c].seen_in_loop = true;
	if (++p->seen_in_loop < p->cpus)
		return;
	p->out->loops++;
	p->seen_in_loop = 0;
	for (uint32_t k = 0; k < p->cpus; k++)
		p->scan[k].seen_in_loop = false;
}

/* A base read at t closes every other CPU's open run (bracketing it) and starts their
 * count of base reads since their own previous read. */
static void on_base_read(struct pass *p, uint64_t t)
{
	for (uint32_t k = 1; k < p->cpus; k++) {
		struct scan *o = &p->scan[k];
		if (o->in_run)
			close_run(&p->per_cpu[k], o, p->has_base, p->last_base, t, &p->out->rate_violations);
		if (!o->base_since) {
			o->base_since = true;
			o->base_first = t;
		}
		o->base_last = t;
	}
	p->has_base = true;
	p->last_base = t;
}

/* Another CPU's read at t, own_prev its previous one (had_own: it had one): the base
 * reads between the two cannot span more base ticks than this CPU's counter advanced
 * meanwhile; the read joins this CPU's run since the last base read. */
static void on_other_read(struct pass *p, uint32_t c, uint64_t t, bool had_own, uint64_t own_prev)
{
	struct scan *s = &p->scan[c];
	if (s->base_since && had_own && t >= own_prev && s->base_last >= s->base_first &&
	    s->base_last - s->base_first > t - own_prev)
		p->out->rate_violations++;
	s->base_since = false;
	if (!s->in_run) {
		s->in_run = true;
		s->run_first = t;
	}
	s->run_last = t;
}

/* Runs still open at the end have a base read only before them: upper bound only. */
static void close_open_runs(struct pass *p)
{
	for (uint32_t k = 1; k < p->cpus; k++) {
		struct scan *o = &p->scan[k];
		if (o->in_run && p->has_base) {
			int64_t hi = diff(o->run_first, p->last_base);
			if (hi < p->per_cpu[k].hi)
				p->per_cpu[k].hi = hi;
		}
	}
}

int estimate_analyze(const struct probe *seq, size_t n, uint32_t cpus,
		     struct estimate_limits limits, struct cpu_offset *per_cpu,
		     struct estimate_analysis *out)
{
	if (cpus == 0 || !per_cpu || !out)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (seq[i].cpu >= cpus)
			return -1;

	struct pass p = {.cpus = cpus, .scan = calloc(cpus, sizeof *p.scan), .per_cpu = per_cpu, .out = out};
	if (!p.scan)
		return -1;
	memset(out, 0, sizeof *out);
	out->cpus = cpus;
	out->probes = n;
	for (uint32_t c = 0; c < cpus; c++)
		per_cpu[c] = (struct cpu_offset){.lo = INT64_MIN, .hi = INT64_MAX};
	per_cpu[0].lo = per_cpu[0].hi = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t c = seq[i].cpu;
		uint64_t t = seq[i].counter;
		struct scan *s = &p.scan[c];
		bool had_own = s->has_own;
		uint64_t own_prev = s->own_last;
		check_order(&p, seq, i);
		s->has_own = true;
		s->own_last = t;
		count_loop(&p, c);
		if (c == 0)
			on_base_read(&p, t);
		else
			on_other_read(&p, c, t, had_own, own_prev);
	}
	close_open_runs(&p);
	free(p.scan);
	judge(per_cpu, cpus, limits, out);
	return 0;
}
