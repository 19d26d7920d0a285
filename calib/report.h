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
	 * not measured, as without a counter or a calibrated rate). */
	bool costed;
	struct cost cost;
	char recommendation[320];
};

void report_print_text(FILE *out, const struct calib_report *r);
void report_print_json(FILE *out, const struct calib_report *r);

/* Writes s as a JSON string literal, quotes included. */
void json_write_string(FILE *out, const char *s);

#endif
