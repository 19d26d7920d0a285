/* A minimal unit-test harness that prints TAP, so C tests and bats are counted alike. */
#ifndef TSCSHIM_UNIT_H
#define TSCSHIM_UNIT_H

#include <stdio.h>

static int unit_checks_failed;
static int unit_tests_run;
static int unit_tests_failed;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			unit_checks_failed++;                                          \
			printf("# %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                      \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                             \
	do {                                                                           \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_) {                                                        \
			unit_checks_failed++;                                          \
			printf("# %s:%d: %s == %llu, expected %s == %llu\n", __FILE__, \
			       __LINE__, #a, a_, #b, b_);                              \
		}                                                                      \
	} while (0)

static inline void unit_run(const char *name, void (*test)(void))
{
	int before = unit_checks_failed;
	test();
	unit_tests_run++;
	int ok = unit_checks_failed == before;
	if (!ok)
		unit_tests_failed++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", unit_tests_run, name);
	fflush(stdout);
}

#define RUN(test) unit_run(#test, test)

static inline int unit_finish(void)
{
	printf("1..%d\n", unit_tests_run);
	return unit_tests_failed ? 1 : 0;
}

#endif
