/* ab's pure parts: the median's confidence interval, MAD outliers, the verdict's words,
 * --variant and --metric parsing (the numbers a metric may be) and the environment check. */
#include "ab_metric.h"
#include "ab_stats.h"
#include "ab_variant.h"
#include "unit.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static void test_median_and_mad(void)
{
	double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
	CHECK(ab_median(odd, 3) == 3);
	CHECK(ab_median(even, 4) == 2.5);
	double v[] = {1, 2, 3, 4, 100};
	double mad = ab_mad(v, 5, 3); /* deviations 2 1 0 1 97: median 1, scaled */
	CHECK(mad > 1.4825 && mad < 1.4827);
}

static void test_outliers(void)
{
	double v[] = {1.0, 1.1, 0.9, 1.05, 0.95, 5.0, 1.02};
	bool flag[7];
	CHECK_EQ_U64(ab_outliers(v, 7, flag), 1);
	CHECK(flag[5]);
	for (int i = 0; i < 5; i++)
		CHECK(!flag[i]);
	/* Within 3 MADs: nothing. */
	double w[] = {1.0, 1.1, 0.9, 1.05, 0.95};
	CHECK_EQ_U64(ab_outliers(w, 5, flag), 0);
	/* A MAD of 0 (integer metrics): whatever differs from the median. */
	double z[] = {2, 2, 2, 3, 2};
	CHECK_EQ_U64(ab_outliers(z, 5, flag), 1);
	CHECK(flag[3]);
}

static void test_interval(void)
{
	double v[20];
	for (int i = 0; i < 20; i++)
		v[i] = 20 - i; /* 20 .. 1, unsorted on purpose */
	struct ab_interval r = ab_median_interval(v, 5);
	CHECK(!r.has_interval); /* 5 values cannot give 95 % */
	r = ab_median_interval(v, 6); /* 20..15: [x(1), x(6)], coverage 1 - 2/64 */
	CHECK(r.has_interval && r.low == 15 && r.high == 20 && r.median == 17.5);
	CHECK(r.coverage > 0.9687 && r.coverage < 0.9688);
	r = ab_median_interval(v, 10); /* 20..11: k = 2, coverage 1 - 2 * 11/1024 */
	CHECK(r.low == 12 && r.high == 19);
	CHECK(r.coverage > 0.9785 && r.coverage < 0.9786);
	r = ab_median_interval(v, 20); /* k = 6: P(X <= 5) = 0.0207 */
	CHECK(r.low == 6 && r.high == 15 && r.median == 10.5);
	static double big[2001];
	for (int i = 0; i < 2001; i++)
		big[i] = i;
	r = ab_median_interval(big, 2001); /* normal approximation: about +-44 around 1000 */
	CHECK(r.median == 1000 && r.low >= 954 && r.low <= 957 && r.high >= 1043 && r.high <= 1046);
}

static struct ab_interval ratio(double median, double low, double high)
{
	return (struct ab_interval){.n = 10, .median = median, .low = low, .high = high, .has_interval = true};
}

static void test_verdict(void)
{
	char buf[256];
	struct ab_interval r = ratio(0.55, 0.5263, 0.5714);
	CHECK(ab_verdict(&r, false, true, "B", "A", buf, sizeof buf) == AB_BETTER);
	CHECK(strcmp(buf, "B is 1.82x faster than A (1.75-1.90, 95%)") == 0);
	r = ratio(1.3, 1.2, 1.4);
	CHECK(ab_verdict(&r, false, true, "B", "A", buf, sizeof buf) == AB_WORSE);
	CHECK(strcmp(buf, "B is 1.30x slower than A (1.20-1.40, 95%)") == 0);
	r = ratio(1.01, 0.97, 1.04);
	CHECK(ab_verdict(&r, false, true, "B", "A", buf, sizeof buf) == AB_NO_DIFFERENCE);
	CHECK(strcmp(buf, "no difference detected (0.970-1.040)") == 0);
	r = ratio(1.2, 1.15, 1.25); /* requests per second, higher is better */
	CHECK(ab_verdict(&r, true, false, "fenced", "plain", buf, sizeof buf) == AB_BETTER);
	CHECK(strcmp(buf, "fenced is 1.20x better than plain (1.15-1.25, 95%)") == 0);
	r = ratio(1.02, 1.01, 1.03); /* a latency, lower is better: small factors get 3 decimals */
	CHECK(ab_verdict(&r, false, false, "B", "A", buf, sizeof buf) == AB_WORSE);
	CHECK(strcmp(buf, "B is 1.020x worse than A (1.010-1.030, 95%)") == 0);
	r.has_interval = false;
	CHECK(ab_verdict(&r, false, true, "B", "A", buf, sizeof buf) == AB_UNDECIDED);
	CHECK(strstr(buf, "too few pairs") != NULL);
}

