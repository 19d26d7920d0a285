/* shim/environment.c: the environment read without getenv, at load and at the decision. */
#include "environment.h"
#include "unit.h"

#include <string.h>

static void environment_as_getenv_reads_it(void)
{
	char *env[] = {"TSCSHIM_CACHEX=no", "TSCSHIM_CACHE", "XDG_RUNTIME_DIR=/run/user/7",
		       "TSCSHIM_CACHE=/a", "TSCSHIM_CACHE=/b", "EMPTY=", NULL};
	CHECK(strcmp(environment_value(env, "TSCSHIM_CACHE"), "/a") == 0); /* the first, as getenv */
	CHECK(strcmp(environment_value(env, "XDG_RUNTIME_DIR"), "/run/user/7") == 0);
	CHECK(strcmp(environment_value(env, "EMPTY"), "") == 0); /* set, empty: not absent */
	CHECK(environment_value(env, "TSCSHIM") == NULL);        /* a prefix of a name is not it */
	CHECK(environment_value(env, "XDG_RUNTIME") == NULL);
	CHECK(environment_value(env, "NOPE") == NULL);
	CHECK(environment_value(NULL, "TSCSHIM_CACHE") == NULL);
	const char *value = environment_entry_value("A=B=C", "A");
	CHECK(value && strcmp(value, "B=C") == 0);
	CHECK(environment_entry_value("A", "A") == NULL);
	CHECK(environment_entry_starts_with("TSCSHIM_X=1", "TSCSHIM_"));
	CHECK(!environment_entry_starts_with("TSCSHI", "TSCSHIM_"));
	CHECK(environment_entry_starts_with("anything", ""));
}

int main(void)
{
	RUN(environment_as_getenv_reads_it);
	return unit_finish();
}
