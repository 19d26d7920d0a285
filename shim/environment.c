/* The environment read without getenv (shim/environment.h): the storage the constructor fills and the look-up. */
#include "environment.h"

#include "load_page.h"

#include <stddef.h>

LOAD_PATH bool environment_entry_starts_with(const char *entry, const char *prefix)
{
	for (; *prefix; prefix++, entry++)
		if (*entry != *prefix)
			return false;
	return true;
}

LOAD_PATH const char *environment_entry_value(const char *entry, const char *name)
{
	for (; *name; name++, entry++)
		if (*entry != *name)
			return NULL;
	return *entry == '=' ? entry + 1 : NULL;
}

LOAD_PATH const char *environment_value(char *const *env, const char *name)
{
	for (; env && *env; env++) {
		const char *value = environment_entry_value(*env, name);
		if (value)
			return value;
	}
	return NULL;
}
