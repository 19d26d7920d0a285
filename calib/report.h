/* Everything `tscshim calib` found, and its human and JSON renderings. */
#ifndef CALIB_REPORT_H
#define CALIB_REPORT_H

#include "benefit.h"
#include "calibrate.h"
#include "convert.h"
#include "counter.h"
#include "estimate.h"
#include "verdict.h"

#include <stdbool.h>
#include <stdio.h>

struct calib_report {
	struct counter_identity identity;
	char clocksource[64];
	char available_clocksources[256];
	bool estimated;
	struct estimate_report estimate;
	bool calibrated;
	struct rate_estimate rate;
	struct conversion conversion;
	uint64_t max_skew_ns;
	struct verdict verdict;
	/* The cost section: per-call figures and the one-line recommendation (costed false:
	 * not measured, as without a counter or a calibrated rate). cost is the shim's own
	 * path where the shim measured it (cost_is_shims: the figures its gate decides from),
	 * else the floor's; floor is the counter read and conversion alone, without the
	 * shim's line. The recommendation is made from cost. */
	bool costed;
	bool cost_is_shims;
	struct cost cost;
	int cost_fenced_plan; /* the fenced read plan the shim's figure is of, -1 unknown */
	struct cost floor;
	int floor_plan;       /* the fenced floor's read plan (tscshim.h's read_plan) */
	char floor_read[64];  /* the same, in words, and whose plan it is */
	char cost_note[200]; /* why the shim's own path was not measured, when it was not */
	char recommendation[320];
};

void report_print_text(FILE *out, const struct calib_report *r);
void report_print_json(FILE *out, const struct calib_report *r);

/* Writes s as a JSON string literal, quotes included. */
void json_write_string(FILE *out, const char *s);

#endif
