/* What `tscshim ab` reports: the per-variant summaries, the ratios to the first variant
 * with their verdicts, the outliers, the TSC's share; as a table, JSON or Markdown. */
#define _GNU_SOURCE
#include "ab_report.h"
#include "plot.h"
#include "samples.h"

#include "report.h"

#include "tscshim.h"

#include <limits.h>
#include <string.h>
#include <sys/wait.h>

/* ---- table ---- */

/* An argument as a shell would need it: bare when safe, else $'...' with C escapes, so
 * the command line in the report can be pasted back. */
static void print_shell_word(FILE *out, const char *w)
{
	if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+./:,@%") == strlen(w)) {
		fputs(w, out);
		return;
	}
	fputs("$'", out);
	for (; *w; w++) {
		unsigned char ch = (unsigned char)*w;
		if (ch == '\'' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", out);
		else if (ch == '\t')
			fputs("\\t", out);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(out, "\\x%02x", ch);
		else
			fputc(ch, out);
	}
	fputc('\'', out);
}

/* "without the shim" or "with the shim; TSCSHIM_FENCE=0 (variant), TSCSHIM_CACHE=... (environment)" */
static void print_settings(FILE *out, const struct ab_variant *v, bool markdown)
{
	if (!v->shim) {
		fputs("without the shim", out);
		return;
	}
	fputs("with the shim", out);
	int shown = 0;
	for (int id = 0; id < OPTION_COUNT; id++) {
		const char *value = ab_variant_value(v, id);
		if (!value || id == OPT_STATS)
			continue;
		fprintf(out, "%s%s%s=%s%s%s", shown++ ? ", " : "; ", markdown ? "`" : "", option_table[id].name, value,
			markdown ? "`" : "", v->set[id] ? "" : " (environment)");
	}
}

static void print_outlier_runs(FILE *out, const struct ab_config *c, const struct ab_run *runs,
			       const struct ab_summary *s, int q, int v)
{
	int shown = 0;
	for (long i = 0; i < ab_run_count(c); i++)
		if (runs[i].variant == v && s->outlier[q][i])
			fprintf(out, "%s%d", shown++ ? ", " : "run ", runs[i].pair);
}

static void print_row(FILE *out, const char *what, const char *variant, double min, double median, double max,
		      bool seconds)
{
	if (seconds)
		fprintf(out, "%-12s %-10s %12.6f %12.6f %12.6f", what, variant, min, median, max);
	else
		fprintf(out, "%-12s %-10s %12.6g %12.6g %12.6g", what, variant, min, median, max);
}

static void print_header(FILE *out, const struct ab_config *c)
{
	if (!c->custom_variants)
		fprintf(out,
			"tscshim ab: %ld runs each of A (without the shim) and B (with it), alternating, after %ld warmup pair(s)\n",
			c->runs, c->warmup);
	else
		fprintf(out, "tscshim ab: %ld runs each of %d variants, interleaved, after %ld warmup round(s)\n", c->runs,
			c->variants, c->warmup);
	fprintf(out, "command:");
	for (char **a = c->cmd; *a; a++) {
		fputc(' ', out);
		print_shell_word(out, *a);
	}
	fputc('\n', out);
	if (c->server) {
		fprintf(out, "server: %s (ready: %s%s)\n", c->server, c->ready.file ? "file " : "",
			c->ready.file ? c->ready.file : c->ready.tcp_spec);
	}
	for (int v = 0; v < c->variants; v++) {
		fprintf(out, "variant %-10s ", c->variant[v].name);
		print_settings(out, &c->variant[v], false);
		fputc('\n', out);
	}
	fprintf(out, "machine: %s; clocksource %s; %s; tscshim %s\n", c->machine.cpu[0] ? c->machine.cpu : "unknown CPU",
		c->machine.clocksource[0] ? c->machine.clocksource : "unknown", c->machine.kernel, TSCSHIM_VERSION);
}