static const char *no_variable(const char *name)
{
	(void)name;
	return NULL;
}

static void test_variants(void)
{
	struct option_values env;
	char err[512];
	options_load(&env, no_variable, err, sizeof err);
	struct ab_variant v;
	CHECK(ab_variant_parse("fenced:FENCE=1", &env, &v, err, sizeof err) == 0);
	CHECK(v.shim && v.set[OPT_FENCE] && strcmp(v.text[OPT_FENCE], "1") == 0 && strcmp(v.name, "fenced") == 0);
	CHECK(ab_variant_parse("plain:shim=off", &env, &v, err, sizeof err) == 0);
	CHECK(!v.shim);
	CHECK(ab_variant_parse("env:", &env, &v, err, sizeof err) == 0);
	CHECK(v.shim);
	CHECK(ab_variant_parse("c:TSCSHIM_CLOCKS=monotonic,realtime,FENCE=0", &env, &v, err, sizeof err) == 0);
	CHECK(strcmp(v.text[OPT_CLOCKS], "monotonic,realtime") == 0 && strcmp(v.text[OPT_FENCE], "0") == 0);
	/* Refused, with the reason. */
	CHECK(ab_variant_parse("x:TSCSHIM_FENCE=2", &env, &v, err, sizeof err) == -1);
	CHECK(strstr(err, "TSCSHIM_FENCE: invalid value '2'") != NULL);
	CHECK(ab_variant_parse("x:CLOCKS=monotonic,sundial", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("x:NOPE=1", &env, &v, err, sizeof err) == -1 && strstr(err, "NOPE"));
	CHECK(ab_variant_parse("x:STATS=/tmp/s", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("x:shim=off,FENCE=0", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("x:shim=maybe", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("x:FENCE=1,,VERBOSE=1", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("x:FENCE", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("no colon", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("a.b:FENCE=1", &env, &v, err, sizeof err) == -1);
	CHECK(ab_variant_parse("warmup-A:FENCE=1", &env, &v, err, sizeof err) == -1);
	struct ab_variant two[2];
	ab_variant_defaults(two);
	CHECK(ab_variants_check(two, 2, err, sizeof err) == 0);
	CHECK(ab_variants_check(two, 1, err, sizeof err) == -1);
	strcpy(two[1].name, "A");
	CHECK(ab_variants_check(two, 2, err, sizeof err) == -1);
}

static void test_environment(void)
{
	char err[256];
	char *good[] = {"PATH=/bin", "TSCSHIM_FENCE=1", NULL};
	char *bad[] = {"TSCSHIM_FENCE=1", "TSCSHIM_FENSE=0", NULL};
	CHECK(ab_environment_check(good, err, sizeof err) == 0);
	CHECK(ab_environment_check(bad, err, sizeof err) == -1 && strstr(err, "TSCSHIM_FENSE"));
}

/* x within a relative 1e-12 of want: a decimal times a scale may round differently from
 * the literal written out. */
static bool near(double x, double want)
{
	return fabs(x - want) <= 1e-12 * fabs(want);
}

static void test_metric_numbers(void)
{
	double x = 0;
	/* Plain decimals, as strtod reads them; blanks around the number are left out. */
	CHECK(ab_metric_number("12", &x) == 0 && x == 12);
	CHECK(ab_metric_number("-3.5", &x) == 0 && x == -3.5);
	CHECK(ab_metric_number("+.25", &x) == 0 && x == 0.25);
	CHECK(ab_metric_number("1.5e-3", &x) == 0 && x == 1.5e-3);
	CHECK(ab_metric_number(" 5", &x) == 0 && x == 5);
	CHECK(ab_metric_number("5 \t", &x) == 0 && x == 5);
	/* Decimal scales, K as kilo too (programs print it so)... */
	CHECK(ab_metric_number("4113k", &x) == 0 && x == 4113000);
	CHECK(ab_metric_number("850k", &x) == 0 && x == 850000);
	CHECK(ab_metric_number("4K", &x) == 0 && x == 4000);
	CHECK(ab_metric_number("1.2M", &x) == 0 && near(x, 1.2e6));
	CHECK(ab_metric_number("7G", &x) == 0 && x == 7e9);
	CHECK(ab_metric_number("2T", &x) == 0 && x == 2e12);
	CHECK(ab_metric_number(" 850k ", &x) == 0 && x == 850000);
	CHECK(ab_metric_number("-2.5k", &x) == 0 && x == -2500);
	/* ... and binary ones. */
	CHECK(ab_metric_number("2Ki", &x) == 0 && x == 2048);
	CHECK(ab_metric_number("3Mi", &x) == 0 && x == 3.0 * 1048576);
	CHECK(ab_metric_number("16.1Gi", &x) == 0 && near(x, 16.1 * 1073741824.0));
	CHECK(ab_metric_number("1Ti", &x) == 0 && x == 1099511627776.0);
	/* Refused: other suffixes, units (the regex leaves them out: BW=([0-9.]+[KMGT]?i?)B/s),
	 * a scale apart from its number, lower-case m (milli or mega?), what strtod reads
	 * beyond decimals (hex, inf, nan), thousands separators, no number, out of range. */
	x = -1;
	const char *refused[] = {"4113x", "5kb", "5KB", "16.1GiB", "5 k", "k", "Ki", "", " ", "1.2m", "5ki",
				 "5KI", "5kk", "5k5", "0x10", "0x1p3", "inf", "-inf", "nan", "1,234", ".", "-",
				 "1e", "1e999", "1e308T", "5\n"};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		if (ab_metric_number(refused[i], &x) != -1) {
			CHECK(!"a number that must be refused was read");
			printf("# refused[%zu] = \"%s\" read as %g\n", i, refused[i], x);
		}
	CHECK(x == -1); /* left alone */
}

static void test_metrics(void)
{
	struct ab_metric m;
	char err[256], captured[AB_METRIC_CAPTURED_MAX];
	double x = 0;
	CHECK(ab_metric_parse("rps:throughput: ([0-9.]+):higher", &m, err, sizeof err) == 0);
	CHECK(m.higher_is_better && strcmp(m.pattern, "throughput: ([0-9.]+)") == 0);
	CHECK(ab_metric_extract(&m, "noise\nthroughput: 123.5 per s\nthroughput: 9\n", &x, captured, sizeof captured) == 0 &&
	      x == 123.5);
	CHECK(ab_metric_extract(&m, "nothing here", &x, captured, sizeof captured) == -1);
	ab_metric_free(&m);
	CHECK(ab_metric_parse("p99:p99 = (.*) ms", &m, err, sizeof err) == 0);
	CHECK(!m.higher_is_better);
	CHECK(ab_metric_extract(&m, "p99 = 1.5e-3 ms", &x, captured, sizeof captured) == 0 && x == 1.5e-3);
	CHECK(ab_metric_extract(&m, "p99 = fast ms", &x, captured, sizeof captured) == -2);
	CHECK(strcmp(captured, "fast") == 0);
	/* A long capture is cut for the message, and says so. */
	char text[200];
	snprintf(text, sizeof text, "p99 = %0120d ms", 7);
	CHECK(ab_metric_extract(&m, text, &x, captured, sizeof captured) == -2);
	CHECK(strlen(captured) == sizeof captured - 1 && strcmp(captured + strlen(captured) - 3, "...") == 0);
	ab_metric_free(&m);
	/* fio's figures. */
	CHECK(ab_metric_parse("iops:IOPS=([0-9.]+[kMG]?):higher", &m, err, sizeof err) == 0);
	CHECK(ab_metric_extract(&m, "read: IOPS=4113k, BW=16.1GiB/s (17.3GB/s)\n", &x, captured, sizeof captured) == 0 &&
	      x == 4113000);
	ab_metric_free(&m);
	CHECK(ab_metric_parse("bw:BW=([0-9.]+[KMGT]?i?)B/s:higher", &m, err, sizeof err) == 0);
	CHECK(ab_metric_extract(&m, "read: IOPS=4113k, BW=16.1GiB/s (17.3GB/s)\n", &x, captured, sizeof captured) == 0 &&
	      near(x, 16.1 * 1073741824.0));
	ab_metric_free(&m);
	CHECK(ab_metric_parse("iops:IOPS=([0-9.]+[a-z]?)", &m, err, sizeof err) == 0);
	CHECK(ab_metric_extract(&m, "IOPS=4113x\n", &x, captured, sizeof captured) == -2);
	CHECK(strcmp(captured, "4113x") == 0);
	ab_metric_free(&m);
	CHECK(ab_metric_parse("x:no group", &m, err, sizeof err) == -1 && strstr(err, "group"));
	CHECK(ab_metric_parse("x:([0-9]", &m, err, sizeof err) == -1);
	CHECK(ab_metric_parse(":(1)", &m, err, sizeof err) == -1);
	CHECK(ab_metric_parse("x::higher", &m, err, sizeof err) == -1);
}

int main(void)
{
	RUN(test_median_and_mad);
	RUN(test_outliers);
	RUN(test_interval);
	RUN(test_verdict);
	RUN(test_variants);
	RUN(test_environment);
	RUN(test_metric_numbers);
	RUN(test_metrics);
	return unit_finish();
}
