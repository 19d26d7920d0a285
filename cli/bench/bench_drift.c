/* tscshim bench --drift SECONDS: how far the shim's CLOCK_MONOTONIC strays from the
 * kernel's. A child with the shim preloaded brackets one shim read between two kernel
 * reads (the system call, which the shim cannot intercept) every 10 ms; the error is the
 * shim's value minus the bracket's midpoint, uncertain by the bracket's half-width. The
 * rate error is the least-squares slope of that error over time. */
#define _GNU_SOURCE
#include "bench.h"
#include "plot.h"
#include "samples.h"
#include "shim_status.h"

#include "kernel_clock.h"
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PERIOD_NS = 10000000, TRIES = 3 };

/* In the child. Each sample keeps the narrowest of TRIES brackets: an interrupt inside
 * one widens it without moving the shim's error. */
int bench_drift_worker(double seconds)
{
	int64_t start = (int64_t)kernel_clock_ns(CLOCK_MONOTONIC);
	int64_t end = start + (int64_t)(seconds * 1e9);
	for (int64_t next = start; next < end; next += PERIOD_NS) {
		int64_t best_k1 = 0, best_k2 = INT64_MAX / 2, best_s = 0;
		for (int k = 0; k < TRIES; k++) {
			struct timespec ts;
			int64_t k1 = (int64_t)kernel_clock_ns(CLOCK_MONOTONIC);
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t k2 = (int64_t)kernel_clock_ns(CLOCK_MONOTONIC);
			if (k2 - k1 < best_k2 - best_k1) {
				best_k1 = k1, best_k2 = k2;
				best_s = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
			}
		}
		double mid = ((double)best_k1 + (double)best_k2) / 2;
		printf("d %.0f %.1f %.1f\n", (double)(best_k1 - start), (double)best_s - mid,
		       (double)(best_k2 - best_k1) / 2);
		struct timespec wake = {.tv_sec = (next + PERIOD_NS) / 1000000000,
					.tv_nsec = (next + PERIOD_NS) % 1000000000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL) == EINTR)
			;
	}
	return 0;
}

struct drift_samples {
	size_t n, cap;
	double *t, *err, *half;
};

static int add_sample(struct drift_samples *d, double t, double err, double half)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 1024;
		double *t2 = realloc(d->t, cap * sizeof *t2);
		if (t2)
			d->t = t2;
		double *e2 = realloc(d->err, cap * sizeof *e2);
		if (e2)
			d->err = e2;
		double *h2 = realloc(d->half, cap * sizeof *h2);
		if (h2)
			d->half = h2;
		if (!t2 || !e2 || !h2)
			return -1;
		d->cap = cap;
	}
	d->t[d->n] = t, d->err[d->n] = err, d->half[d->n] = half;
	d->n++;
	return 0;
}

struct drift_report {
	double seconds, abs_p50, abs_p99, abs_max, mean_err, half_p50, half_p99, half_max;
	double ppb, ppb_3se;
};

static void summarize(const struct drift_samples *d, struct drift_report *r)
{
	double *v = malloc(d->n * sizeof *v);
	if (!v)
		return;
	double sum = 0, st = 0;
	for (size_t i = 0; i < d->n; i++) {
		v[i] = fabs(d->err[i]);
		sum += d->err[i];
		st += d->t[i];
	}
	samples_sort(v, d->n);
	r->abs_p50 = samples_quantile(v, d->n, 0.5);
	r->abs_p99 = samples_quantile(v, d->n, 0.99);
	r->abs_max = v[d->n - 1];
	memcpy(v, d->half, d->n * sizeof *v);
	samples_sort(v, d->n);
	r->half_p50 = samples_quantile(v, d->n, 0.5);
	r->half_p99 = samples_quantile(v, d->n, 0.99);
	r->half_max = v[d->n - 1];
	free(v);
	r->mean_err = sum / (double)d->n;
	r->seconds = d->t[d->n - 1] / 1e9;
	/* Least squares err = a + b t; b in ns per ns is the rate error, x 1e9 in ppb. */
	double mt = st / (double)d->n, sxx = 0, sxy = 0;
	for (size_t i = 0; i < d->n; i++) {
		sxx += (d->t[i] - mt) * (d->t[i] - mt);
		sxy += (d->t[i] - mt) * (d->err[i] - r->mean_err);
	}
	double b = sxx > 0 ? sxy / sxx : 0, ss = 0;
	for (size_t i = 0; i < d->n; i++) {
		double res = d->err[i] - (r->mean_err + b * (d->t[i] - mt));
		ss += res * res;
	}
	r->ppb = b * 1e9;
	r->ppb_3se = d->n > 2 && sxx > 0 ? 3 * sqrt(ss / (double)(d->n - 2) / sxx) * 1e9 : 0;
}