static void print_summary(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s)
{
	fprintf(out, "%-12s %-10s %12s %12s %12s  %s\n", "", "", "min", "median", "max", "outliers (> 3 MADs)");
	for (int q = 0; q < s->quantities; q++) {
		char what[64];
		if (q == 0)
			snprintf(what, sizeof what, "wall s");
		else
			snprintf(what, sizeof what, "%s", c->metric[q - 1].name);
		for (int v = 0; v < c->variants; v++) {
			print_row(out, v ? "" : what, c->variant[v].name, s->q[q][v].min, s->q[q][v].median, s->q[q][v].max,
				  q == 0);
			if (s->outliers[q][v])
				fputs("  ", out);
			print_outlier_runs(out, c, runs, s, q, v);
			fputc('\n', out);
		}
		if (q == 0) {
			for (int k = 0; k < 2; k++)
				for (int v = 0; v < c->variants; v++) {
					const struct ab_spread *t = k ? &s->sys[v] : &s->user[v];
					print_row(out, v ? "" : k ? "sys s" : "user s", c->variant[v].name, t->min, t->median, t->max,
						  true);
					fputc('\n', out);
				}
		}
	}
	for (int q = 0; q < s->quantities; q++)
		for (int v = 1; v < c->variants; v++) {
			const struct ab_interval *r = &s->ratio[q][v];
			fprintf(out, "%s/%s %s, pair by pair: median %.4f  p10 %.4f  p90 %.4f  (%zu pairs)", c->variant[v].name,
				c->variant[0].name, ab_quantity_name(c, q), r->median, r->p10, r->p90, r->n);
			if (q > 0)
				fprintf(out, "  (%s is better)", ab_higher_is_better(c, q) ? "higher" : "lower");
			fprintf(out, "\n  %s: %s\n", q == 0 ? "wall time" : ab_quantity_name(c, q), s->verdict[q][v]);
		}
}

static void print_runs(FILE *out, const struct ab_config *c, const struct ab_run *runs)
{
	fprintf(out, "%-5s %-10s %12s %10s %10s", "pair", "side", "wall s", "user s", "sys s");
	for (int m = 0; m < c->metrics; m++)
		fprintf(out, " %12s", c->metric[m].name);
	fprintf(out, " %-10s %s\n", "status",
		c->server ? "server: TSC served/total clock calls" : "TSC served/total clock calls");
	for (long i = 0; i < ab_run_count(c); i++) {
		const struct ab_run *r = &runs[i];
		char st[32];
		ab_status_text(st, sizeof st, r);
		fprintf(out, "%-5d %-10s %12.6f %10.6f %10.6f", r->pair, c->variant[r->variant].name, r->wall, r->user,
			r->sys);
		for (int m = 0; m < c->metrics; m++)
			if (r->has_metric[m])
				fprintf(out, " %12.6g", r->metric[m]);
			else
				fprintf(out, " %12s", "-");
		fprintf(out, " %s", st);
		if (c->variant[r->variant].shim) {
			const struct ab_tsc *t = c->server ? &r->server_tsc : &r->tsc;
			fprintf(out, "%*s %llu/%llu", (int)(strlen(st) < 10 ? 10 - strlen(st) : 0), "", ab_tsc_served(t),
				ab_tsc_total(t));
		}
		if (r->failure[0])
			fprintf(out, "  (%s)", r->failure);
		fputc('\n', out);
	}
}

static void print_tsc(FILE *out, const struct ab_config *c, const struct ab_summary *s)
{
	for (int v = 0; v < c->variants; v++) {
		if (!c->variant[v].shim)
			continue;
		const struct ab_tsc *t = ab_measured_tsc(c, s, v);
		fprintf(out, "%s, all runs%s: TSC served %llu of %llu clock calls (", c->variant[v].name,
			c->server ? " (server)" : "", ab_tsc_served(t), ab_tsc_total(t));
		for (int k = 0; k < AB_CLOCKS; k++)
			fprintf(out, "%s%s %llu/%llu", k ? ", " : "", stats_clock_name(k), t->served[k], t->total[k]);
		fprintf(out, "); %d of %d process(es) served by the TSC\n", t->active, t->lines);
		const struct ab_decision *d = &c->decision[v];
		/* The benefit gate's reason starts "pass-through: ..." itself: said once. */
		bool says_it = strncmp(d->shim.reason, "pass-through", 12) == 0;
		/* The decision comes from a probe process with this variant's settings; the
		 * command's own processes may load other libraries (or a wrapper may), and
		 * decide otherwise: the counts above are what happened. */
		bool differs = d->known && (d->shim.active ? t->active == 0 : t->active > 0);
		if (d->known)
			fprintf(out, "%s, the shim's decision in a probe process: %s%s%s%s\n", c->variant[v].name,
				says_it ? "" : d->shim.active ? "serving from the TSC" : "passing through",
				says_it ? "" : ": ", d->shim.reason,
				differs ? " (the command's own processes decided otherwise: see the counts above)" : "");
	}
}

