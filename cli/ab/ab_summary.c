/* The statistics of a whole `tscshim ab` from its runs. */
#include "ab_summary.h"

#include <stdlib.h>
#include <string.h>

const char *ab_quantity_name(const struct ab_config *c, int q)
{
	return q == 0 ? "wall" : c->metric[q - 1].name;
}

bool ab_higher_is_better(const struct ab_config *c, int q)
{
	return q > 0 && c->metric[q - 1].higher_is_better;
}

static bool value_of(const struct ab_run *r, int q, double *out)
{
	if (q == 0) {
		*out = r->wall;
		return true;
	}
	*out = r->metric[q - 1];
	return r->has_metric[q - 1];
}

long ab_run_count(const struct ab_config *c)
{
	return c->runs * c->variants;
}

/* min, median and max of what is kept. */
static void spread_of(const double *v, size_t n, struct ab_spread *out)
{
	out->n = n;
	out->median = ab_median(v, n);
	out->min = out->max = n ? v[0] : 0;
	for (size_t i = 0; i < n; i++) {
		out->min = v[i] < out->min ? v[i] : out->min;
		out->max = v[i] > out->max ? v[i] : out->max;
	}
}

static void flag_outliers(const struct ab_config *c, const struct ab_run *runs, int q, struct ab_summary *s,
			  double *v, long *index, bool *flag)
{
	for (int var = 0; var < c->variants; var++) {
		size_t n = 0;
		for (long i = 0; i < ab_run_count(c); i++)
			if (runs[i].variant == var && value_of(&runs[i], q, &v[n]))
				index[n++] = i;
		s->outliers[q][var] = ab_outliers(v, n, flag);
		for (size_t k = 0; k < n; k++)
			s->outlier[q][index[k]] = flag[k];
	}
}

static bool dropped(const struct ab_config *c, const struct ab_summary *s, int q, long i)
{
	return c->drop_outliers && s->outlier[q][i];
}

static void summarize_quantity(const struct ab_config *c, const struct ab_run *runs, int q, struct ab_summary *s,
			       double *v)
{
	long V = c->variants;
	for (int var = 0; var < V; var++) {
		size_t n = 0;
		for (long i = 0; i < ab_run_count(c); i++)
			if (runs[i].variant == var && !dropped(c, s, q, i) && value_of(&runs[i], q, &v[n]))
				n++;
		spread_of(v, n, &s->q[q][var]);
		if (var == 0)
			continue;
		/* Pair by pair: the runs of one round are neighbours in time. */
		n = 0;
		for (long p = 0; p < c->runs; p++) {
			long b = p * V, r = p * V + var;
			double base, x;
			if (value_of(&runs[b], q, &base) && value_of(&runs[r], q, &x) && base > 0 && !dropped(c, s, q, b) &&
			    !dropped(c, s, q, r))
				v[n++] = x / base;
		}
		s->ratio[q][var] = ab_median_interval(v, n);
		s->outcome[q][var] = ab_verdict(&s->ratio[q][var], ab_higher_is_better(c, q), q == 0, c->variant[var].name,
						c->variant[0].name, s->verdict[q][var], sizeof s->verdict[q][var]);
	}
}

/* User or system time of a variant's kept runs (those kept for wall time). */
static void describe_time(const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s, int var,
			  bool system, double *v, struct ab_spread *out)
{
	size_t k = 0;
	for (long i = 0; i < ab_run_count(c); i++)
		if (runs[i].variant == var && !dropped(c, s, 0, i))
			v[k++] = system ? runs[i].sys : runs[i].user;
	spread_of(v, k, out);
}

int ab_summarize(const struct ab_config *c, const struct ab_run *runs, struct ab_summary *s)
{
	memset(s, 0, sizeof *s);
	s->quantities = 1 + c->metrics;
	long n = ab_run_count(c);
	double *v = malloc((size_t)n * sizeof *v);
	long *index = malloc((size_t)n * sizeof *index);
	bool *flag = malloc((size_t)n * sizeof *flag);
	int rc = v && index && flag ? 0 : -1;
	for (int q = 0; q < s->quantities && rc == 0; q++) {
		if (!(s->outlier[q] = calloc((size_t)n, sizeof *s->outlier[q]))) {
			rc = -1;
			break;
		}
		flag_outliers(c, runs, q, s, v, index, flag);
		summarize_quantity(c, runs, q, s, v);
	}
	for (int var = 0; var < c->variants && rc == 0; var++) {
		describe_time(c, runs, s, var, false, v, &s->user[var]);
		describe_time(c, runs, s, var, true, v, &s->sys[var]);
	}
	for (long i = 0; i < n && rc == 0; i++) {
		const struct ab_run *r = &runs[i];
		s->failed += !ab_run_ok(r);
		ab_tsc_add(&s->tsc[r->variant], &r->tsc);
		ab_tsc_add(&s->server_tsc[r->variant], &r->server_tsc);
	}
	free(v), free(index), free(flag);
	return rc;
}

void ab_summary_free(struct ab_summary *s)
{
	for (int q = 0; q < AB_QUANTITIES; q++)
		free(s->outlier[q]);
}

const struct ab_tsc *ab_measured_tsc(const struct ab_config *c, const struct ab_summary *s, int v)
{
	return c->server ? &s->server_tsc[v] : &s->tsc[v];
}
