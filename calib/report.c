/* What `tscshim calib` found, rendered for people and as JSON (calib/report.h). */
#include "report.h"

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void print_ns(FILE *out, uint64_t ns)
{
	if (ns == UINT64_MAX)
		fprintf(out, "unknown");
	else
		fprintf(out, "%llu ns", (unsigned long long)ns);
}

void report_print_text(FILE *out, const struct calib_report *r)
{
	const struct counter_identity *id = &r->identity;
	fprintf(out, "CPU:                 %s (%s, signature 0x%x)\n", id->model[0] ? id->model : "?",
		id->vendor, id->signature);
	fprintf(out, "TSC:                 present %s, invariant %s, rdtscp %s, hypervisor %s\n",
		yes_no(id->present), yes_no(id->invariant), yes_no(id->ordered_read),
		yes_no(id->hypervisor));
	fprintf(out, "kernel clocksource:  %s (available: %s)\n",
		r->clocksource[0] ? r->clocksource : "unknown",
		r->available_clocksources[0] ? r->available_clocksources : "unknown");

	if (r->calibrated) {
		fprintf(out, "frequency:           %llu.%03llu Hz +/- %.4f ppm (%u of %u samples, %.1f ms)\n",
			(unsigned long long)(r->rate.rate_millihz / 1000),
			(unsigned long long)(r->rate.rate_millihz % 1000), r->rate.precision_ppm,
			r->rate.used, r->rate.samples, r->rate.elapsed_ns / 1e6);
		fprintf(out, "conversion:          ns = (ticks * %llu) >> %u\n",
			(unsigned long long)r->conversion.mult, r->conversion.shift);
	} else {
		fprintf(out, "frequency:           not calibrated\n");
	}

	if (r->estimated) {
		const struct estimate_report *e = &r->estimate;
		const struct estimate_analysis *a = &e->analysis;
		fprintf(out, "estimator:           %s; %u CPUs, %llu probes, %u attempt(s), %.2f ms\n",
			estimate_verdict_name(a->verdict), e->cpu_count,
			(unsigned long long)a->probes, e->attempts, e->elapsed_ns / 1e6);
		fprintf(out, "quality:             %llu full loops, at least %u ranges per CPU pair\n",
			(unsigned long long)a->loops, a->min_ranges);
		for (uint32_t c = 0; c < e->cpu_count; c++) {
			const struct cpu_offset *o = &e->per_cpu[c];
			fprintf(out, "  CPU %-4d shift vs CPU %d: ", e->cpu_ids[c], e->cpu_ids[0]);
			if (c == 0)
				fprintf(out, "base");
			else if (o->lo == INT64_MIN || o->hi == INT64_MAX)
				fprintf(out, "unbounded");
			else
				fprintf(out, "[%lld, %lld] ticks", (long long)o->lo, (long long)o->hi);
			fprintf(out, " (%u probes, %u ranges)\n", o->probes, o->ranges);
		}
		fprintf(out, "maximum shift:       ");
		if (a->max_shift_ticks == UINT64_MAX)
			fprintf(out, "unknown\n");
		else {
			fprintf(out, "%llu ticks = ", (unsigned long long)a->max_shift_ticks);
			print_ns(out, r->verdict.max_shift_ns);
			fprintf(out, "\n");
		}
		fprintf(out, "monotonic:           %s (%llu steps back)\n",
			yes_no(a->monotonic_violations == 0),
			(unsigned long long)a->monotonic_violations);
		fprintf(out, "rates consistent:    %s (%llu violations)\n",
			yes_no(a->rate_violations == 0), (unsigned long long)a->rate_violations);
	}
	if (r->costed) {
		const struct cost *c = &r->cost;
		fprintf(out, "cost per call:       kernel's clock %.1f ns (%s; the system call %.1f ns), ",
			c->kernel_ns, kernel_path_name(benefit_kernel_path(c)), c->syscall_ns);
		if (r->cost_is_shims)
			fprintf(out, "the shim fenced %.1f ns, unfenced %.1f ns (its own path, as its gate measures it)\n",
				c->fenced_ns, c->unfenced_ns);
		else
			fprintf(out, "the floor fenced %.1f ns, unfenced %.1f ns (the shim's own path not measured: %s)\n",
				c->fenced_ns, c->unfenced_ns, r->cost_note);
		fprintf(out, "floor:               fenced %.1f ns (%s), unfenced %.1f ns: the shim's read "
			     "less its line (counter read, multiply-shift, split), timed as its gate times it\n",
			r->floor.fenced_ns, r->floor_read, r->floor.unfenced_ns);
		fprintf(out, "recommendation:      %s\n", r->recommendation);
	}
	fprintf(out, "threshold:           TSCSHIM_MAX_SKEW_NS=%llu\n",
		(unsigned long long)r->max_skew_ns);
	fprintf(out, "verdict:             %s: %s\n", r->verdict.reliable ? "RELIABLE" : "NOT RELIABLE",
		r->verdict.reason);
}

void json_write_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_u64_or_null(FILE *out, uint64_t v)
{
	if (v == UINT64_MAX)
		fprintf(out, "null");
	else
		fprintf(out, "%llu", (unsigned long long)v);
}