void ab_print_table(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s)
{
	print_header(out, c);
	print_summary(out, c, runs, s);
	print_runs(out, c, runs);
	print_tsc(out, c, s);
	if (s->failed)
		fprintf(out, "FAILED: %d of %ld runs failed (see status above)\n", s->failed, ab_run_count(c));
}

/* ---- JSON ---- */

static void json_number(FILE *out, double x)
{
	fprintf(out, "%.9g", x);
}

static void json_tsc(FILE *out, const struct ab_tsc *t)
{
	fprintf(out, "{\"served\": %llu, \"total\": %llu, \"stats_lines\": %d, \"processes_served\": %d",
		ab_tsc_served(t), ab_tsc_total(t), t->lines, t->active);
	for (int k = 0; k < AB_CLOCKS; k++)
		fprintf(out, ", \"%s\": {\"served\": %llu, \"total\": %llu}", stats_clock_name(k), t->served[k], t->total[k]);
	fputc('}', out);
}

static void json_variant(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s,
			 int v)
{
	const struct ab_variant *var = &c->variant[v];
	fprintf(out, "  {\"name\": ");
	json_write_string(out, var->name);
	fprintf(out, ", \"shim\": %s, \"settings\": {", var->shim ? "true" : "false");
	int shown = 0;
	for (int id = 0; id < OPTION_COUNT && var->shim; id++) {
		const char *value = ab_variant_value(var, id);
		if (!value || id == OPT_STATS)
			continue;
		fprintf(out, "%s\"%s\": ", shown++ ? ", " : "", option_table[id].name);
		json_write_string(out, value);
	}
	fprintf(out, "}, \"settings_from_variant\": [");
	shown = 0;
	for (int id = 0; id < OPTION_COUNT; id++)
		if (var->set[id])
			fprintf(out, "%s\"%s\"", shown++ ? ", " : "", option_table[id].name);
	fprintf(out, "],\n   \"decision\": ");
	const struct ab_decision *d = &c->decision[v];
	if (!var->shim || !d->known) {
		fprintf(out, "null");
	} else {
		fprintf(out, "{\"served\": %s, \"fenced\": %s, \"rate_hz\": %.3f, \"reason\": ", d->shim.active ? "true" : "false",
			d->shim.fenced ? "true" : "false", (double)d->shim.rate_millihz / 1000);
		json_write_string(out, d->shim.reason);
		fputc('}', out);
	}
	fprintf(out, ",\n   \"wall_s\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f, \"n\": %zu}", s->q[0][v].min,
		s->q[0][v].median, s->q[0][v].max, s->q[0][v].n);
	fprintf(out, ", \"user_s\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f}", s->user[v].min,
		s->user[v].median, s->user[v].max);
	fprintf(out, ", \"sys_s\": {\"min\": %.6f, \"median\": %.6f, \"max\": %.6f},\n   \"metrics\": {", s->sys[v].min,
		s->sys[v].median, s->sys[v].max);
	for (int q = 1; q < s->quantities; q++) {
		fprintf(out, "%s\"%s\": {\"min\": ", q > 1 ? ", " : "", ab_quantity_name(c, q));
		json_number(out, s->q[q][v].min);
		fprintf(out, ", \"median\": ");
		json_number(out, s->q[q][v].median);
		fprintf(out, ", \"max\": ");
		json_number(out, s->q[q][v].max);
		fprintf(out, ", \"n\": %zu}", s->q[q][v].n);
	}
	fprintf(out, "},\n   \"outliers\": {");
	for (int q = 0; q < s->quantities; q++) {
		fprintf(out, "%s\"%s\": [", q ? ", " : "", ab_quantity_name(c, q));
		int shown_runs = 0;
		for (long i = 0; i < ab_run_count(c); i++)
			if (runs[i].variant == v && s->outlier[q][i])
				fprintf(out, "%s%d", shown_runs++ ? ", " : "", runs[i].pair);
		fputc(']', out);
	}
	fprintf(out, "},\n   \"tsc\": ");
	json_tsc(out, &s->tsc[v]);
	if (c->server) {
		fprintf(out, ",\n   \"server_tsc\": ");
		json_tsc(out, &s->server_tsc[v]);
	}
	fputc('}', out);
}

