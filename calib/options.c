/* Every TSCSHIM_* variable in one table, and its parsing (calib/options.h). */
#include "options.h"

#include "decimal.h"
#include "stats_path.h"

#include <errno.h>
#include <string.h>

#define U64(x) ((uint64_t)(x))

const struct option_spec option_table[OPTION_COUNT] = {
	[OPT_DISABLE] = {"TSCSHIM_DISABLE", OPTION_BOOL, "0", 0, 1, NULL,
		"1: pass every call to the real clock and skip the estimator entirely."},
	[OPT_VERBOSE] = {"TSCSHIM_VERBOSE", OPTION_UINT, "0", 0, 2, NULL,
		"0: silent but for invalid settings and failed stats writes; 1: one line on stderr when the shim decides (at the read `TSCSHIM_DECIDE_AFTER` names, or at load on a cold start) with the decision, its figures (the fenced read plan among them) and how long it took, or at exit where it never decided; 2: also the records' handling and every fenced read plan's measured cost."},
	[OPT_MAX_SKEW_NS] = {"TSCSHIM_MAX_SKEW_NS", OPTION_UINT, "1000", 1, U64(1000000000), NULL,
		"Largest maximum-shift bound between the CPUs' counters, in ns, for which the counter may serve time."},
	[OPT_PROBES] = {"TSCSHIM_PROBES", OPTION_UINT, "1000", 10, U64(1000000), NULL,
		"Estimator probes per CPU in one attempt."},
	[OPT_ESTIMATE_BUDGET_US] = {"TSCSHIM_ESTIMATE_BUDGET_US", OPTION_UINT, "20000", 100, U64(60000000), NULL,
		"Time the estimator may spend, retrying attempts whose statistics are too poor, before it calls the result inconclusive (us); a cold start waits at most this plus `TSCSHIM_CALIBRATE_US` plus 5 ms for its child to start, then as long for the estimator's answer, more by three times what that start took (a loaded host: each of the estimator's hand-offs waits alike): at most four times this sum."},
	[OPT_ESTIMATE_MIN_LOOPS] = {"TSCSHIM_ESTIMATE_MIN_LOOPS", OPTION_UINT, "10", 1, U64(1000000), NULL,
		"Full loops through all CPUs, and bracketed ranges per CPU pair, the estimator needs before its verdict counts; fewer make it inconclusive."},
	[OPT_CALIBRATE_US] = {"TSCSHIM_CALIBRATE_US", OPTION_UINT, "2000", 100, U64(60000000), NULL,
		"Length of the frequency calibration against CLOCK_MONOTONIC when nothing is recorded yet, in us (`tscshim calib` defaults to 1 s)."},
	[OPT_REQUIRE_TSC_CLOCKSOURCE] = {"TSCSHIM_REQUIRE_TSC_CLOCKSOURCE", OPTION_BOOL, "0", 0, 1, NULL,
		"1: serve time only if the kernel's own current clocksource is `tsc`."},
	[OPT_CLOCKS] = {"TSCSHIM_CLOCKS", OPTION_CLOCKS, "monotonic,monotonic_raw,boottime,realtime", 0, 0, NULL,
		"Comma-separated clocks the shim serves from the counter (a subset of the default); `none` serves none."},
	[OPT_FENCE] = {"TSCSHIM_FENCE", OPTION_BOOL, "1", 0, 1, NULL,
		"1: ordered counter reads (cross-thread order holds); 0: unfenced reads, cheaper, per-thread monotonicity only."},
	[OPT_MAX_ERROR_NS] = {"TSCSHIM_MAX_ERROR_NS", OPTION_UINT, "1000", 100, U64(1000000000), NULL,
		"Largest allowed |shim - kernel| for the served clocks, in ns; sets how often callers re-synchronize."},
	[OPT_RESYNC_MS] = {"TSCSHIM_RESYNC_MS", OPTION_UINT, "1000", 1, U64(3600000), NULL,
		"Longest time between re-synchronizations with the kernel's clock, in ms (the error bound may shorten it)."},
	[OPT_CACHE] = {"TSCSHIM_CACHE", OPTION_PATH, OPTION_CACHE_DEFAULT, 0, 0, "off",
		"Absolute path of the per-user calibration cache; empty: `$XDG_RUNTIME_DIR/tscshim.cache`, else `/tmp/tscshim-<uid>.cache`; `off`: no cache. This build keeps a copy of its records beside it, in the path with `.v9` appended, which a build of another format never writes: where such a build rewrites the cache, this one reads its copy."},
	[OPT_SYSTEM_RECORD] = {"TSCSHIM_SYSTEM_RECORD", OPTION_PATH, OPTION_SYSTEM_RECORD_DEFAULT, 0, 0, "off",
		"Absolute path of the machine-wide calibration that `tscshim calib --save` writes as root, a symbolic link whose target is the record; trusted before the cache when root owns its directory and nobody else may write there; `off`: not read."},
	[OPT_STATS] = {"TSCSHIM_STATS", OPTION_PATH, "", 0, 0, "stderr",
		"Where each process writes its counters at exit: `stderr`, or an absolute file path, appended to, created mode 0600 by the writing process, in which `%p` stands for the process id and `%%` for `%`; empty: none.",
		stats_path_check},
	[OPT_SERVE] = {"TSCSHIM_SERVE", OPTION_CHOICE, "auto", 0, 0, "auto,always",
		"`auto`: after the reliability gate, serve from the counter only where its path is cheaper than the kernel's clock by `TSCSHIM_MIN_GAIN_PCT` (measured at the decision, in rounds of at most ~50 us, and kept with the record: `tscshim calib --save` stores them machine-wide, so that every process decides alike); `always`: serve wherever the reliability gate allows (for A/B studies and tests)."},
	[OPT_MIN_GAIN_PCT] = {"TSCSHIM_MIN_GAIN_PCT", OPTION_UINT, "5", 0, 99, NULL,
		"With `TSCSHIM_SERVE=auto`: the least saving per call, in percent of the kernel's clock, for which the counter serves."},
	[OPT_DECIDE_AFTER] = {"TSCSHIM_DECIDE_AFTER", OPTION_UINT, "1000", 1, 1000000000, NULL,
		"The read of a served clock at which the shim decides; the reads before it go to the kernel's clock. A decision costs what tens of thousands of cheaper reads win back, so a process that reads served clocks fewer times never decides (a cold start, with nothing recorded for this boot, still measures at load); `1`: at the first read."},
};

