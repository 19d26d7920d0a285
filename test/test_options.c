/* The TSCSHIM_* parser: strict, whole-string, ranged, one message naming the variable. */
#include "options.h"
#include "unit.h"

#include <string.h>

static struct option_values values;
static char err[256];

static int parse(enum option_id id, const char *text)
{
	err[0] = '\0';
	return option_parse(&values, id, text, err, sizeof err);
}

static void defaults_are_valid(void)
{
	for (int id = 0; id < OPTION_COUNT; id++) {
		struct option_values v;
		CHECK(option_parse(&v, (enum option_id)id, option_table[id].default_text, err,
				   sizeof err) == 0);
	}
	options_set_defaults(&values);
	CHECK_EQ_U64(values.num[OPT_MAX_SKEW_NS], 1000);
	CHECK_EQ_U64(values.num[OPT_FENCE], 1);
	CHECK_EQ_U64(values.num[OPT_CLOCKS], 0xf);
	/* The shim's clock reads use these numbers before anything is parsed. */
	CHECK_EQ_U64(values.num[OPT_CLOCKS], OPTION_CLOCKS_DEFAULT_SET);
	CHECK_EQ_U64(values.num[OPT_FENCE], OPTION_FENCE_DEFAULT);
	CHECK_EQ_U64(values.num[OPT_DECIDE_AFTER], OPTION_DECIDE_AFTER_DEFAULT);
}

static void whole_numbers_within_range(void)
{
	options_set_defaults(&values);
	CHECK(parse(OPT_MAX_SKEW_NS, "250") == 0);
	CHECK_EQ_U64(values.num[OPT_MAX_SKEW_NS], 250);
	CHECK(parse(OPT_MAX_SKEW_NS, "1") == 0);
	CHECK(parse(OPT_MAX_SKEW_NS, "1000000000") == 0);
}

static void rejects_and_keeps_old_value(const char *text, const char *expect_in_message)
{
	options_set_defaults(&values);
	CHECK(parse(OPT_MAX_SKEW_NS, text) == -1);
	CHECK_EQ_U64(values.num[OPT_MAX_SKEW_NS], 1000);
	CHECK(strstr(err, "TSCSHIM_MAX_SKEW_NS") != NULL);
	CHECK(strstr(err, expect_in_message) != NULL);
	CHECK(strchr(err, '\n') == NULL);
}

static void empty_is_invalid(void) { rejects_and_keeps_old_value("", "whole decimal"); }
static void non_numeric_is_invalid(void) { rejects_and_keeps_old_value("fast", "whole decimal"); }
static void negative_is_invalid(void) { rejects_and_keeps_old_value("-5", "whole decimal"); }
static void plus_sign_is_invalid(void) { rejects_and_keeps_old_value("+5", "whole decimal"); }
static void leading_space_is_invalid(void) { rejects_and_keeps_old_value(" 5", "whole decimal"); }
static void trailing_garbage_is_invalid(void) { rejects_and_keeps_old_value("500ns", "whole decimal"); }
static void hex_is_invalid(void) { rejects_and_keeps_old_value("0x10", "whole decimal"); }
static void overflow_is_invalid(void) { rejects_and_keeps_old_value("18446744073709551616", "out of range"); }
static void huge_overflow_is_invalid(void) { rejects_and_keeps_old_value("99999999999999999999999999999", "out of range"); }
static void below_range_is_invalid(void) { rejects_and_keeps_old_value("0", "out of range"); }
static void above_range_is_invalid(void) { rejects_and_keeps_old_value("1000000001", "out of range"); }

static void control_characters_are_not_echoed(void)
{
	options_set_defaults(&values);
	CHECK(parse(OPT_PROBES, "1\n2\x1b[2J") == -1);
	CHECK(strchr(err, '\n') == NULL);
	CHECK(strchr(err, '\x1b') == NULL);
	CHECK(strstr(err, "'1?2?[2J'") != NULL);
}

static void booleans_are_zero_or_one(void)
{
	options_set_defaults(&values);
	CHECK(parse(OPT_DISABLE, "1") == 0 && values.num[OPT_DISABLE] == 1);
	CHECK(parse(OPT_DISABLE, "0") == 0 && values.num[OPT_DISABLE] == 0);
	CHECK(parse(OPT_DISABLE, "yes") == -1);
	CHECK(parse(OPT_DISABLE, "") == -1);
	CHECK(parse(OPT_DISABLE, "10") == -1);
	CHECK(strstr(err, "TSCSHIM_DISABLE") != NULL);
}