static void json_comparisons(FILE *out, const struct ab_config *c, const struct ab_summary *s)
{
	int shown = 0;
	for (int q = 0; q < s->quantities; q++)
		for (int v = 1; v < c->variants; v++) {
			const struct ab_interval *r = &s->ratio[q][v];
			fprintf(out, "%s\n  {\"quantity\": \"%s\", \"variant\": ", shown++ ? "," : "", ab_quantity_name(c, q));
			json_write_string(out, c->variant[v].name);
			fprintf(out, ", \"baseline\": ");
			json_write_string(out, c->variant[0].name);
			fprintf(out, ", \"better\": \"%s\", \"pairs\": %zu, \"ratio\": {\"median\": %.6f, \"p10\": %.6f, "
				     "\"p90\": %.6f, ",
				ab_higher_is_better(c, q) ? "higher" : "lower", r->n, r->median, r->p10, r->p90);
			if (r->has_interval)
				fprintf(out, "\"low\": %.6f, \"high\": %.6f, \"coverage\": %.4f}", r->low, r->high, r->coverage);
			else
				fprintf(out, "\"low\": null, \"high\": null, \"coverage\": null}");
			fprintf(out, ", \"difference\": \"%s\", \"verdict\": ", ab_outcome_names[s->outcome[q][v]]);
			json_write_string(out, s->verdict[q][v]);
			fputc('}', out);
		}
}

static void json_optional(FILE *out, const char *key, const char *value)
{
	fprintf(out, ", \"%s\": ", key);
	if (value)
		json_write_string(out, value);
	else
		fprintf(out, "null");
}

static void json_run(FILE *out, const struct ab_config *c, const struct ab_run *r)
{
	fprintf(out, "  {\"pair\": %d, \"side\": ", r->pair);
	json_write_string(out, c->variant[r->variant].name);
	fprintf(out, ", \"wall_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, \"exit_status\": ", r->wall, r->user, r->sys);
	if (WIFEXITED(r->status) && !r->timed_out)
		fprintf(out, "%d, \"signal\": null", WEXITSTATUS(r->status));
	else
		fprintf(out, "null, \"signal\": %d", WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0);
	fprintf(out, ", \"timed_out\": %s, \"ok\": %s", r->timed_out ? "true" : "false", ab_run_ok(r) ? "true" : "false");
	json_optional(out, "failure", r->failure[0] ? r->failure : NULL);
	fprintf(out, ", \"metrics\": {");
	for (int m = 0; m < c->metrics; m++) {
		fprintf(out, "%s\"%s\": ", m ? ", " : "", c->metric[m].name);
		if (r->has_metric[m])
			json_number(out, r->metric[m]);
		else
			fprintf(out, "null");
	}
	fputc('}', out);
	if (c->variant[r->variant].shim && !c->server)
		fprintf(out, ", \"tsc_served\": %llu, \"clock_calls\": %llu, \"processes_served\": %d, \"stats_lines\": %d",
			ab_tsc_served(&r->tsc), ab_tsc_total(&r->tsc), r->tsc.active, r->tsc.lines);
	if (c->server) {
		fprintf(out, ", \"server\": {\"stop\": ");
		json_write_string(out, r->server_stop);
		if (c->variant[r->variant].shim)
			fprintf(out, ", \"tsc_served\": %llu, \"clock_calls\": %llu, \"processes_served\": %d",
				ab_tsc_served(&r->server_tsc), ab_tsc_total(&r->server_tsc), r->server_tsc.active);
		fputc('}', out);
	}
	fputc('}', out);
}

