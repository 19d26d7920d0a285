/* The environment read without libc's getenv: the shim reads it at load, where getenv
 * is one more page of libc's text in every process (load_page.h), and at the first
 * clock read, which may be in a signal handler.
 *
 * Pure: each takes the entries it looks at, so unit tests drive them with their own. */
#ifndef SHIM_ENVIRONMENT_H
#define SHIM_ENVIRONMENT_H

#include <stdbool.h>

/* "NAME=value": the value if the entry sets the variable NAME, else NULL. */
const char *environment_entry_value(const char *entry, const char *name);

/* Whether the entry begins with prefix. */
bool environment_entry_starts_with(const char *entry, const char *prefix);

/* The value of the first entry of env (a NULL-terminated array, or NULL) that sets
 * NAME, as getenv finds it; NULL when none does. */
const char *environment_value(char *const *env, const char *name);

#endif