static void clock_lists(void)
{
	options_set_defaults(&values);
	CHECK(parse(OPT_CLOCKS, "monotonic") == 0 && values.num[OPT_CLOCKS] == 1);
	CHECK(parse(OPT_CLOCKS, "realtime,monotonic_raw") == 0 && values.num[OPT_CLOCKS] == 0xa);
	CHECK(parse(OPT_CLOCKS, "none") == 0 && values.num[OPT_CLOCKS] == 0);
	CHECK(parse(OPT_CLOCKS, "") == -1);
	CHECK(parse(OPT_CLOCKS, "monotonic,") == -1);
	CHECK(parse(OPT_CLOCKS, "monotonic_coarse") == -1);
	CHECK(parse(OPT_CLOCKS, "MONOTONIC") == -1);
	CHECK(parse(OPT_CLOCKS, "monotonic,,realtime") == -1);
}

static void serve_mode_and_gain(void)
{
	options_set_defaults(&values);
	CHECK_EQ_U64(values.num[OPT_SERVE], SERVE_AUTO);
	CHECK_EQ_U64(values.num[OPT_MIN_GAIN_PCT], 5);
	CHECK(parse(OPT_SERVE, "always") == 0 && values.num[OPT_SERVE] == SERVE_ALWAYS);
	CHECK(parse(OPT_SERVE, "auto") == 0 && values.num[OPT_SERVE] == SERVE_AUTO);
	CHECK(parse(OPT_SERVE, "") == -1);
	CHECK(parse(OPT_SERVE, "alway") == -1);
	CHECK(parse(OPT_SERVE, "auto,always") == -1);
	CHECK(parse(OPT_SERVE, "ALWAYS") == -1);
	CHECK(strstr(err, "TSCSHIM_SERVE") != NULL && strstr(err, "auto,always") != NULL);
	CHECK(parse(OPT_MIN_GAIN_PCT, "0") == 0 && values.num[OPT_MIN_GAIN_PCT] == 0);
	CHECK(parse(OPT_MIN_GAIN_PCT, "99") == 0 && values.num[OPT_MIN_GAIN_PCT] == 99);
	CHECK(parse(OPT_MIN_GAIN_PCT, "100") == -1);
	CHECK(parse(OPT_MIN_GAIN_PCT, "5%") == -1);
}

static void decide_after_is_a_count_of_reads(void)
{
	CHECK(parse(OPT_DECIDE_AFTER, "1") == 0 && values.num[OPT_DECIDE_AFTER] == 1);
	CHECK(parse(OPT_DECIDE_AFTER, "1000000000") == 0 && values.num[OPT_DECIDE_AFTER] == 1000000000);
	CHECK(parse(OPT_DECIDE_AFTER, "0") == -1);
	CHECK(strstr(err, "TSCSHIM_DECIDE_AFTER") != NULL);
	CHECK(parse(OPT_DECIDE_AFTER, "1000000001") == -1);
	CHECK(parse(OPT_DECIDE_AFTER, "1e3") == -1);
}

static void paths_are_absolute_and_bounded(void)
{
	char long_text[OPTION_TEXT_MAX + 10];
	memset(long_text, 'a', sizeof long_text - 1);
	long_text[0] = '/';
	long_text[sizeof long_text - 1] = '\0';
	options_set_defaults(&values);
	CHECK(strcmp(values.text[OPT_CACHE], "") == 0);
	CHECK(strcmp(values.text[OPT_SYSTEM_RECORD], "/run/tscshim/calibration") == 0);
	CHECK(strcmp(values.text[OPT_PROBES], "") == 0);
	CHECK(parse(OPT_CACHE, long_text) == -1);
	CHECK(strstr(err, "longer than") != NULL);
	CHECK(strlen(err) < 200); /* the echo of the value is cut short */
	CHECK(parse(OPT_CACHE, "/tmp/x") == 0 && strcmp(values.text[OPT_CACHE], "/tmp/x") == 0);
	/* Relative paths would make every preloaded process write where it happens to run. */
	CHECK(parse(OPT_CACHE, "cache") == -1);
	CHECK(strstr(err, "TSCSHIM_CACHE") && strstr(err, "expected an absolute path, 'off' or nothing"));
	CHECK(parse(OPT_STATS, "./stats") == -1);
	CHECK(strstr(err, "TSCSHIM_STATS") && strstr(err, "'stderr'"));
	CHECK(parse(OPT_STATS, "off") == -1);
	CHECK(parse(OPT_CACHE, "stderr") == -1);
	CHECK(strcmp(values.text[OPT_CACHE], "/tmp/x") == 0); /* unchanged by the failures */
	CHECK(parse(OPT_CACHE, "off") == 0 && strcmp(values.text[OPT_CACHE], "off") == 0);
	CHECK(parse(OPT_STATS, "stderr") == 0);
	CHECK(parse(OPT_STATS, "") == 0);
	CHECK(parse(OPT_SYSTEM_RECORD, "off") == 0);
	CHECK(parse(OPT_SYSTEM_RECORD, "run/x") == -1);
}