void ab_print_json(FILE *out, const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s)
{
	fprintf(out, "{\"tool\": \"tscshim ab\", \"tscshim_version\": \"%s\", \"argv\": [", TSCSHIM_VERSION);
	for (char **a = c->cmd; *a; a++) {
		if (a != c->cmd)
			fprintf(out, ", ");
		json_write_string(out, *a);
	}
	fputc(']', out);
	json_optional(out, "server", c->server);
	json_optional(out, "ready", c->ready.file ? c->ready.file : c->ready.tcp_spec);
	json_optional(out, "setup", c->setup);
	json_optional(out, "prepare", c->prepare);
	json_optional(out, "cleanup", c->cleanup);
	fprintf(out, ",\n \"runs\": %ld, \"warmup\": %ld, \"drop_outliers\": %s", c->runs, c->warmup,
		c->drop_outliers ? "true" : "false");
	fprintf(out, ",\n \"machine\": {\"cpu\": ");
	json_write_string(out, c->machine.cpu);
	fprintf(out, ", \"clocksource\": ");
	json_write_string(out, c->machine.clocksource);
	fprintf(out, ", \"kernel\": ");
	json_write_string(out, c->machine.kernel);
	fprintf(out, "},\n \"metrics\": [");
	for (int m = 0; m < c->metrics; m++) {
		fprintf(out, "%s{\"name\": ", m ? ", " : "");
		json_write_string(out, c->metric[m].name);
		fprintf(out, ", \"regex\": ");
		json_write_string(out, c->metric[m].pattern);
		fprintf(out, ", \"better\": \"%s\"}", c->metric[m].higher_is_better ? "higher" : "lower");
	}
	fprintf(out, "],\n \"variants\": [\n");
	for (int v = 0; v < c->variants; v++) {
		json_variant(out, c, runs, s, v);
		fprintf(out, "%s\n", v + 1 < c->variants ? "," : "");
	}
	fprintf(out, " ],\n \"comparisons\": [");
	json_comparisons(out, c, s);
	fprintf(out, "\n ],\n \"failed\": %d,\n \"detail\": [\n", s->failed);
	for (long i = 0; i < ab_run_count(c); i++) {
		json_run(out, c, &runs[i]);
		fprintf(out, "%s\n", i + 1 < ab_run_count(c) ? "," : "");
	}
	fprintf(out, " ]}\n");
}

/* ---- Markdown ---- */

void ab_print_markdown(FILE *out, const struct ab_config *c, const struct ab_summary *s)
{
	fprintf(out, "| variant | settings | wall s, median (min-max) |");
	for (int m = 0; m < c->metrics; m++)
		fprintf(out, " %s, median (%s is better) |", c->metric[m].name,
			c->metric[m].higher_is_better ? "higher" : "lower");
	fprintf(out, " TSC served / clock calls |\n|---|---|---:|");
	for (int m = 0; m < c->metrics; m++)
		fprintf(out, "---:|");
	fprintf(out, "---:|\n");
	for (int v = 0; v < c->variants; v++) {
		fprintf(out, "| %s | ", c->variant[v].name);
		print_settings(out, &c->variant[v], true);
		fprintf(out, " | %.6f (%.6f-%.6f) |", s->q[0][v].median, s->q[0][v].min, s->q[0][v].max);
		for (int q = 1; q < s->quantities; q++)
			fprintf(out, " %.6g |", s->q[q][v].median);
		const struct ab_tsc *t = ab_measured_tsc(c, s, v);
		if (c->variant[v].shim)
			fprintf(out, " %llu / %llu |\n", ab_tsc_served(t), ab_tsc_total(t));
		else
			fprintf(out, " - |\n");
	}
	fprintf(out, "\n| comparison | quantity | ratio, median | 95%% interval | verdict |\n|---|---|---:|---:|---|\n");
	for (int q = 0; q < s->quantities; q++)
		for (int v = 1; v < c->variants; v++) {
			const struct ab_interval *r = &s->ratio[q][v];
			fprintf(out, "| %s/%s | %s | %.4f | ", c->variant[v].name, c->variant[0].name, ab_quantity_name(c, q),
				r->median);
			if (r->has_interval)
				fprintf(out, "%.4f-%.4f", r->low, r->high);
			else
				fprintf(out, "-");
			fprintf(out, " | %s |\n", s->verdict[q][v]);
		}
}