static void fail(char *err, size_t err_size, const struct option_spec *spec, const char *text,
		 const char *why)
{
	if (!err || !err_size)
		return;
	/* The value is echoed, cut short and with control characters shown as '?', so the
	 * message stays one printable line whatever the variable holds. */
	char shown[65];
	size_t n = 0;
	for (; text[n] && n < 64; n++)
		shown[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
	shown[n] = '\0';
	snprintf(err, err_size, "%s: invalid value '%s%s': %s", spec->name, shown,
		 text[n] ? "..." : "", why);
}

/* The length of the word at w, up to a comma or the end. strcspn's own: the shim parses
 * the defaults at the first clock read, and libc's strcspn is a page no other code of a
 * typical program touches. */
static size_t word_length(const char *w)
{
	size_t n = 0;
	while (w[n] && w[n] != ',')
		n++;
	return n;
}

/* The index of text among the comma-separated words, or -1. */
static int parse_choice(const char *text, const char *words, uint64_t *out)
{
	size_t len = strlen(text);
	uint64_t index = 0;
	for (const char *w = words;; index++) {
		size_t n = word_length(w);
		if (n == len && len && strncmp(w, text, n) == 0) {
			*out = index;
			return 0;
		}
		if (w[n] == '\0')
			return -1;
		w += n + 1;
	}
}

static int parse_clocks(const char *text, uint64_t *out)
{
	if (strcmp(text, "none") == 0) {
		*out = 0;
		return 0;
	}
	uint64_t bits = 0;
	const char *p = text;
	for (;;) {
		size_t len = word_length(p);
		int found = -1;
		for (int i = 0; i < SERVED_CLOCK_COUNT; i++)
			if (strlen(clock_table[i].name) == len &&
			    strncmp(p, clock_table[i].name, len) == 0)
				found = i;
		if (found < 0)
			return -1;
		bits |= 1ull << found;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	*out = bits;
	return 0;
}

int option_parse(struct option_values *values, enum option_id id, const char *text,
		 char *err, size_t err_size)
{
	const struct option_spec *spec = &option_table[id];
	uint64_t number = 0;
	char message[96];
	const char *why;

	switch (spec->type) {
	case OPTION_BOOL:
		if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0) {
			fail(err, err_size, spec, text, "expected 0 or 1");
			return -1;
		}
		number = text[0] == '1';
		break;
	case OPTION_UINT: {
		int rc = decimal_parse_u64(text, strlen(text), &number);
		if (rc == -1) {
			fail(err, err_size, spec, text, "expected a whole decimal number");
			return -1;
		}
		if (rc == -2 || number < spec->min || number > spec->max) {
			snprintf(message, sizeof message, "out of range %llu..%llu",
				 (unsigned long long)spec->min, (unsigned long long)spec->max);
			fail(err, err_size, spec, text, message);
			return -1;
		}
		break;
	}
	case OPTION_CLOCKS:
		if (parse_clocks(text, &number) != 0) {
			fail(err, err_size, spec, text,
			     "expected 'none' or a comma-separated list of monotonic, monotonic_raw, boottime, realtime");
			return -1;
		}
		break;
	case OPTION_CHOICE:
		if (parse_choice(text, spec->keyword, &number) != 0) {
			snprintf(message, sizeof message, "expected one of %s", spec->keyword);
			fail(err, err_size, spec, text, message);
			return -1;
		}
		break;
	case OPTION_PATH:
		if (text[0] != '\0' && !(spec->keyword && strcmp(text, spec->keyword) == 0)) {
			if (text[0] != '/') {
				snprintf(message, sizeof message, "expected an absolute path%s%s%s",
					 spec->keyword ? ", '" : "", spec->keyword ? spec->keyword : "",
					 spec->keyword ? "' or nothing" : " or nothing");
				fail(err, err_size, spec, text, message);
				return -1;
			}
			if (strlen(text) >= OPTION_TEXT_MAX) {
				snprintf(message, sizeof message, "longer than %d bytes", OPTION_TEXT_MAX - 1);
				fail(err, err_size, spec, text, message);
				return -1;
			}
		}
		if (spec->check && text[0] != '\0' && (why = spec->check(text)) != NULL) {
			fail(err, err_size, spec, text, why);
			return -1;
		}
		values->text[id] = text;
		return 0;
	}
	values->num[id] = number;
	return 0;
}

void options_set_defaults(struct option_values *values)
{
	memset(values, 0, sizeof *values);
	for (int id = 0; id < OPTION_COUNT; id++)
		values->text[id] = "";
	for (int id = 0; id < OPTION_COUNT; id++) {
		/* The table's defaults are valid by construction; a unit test checks it. */
		(void)option_parse(values, (enum option_id)id, option_table[id].default_text, NULL, 0);
	}
}

int options_load(struct option_values *values, const char *(*lookup)(const char *name),
		 char *err, size_t err_size)
{
	options_set_defaults(values);
	for (int id = 0; id < OPTION_COUNT; id++) {
		const char *text = lookup(option_table[id].name);
		if (!text)
			continue;
		if (option_parse(values, (enum option_id)id, text, err, err_size) != 0)
			return -1;
		values->from_environment[id] = true;
	}
	return options_check_paths(values, err, err_size);
}

/* a and b name the same file once "//" and "/./" are collapsed and a final '/' dropped. */
static bool same_path(const char *a, const char *b)
{
	for (;;) {
		while (a[0] == '/' && (a[1] == '/' || (a[1] == '.' && (a[2] == '/' || a[2] == '\0'))))
			a += a[1] == '/' ? 1 : 2;
		while (b[0] == '/' && (b[1] == '/' || (b[1] == '.' && (b[2] == '/' || b[2] == '\0'))))
			b += b[1] == '/' ? 1 : 2;
		if ((a[0] == '/' && a[1] == '\0' && b[0] == '\0') || (b[0] == '/' && b[1] == '\0' && a[0] == '\0'))
			return true;
		if (*a != *b)
			return false;
		if (*a == '\0')
			return true;
		a++;
		b++;
	}
}

int options_check_paths(const struct option_values *values, char *err, size_t err_size)
{
	for (int i = 0; i < OPTION_COUNT; i++) {
		if (option_table[i].type != OPTION_PATH || values->text[i][0] != '/')
			continue;
		for (int j = i + 1; j < OPTION_COUNT; j++) {
			if (option_table[j].type != OPTION_PATH || values->text[j][0] != '/' ||
			    !same_path(values->text[i], values->text[j]))
				continue;
			if (err && err_size)
				snprintf(err, err_size, "%s and %s name the same file; they must differ",
					 option_table[i].name, option_table[j].name);
			return -1;
		}
	}
	return 0;
}

int option_find(const char *name)
{
	for (int id = 0; id < OPTION_COUNT; id++)
		if (strcmp(option_table[id].name, name) == 0)
			return id;
	return -1;
}

static const char *const type_names[] = {
	[OPTION_BOOL] = "0 or 1", [OPTION_UINT] = "integer",
	[OPTION_PATH] = "absolute path", [OPTION_CLOCKS] = "clock list", [OPTION_CHOICE] = "word"};

void options_write_markdown(FILE *out)
{
	fprintf(out, "| variable | type | default | range | effect |\n");
	fprintf(out, "| --- | --- | --- | --- | --- |\n");
	for (int id = 0; id < OPTION_COUNT; id++) {
		const struct option_spec *s = &option_table[id];
		char range[64] = "";
		if (s->type == OPTION_UINT)
			snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)s->min,
				 (unsigned long long)s->max);
		else if (s->type == OPTION_PATH && s->keyword)
			snprintf(range, sizeof range, "or `%s`", s->keyword);
		else if (s->type == OPTION_CHOICE)
			snprintf(range, sizeof range, "`%s`", s->keyword);
		fprintf(out, "| `%s` | %s | `%s` | %s | %s |\n", s->name, type_names[s->type],
			s->default_text[0] ? s->default_text : "(empty)", range, s->doc);
	}
}

/* Text for roff: backslashes escaped, `code` spans in bold, no line starting a request. */
static void write_roff_text(FILE *out, const char *text)
{
	bool bold = false;
	fputs("\\&", out);
	for (const char *p = text; *p; p++) {
		if (*p == '`') {
			fputs(bold ? "\\fR" : "\\fB", out);
			bold = !bold;
		} else if (*p == '\\') {
			fputs("\\e", out);
		} else {
			fputc(*p, out);
		}
	}
	if (bold)
		fputs("\\fR", out);
}

void options_write_man(FILE *out)
{
	for (int id = 0; id < OPTION_COUNT; id++) {
		const struct option_spec *s = &option_table[id];
		fprintf(out, ".TP\n.B %s\n(%s", s->name, type_names[s->type]);
		if (s->type == OPTION_UINT)
			fprintf(out, ", %llu..%llu", (unsigned long long)s->min, (unsigned long long)s->max);
		if (s->type == OPTION_CHOICE)
			fprintf(out, ", one of %s", s->keyword);
		if (s->default_text[0])
			fprintf(out, ", default \\fB%s\\fR)\n", s->default_text);
		else
			fprintf(out, ", default empty)\n");
		write_roff_text(out, s->doc);
		fputc('\n', out);
	}
}