static const char *pair_cache, *pair_stats;
static const char *pair_lookup(const char *name)
{
	return strcmp(name, "TSCSHIM_CACHE") == 0 ? pair_cache
	       : strcmp(name, "TSCSHIM_STATS") == 0 ? pair_stats : NULL;
}

static void two_paths_may_not_name_one_file(void)
{
	static const char *const same[][2] = {
		{"/tmp/x", "/tmp/x"}, {"/tmp//x", "/tmp/x"}, {"/tmp/./x", "//tmp/x"},
		{"/run/tscshim/calibration", "/run/tscshim/./calibration"},
	};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
		pair_cache = same[i][0];
		pair_stats = same[i][1];
		CHECK(options_load(&values, pair_lookup, err, sizeof err) == -1);
		CHECK(strstr(err, "name the same file") != NULL);
	}
	/* The default machine-wide record path counts too. */
	pair_cache = NULL;
	pair_stats = "/run/tscshim/calibration";
	CHECK(options_load(&values, pair_lookup, err, sizeof err) == -1);
	CHECK(strstr(err, "TSCSHIM_SYSTEM_RECORD and TSCSHIM_STATS") != NULL);
	static const char *const differ[][2] = {
		{"/tmp/x", "/tmp/y"}, {"/tmp/x", "/tmp/x2"}, {"/tmp/x", "/tmp/x/y"}, {"off", "stderr"},
		{"", ""}, {"/tmp/.x", "/tmp/x"},
	};
	for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
		pair_cache = differ[i][0];
		pair_stats = differ[i][1];
		CHECK(options_load(&values, pair_lookup, err, sizeof err) == 0);
	}
}

static const char *fake_env_value;
static const char *fake_env_name;
static const char *fake_lookup(const char *name)
{
	return strcmp(name, fake_env_name) == 0 ? fake_env_value : NULL;
}

static void load_reads_environment_and_stops_at_invalid(void)
{
	fake_env_name = "TSCSHIM_PROBES";
	fake_env_value = "2000";
	CHECK(options_load(&values, fake_lookup, err, sizeof err) == 0);
	CHECK_EQ_U64(values.num[OPT_PROBES], 2000);
	CHECK(values.from_environment[OPT_PROBES]);
	CHECK(!values.from_environment[OPT_MAX_SKEW_NS]);
	fake_env_value = "2000x";
	CHECK(options_load(&values, fake_lookup, err, sizeof err) == -1);
	CHECK(strstr(err, "TSCSHIM_PROBES") != NULL);
}

static void names_are_unique_and_found(void)
{
	for (int a = 0; a < OPTION_COUNT; a++) {
		CHECK(option_find(option_table[a].name) == a);
		CHECK(strncmp(option_table[a].name, "TSCSHIM_", 8) == 0);
		CHECK(option_table[a].doc && option_table[a].doc[0]);
	}
	CHECK(option_find("TSCSHIM_NOPE") == -1);
}

int main(void)
{
	RUN(defaults_are_valid);
	RUN(whole_numbers_within_range);
	RUN(empty_is_invalid);
	RUN(non_numeric_is_invalid);
	RUN(negative_is_invalid);
	RUN(plus_sign_is_invalid);
	RUN(leading_space_is_invalid);
	RUN(trailing_garbage_is_invalid);
	RUN(hex_is_invalid);
	RUN(overflow_is_invalid);
	RUN(huge_overflow_is_invalid);
	RUN(below_range_is_invalid);
	RUN(above_range_is_invalid);
	RUN(control_characters_are_not_echoed);
	RUN(booleans_are_zero_or_one);
	RUN(clock_lists);
	RUN(serve_mode_and_gain);
	RUN(decide_after_is_a_count_of_reads);
	RUN(paths_are_absolute_and_bounded);
	RUN(two_paths_may_not_name_one_file);
	RUN(load_reads_environment_and_stops_at_invalid);
	RUN(names_are_unique_and_found);
	return unit_finish();
}