/* ---- stderr ---- */

void ab_print_warnings(const struct ab_config *c, const struct ab_run *runs, const struct ab_summary *s,
		       int warmup_failed)
{
	if (warmup_failed)
		fprintf(stderr, "tscshim ab: %d warmup run(s) of the command failed\n", warmup_failed);
	for (int q = 0; q < s->quantities; q++)
		for (int v = 0; v < c->variants; v++) {
			if (!s->outliers[q][v])
				continue;
			fprintf(stderr, "tscshim ab: outlier(s) in %s, %s: ", q ? ab_quantity_name(c, q) : "wall time",
				c->variant[v].name);
			print_outlier_runs(stderr, c, runs, s, q, v);
			fprintf(stderr, " (beyond 3 MADs of the median %.6g); %s\n", s->q[q][v].median,
				c->drop_outliers ? "dropped from the statistics" : "kept (--drop-outliers drops them)");
		}
	for (int v = 0; v < c->variants; v++) {
		const struct ab_tsc *t = ab_measured_tsc(c, s, v);
		if (c->variant[v].shim && ab_tsc_served(t) == 0)
			fprintf(stderr,
				"tscshim ab: WARNING: THE TSC SERVED NO CLOCK CALL IN ANY %s RUN (%d process(es) reported "
				"stats): %s measured the real clock, not the shim\n",
				c->variant[v].name, t->lines, c->variant[v].name);
	}
}

/* ---- plot ---- */

void ab_plot(const struct ab_config *c, const struct ab_run *runs)
{
	char dir[PATH_MAX];
	if (plot_tempdir(dir, sizeof dir) != 0) {
		fprintf(stderr, "tscshim ab: cannot create a temporary directory for the plot\n");
		return;
	}
	char path[PATH_MAX + 64];
	bool ok = true;
	for (int v = 0; v < c->variants; v++) {
		double x[c->runs];
		size_t k = 0;
		for (long i = 0; i < c->runs * c->variants; i++)
			if (runs[i].variant == v)
				x[k++] = runs[i].wall;
		samples_sort(x, k);
		snprintf(path, sizeof path, "%s/%d.dat", dir, v);
		FILE *d = fopen(path, "w");
		if (!d) {
			ok = false;
			continue;
		}
		for (size_t i = 0; i < k; i++)
			fprintf(d, "%.6f %.6f\n", x[i], (double)(i + 1) / (double)k);
		fclose(d);
	}
	snprintf(path, sizeof path, "%s/plot.gp", dir);
	FILE *s = fopen(path, "w");
	if (s && ok) {
		plot_header(s, c->terminal, c->plot_file, "tscshim ab: wall time CDF of each variant");
		fprintf(s, "set xlabel 'wall s'\nset ylabel 'fraction of runs'\nplot ");
		for (int v = 0; v < c->variants; v++)
			fprintf(s, "%s'%s/%d.dat' using 1:2 with steps title '%s%s'", v ? ", " : "", dir, v,
				c->variant[v].name, c->variant[v].shim ? "" : " (without the shim)");
		fputc('\n', s);
	}
	if (s)
		fclose(s);
	if (s && ok && plot_run("ab", dir, "plot.gp") == 0)
		fprintf(stderr, "tscshim ab: plot written to %s\n", c->plot_file);
	plot_cleanup(dir);
}