/* The cost object: the figures the recommendation was made from, their source, the floor. */
static void print_cost_json(FILE *out, const struct calib_report *r)
{
	if (!r->costed) {
		fprintf(out, "  \"cost\": null,\n");
		return;
	}
	const struct cost *c = &r->cost;
	fprintf(out, "  \"cost\": {\"kernel_ns\": %.1f, \"kernel_path\": \"%s\", \"syscall_ns\": %.1f, "
		     "\"fenced_ns\": %.1f, \"unfenced_ns\": %.1f, \"source\": \"%s\", \"fenced_plan\": ",
		c->kernel_ns, kernel_path_name(benefit_kernel_path(c)), c->syscall_ns, c->fenced_ns, c->unfenced_ns,
		r->cost_is_shims ? "shim" : "floor");
	/* The shim's plan, where its figures are the shim's and say which; else the floor's. */
	int plan = r->cost_is_shims ? r->cost_fenced_plan : r->floor_plan;
	if (plan < 0)
		fprintf(out, "null");
	else
		fprintf(out, "%d", plan);
	fprintf(out, ", \"floor\": {\"fenced_ns\": %.1f, \"unfenced_ns\": %.1f, \"fenced_plan\": %d, \"read\": ",
		r->floor.fenced_ns, r->floor.unfenced_ns, r->floor_plan);
	json_write_string(out, r->floor_read);
	fprintf(out, "}, \"note\": ");
	json_write_string(out, r->cost_note);
	fprintf(out, ", \"recommendation\": ");
	json_write_string(out, r->recommendation);
	fprintf(out, "},\n");
}

void report_print_json(FILE *out, const struct calib_report *r)
{
	const struct counter_identity *id = &r->identity;
	fprintf(out, "{\n  \"cpu\": {\"model\": ");
	json_write_string(out, id->model);
	fprintf(out, ", \"vendor\": ");
	json_write_string(out, id->vendor);
	fprintf(out, ", \"signature\": %u, \"tsc\": %s, \"invariant_tsc\": %s, \"rdtscp\": %s, "
		     "\"hypervisor\": %s},\n",
		id->signature, id->present ? "true" : "false", id->invariant ? "true" : "false",
		id->ordered_read ? "true" : "false", id->hypervisor ? "true" : "false");
	fprintf(out, "  \"clocksource\": {\"current\": ");
	json_write_string(out, r->clocksource);
	fprintf(out, ", \"available\": ");
	json_write_string(out, r->available_clocksources);
	fprintf(out, "},\n");

	if (r->calibrated)
		fprintf(out, "  \"frequency\": {\"hz\": %llu.%03llu, \"precision_ppm\": %.6f, "
			     "\"samples\": %u, \"used\": %u, \"elapsed_ns\": %llu},\n"
			     "  \"conversion\": {\"mult\": %llu, \"shift\": %u},\n",
			(unsigned long long)(r->rate.rate_millihz / 1000),
			(unsigned long long)(r->rate.rate_millihz % 1000), r->rate.precision_ppm,
			r->rate.samples, r->rate.used, (unsigned long long)r->rate.elapsed_ns,
			(unsigned long long)r->conversion.mult, r->conversion.shift);
	else
		fprintf(out, "  \"frequency\": null,\n  \"conversion\": null,\n");

	if (r->estimated) {
		const struct estimate_report *e = &r->estimate;
		const struct estimate_analysis *a = &e->analysis;
		fprintf(out, "  \"estimator\": {\"verdict\": ");
		json_write_string(out, estimate_verdict_name(a->verdict));
		fprintf(out, ", \"cpus\": %u, \"probes\": %llu, \"attempts\": %u, \"elapsed_ns\": %llu, "
			     "\"loops\": %llu, \"min_ranges\": %u, \"max_shift_ticks\": ",
			e->cpu_count, (unsigned long long)a->probes, e->attempts,
			(unsigned long long)e->elapsed_ns, (unsigned long long)a->loops, a->min_ranges);
		json_u64_or_null(out, a->max_shift_ticks);
		fprintf(out, ", \"max_shift_ns\": ");
		json_u64_or_null(out, r->verdict.max_shift_ns);
		fprintf(out, ", \"monotonic\": %s, \"monotonic_violations\": %llu, "
			     "\"rates_consistent\": %s, \"rate_violations\": %llu,\n    \"per_cpu\": [",
			a->monotonic_violations == 0 ? "true" : "false",
			(unsigned long long)a->monotonic_violations,
			a->rate_violations == 0 ? "true" : "false",
			(unsigned long long)a->rate_violations);
		for (uint32_t c = 0; c < e->cpu_count; c++) {
			const struct cpu_offset *o = &e->per_cpu[c];
			fprintf(out, "%s\n      {\"cpu\": %d, \"probes\": %u, \"ranges\": %u, \"shift_lo\": ",
				c ? "," : "", e->cpu_ids[c], o->probes, o->ranges);
			if (o->lo == INT64_MIN)
				fprintf(out, "null");
			else
				fprintf(out, "%lld", (long long)o->lo);
			fprintf(out, ", \"shift_hi\": ");
			if (o->hi == INT64_MAX)
				fprintf(out, "null");
			else
				fprintf(out, "%lld", (long long)o->hi);
			fprintf(out, "}");
		}
		fprintf(out, "\n    ]},\n");
	} else {
		fprintf(out, "  \"estimator\": null,\n");
	}
	print_cost_json(out, r);
	fprintf(out, "  \"max_skew_ns\": %llu,\n  \"reliable\": %s,\n  \"reason\": ",
		(unsigned long long)r->max_skew_ns, r->verdict.reliable ? "true" : "false");
	json_write_string(out, r->verdict.reason);
	fprintf(out, "\n}\n");
}
