/* What several parts spell alike: the one decimal parser (options, cache file, the
 * command's arguments) and the stats line's clock names (the shim writes, ab reads). */
#include "decimal.h"
#include "stats_line.h"
#include "unit.h"

#include <string.h>

static int parse(const char *s, uint64_t *out)
{
	return decimal_parse_u64(s, strlen(s), out);
}

static void digits_only(void)
{
	uint64_t v = 7;
	CHECK(parse("0", &v) == 0 && v == 0);
	CHECK(parse("42", &v) == 0 && v == 42);
	CHECK(parse("007", &v) == 0 && v == 7); /* the cache's reader forbids these itself */
	v = 7;
	CHECK(parse("", &v) == -1);
	CHECK(parse("+1", &v) == -1);
	CHECK(parse("-1", &v) == -1);
	CHECK(parse(" 1", &v) == -1);
	CHECK(parse("1 ", &v) == -1);
	CHECK(parse("0x10", &v) == -1);
	CHECK(parse("1.5", &v) == -1);
	CHECK(v == 7); /* untouched on failure */
}

static void length_bounds_the_text(void)
{
	uint64_t v = 0;
	CHECK(decimal_parse_u64("123abc", 3, &v) == 0 && v == 123);
	CHECK(decimal_parse_u64("123", 0, &v) == -1);
}

static void overflow_is_its_own_error(void)
{
	uint64_t v = 0;
	CHECK(parse("18446744073709551615", &v) == 0);
	CHECK_EQ_U64(v, UINT64_MAX);
	CHECK(parse("18446744073709551616", &v) == -2);
	CHECK(parse("99999999999999999999999", &v) == -2);
}

static void stats_line_names_follow_the_clock_table(void)
{
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++)
		CHECK(strcmp(stats_clock_name(c), clock_table[c].name) == 0);
	CHECK(strcmp(stats_clock_name(STAT_OTHER), "other") == 0);
	CHECK(STAT_CLOCKS == SERVED_CLOCK_COUNT + 1);
}

int main(void)
{
	RUN(digits_only);
	RUN(length_bounds_the_text);
	RUN(overflow_is_its_own_error);
	RUN(stats_line_names_follow_the_clock_table);
	return unit_finish();
}