static void plot(const struct drift_samples *d, const char *file, const char *terminal)
{
	char dir[PATH_MAX];
	if (plot_tempdir(dir, sizeof dir) != 0) {
		fprintf(stderr, "tscshim bench: cannot create a temporary directory for the plot\n");
		return;
	}
	char data[PATH_MAX + 32], script[PATH_MAX + 32];
	snprintf(data, sizeof data, "%s/drift.dat", dir);
	snprintf(script, sizeof script, "%s/plot.gp", dir);
	FILE *f = fopen(data, "w"), *s = fopen(script, "w");
	if (f && s) {
		for (size_t i = 0; i < d->n; i++)
			fprintf(f, "%.6f %.1f %.1f\n", d->t[i] / 1e9, d->err[i], d->half[i]);
		plot_header(s, terminal, file, "tscshim bench --drift: shim - kernel, CLOCK_MONOTONIC");
		fprintf(s, "set xlabel 's'\nset ylabel 'ns'\n"
			   "plot '%s' using 1:($2-$3):($2+$3) with filledcurves fs transparent solid 0.3 "
			   "title 'bracket (uncertainty)', '%s' using 1:2 with lines title 'shim - kernel'\n",
			data, data);
	}
	if (f)
		fclose(f);
	if (s)
		fclose(s);
	if (f && s && plot_run("bench", dir, "plot.gp") == 0)
		fprintf(stderr, "tscshim bench: plot written to %s\n", file);
	plot_cleanup(dir);
}

int bench_drift(double seconds, bool json, const char *plot_file)
{
	char arg[32];
	snprintf(arg, sizeof arg, "%.3f", seconds);
	char *args[] = {"drift", arg, NULL};
	FILE *in;
	int pid;
	if (bench_spawn_worker(args, -1, &in, &pid) != 0)
		return -1;
	struct shim_status_line shim = {0};
	struct drift_samples d = {0};
	char *line = NULL;
	size_t size = 0;
	int bad = 0;
	while (getline(&line, &size, in) > 0) {
		double t, err, half;
		if (strncmp(line, "shim ", 5) == 0)
			bad |= shim_status_parse(line, &shim) != 0;
		else if (sscanf(line, "d %lf %lf %lf", &t, &err, &half) == 3)
			bad |= add_sample(&d, t, err, half) != 0;
		else
			bad = 1;
	}
	free(line);
	fclose(in);
	int rc = bench_wait_worker(pid);
	if (rc == 0 && (bad || d.n < 2)) {
		fprintf(stderr, "tscshim bench: malformed or too short output from the drift worker\n");
		rc = -1;
	}
	if (rc == 0) {
		struct drift_report r = {0};
		summarize(&d, &r);
		if (json) {
			printf("{\"command\": \"bench --drift\", \"clock\": \"monotonic\", \"samples\": %zu, "
			       "\"seconds\": %.3f, \"period_ms\": 10,\n \"shim\": {\"active\": %s, \"fenced\": %s, "
			       "\"reason\": ",
			       d.n, r.seconds, shim.active ? "true" : "false", shim.fenced ? "true" : "false");
			json_write_string(stdout, shim.reason);
			printf("},\n \"abs_error_ns\": {\"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f},\n"
			       " \"mean_error_ns\": %.1f,\n \"bracket_half_width_ns\": {\"p50\": %.1f, \"p99\": %.1f, "
			       "\"max\": %.1f},\n \"rate_error_ppb\": %.3f, \"rate_error_ppb_3se\": %.3f}\n",
			       r.abs_p50, r.abs_p99, r.abs_max, r.mean_err, r.half_p50, r.half_p99, r.half_max,
			       r.ppb, r.ppb_3se);
		} else {
			printf("tscshim bench --drift: CLOCK_MONOTONIC, %zu samples over %.1f s, every 10 ms (shim %s)\n",
			       d.n, r.seconds, shim.active ? (shim.fenced ? "active, fenced" : "active, unfenced")
							   : "NOT ACTIVE");
			printf("|shim - kernel|      p50 %8.1f ns   p99 %8.1f ns   max %8.1f ns\n", r.abs_p50, r.abs_p99,
			       r.abs_max);
			printf("uncertainty (+/-)    p50 %8.1f ns   p99 %8.1f ns   max %8.1f ns  (half the kernel bracket)\n",
			       r.half_p50, r.half_p99, r.half_max);
			printf("mean shim - kernel   %+8.1f ns\n", r.mean_err);
			printf("rate error           %+8.3f ppb  (+/- %.3f ppb, 3 standard errors of the slope)\n", r.ppb,
			       r.ppb_3se);
		}
		if (!shim.active)
			fprintf(stderr, "tscshim bench: WARNING: the shim was not active, this measured pass-through: %s\n",
				shim.reason);
		if (plot_file && plot_available("bench"))
			plot(&d, plot_file, plot_terminal("bench", plot_file));
	}
	free(d.t), free(d.err), free(d.half);
	return rc;
}
