/* --variant NAME:VAR=VALUE[,VAR=VALUE...]: the settings one side of `tscshim ab` runs
 * with, checked against the options table before anything runs, so that an invalid value
 * stops ab at once instead of making the shim pass everything through unnoticed. */
#define _GNU_SOURCE
#include "ab_variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ab_variant_defaults(struct ab_variant out[2])
{
	memset(out, 0, 2 * sizeof *out);
	strcpy(out[0].name, "A");
	strcpy(out[1].name, "B");
	out[1].shim = true;
}

/* Names become file names in the output directory (NAME-RUN.out), hence the alphabet; a
 * name never holds '.', and "warmup-" is the warmup runs' prefix. */
static bool valid_name(const char *name, size_t len)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-";
	if (len == 0 || len >= AB_NAME_MAX || name[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr(alphabet, name[i]))
			return false;
	return !(len >= 7 && strncmp(name, "warmup-", 7) == 0);
}

/* "FENCE" or "TSCSHIM_FENCE" to the option's id; -1 if neither. */
static int find_variable(const char *key, size_t len)
{
	char name[64];
	if (len >= 40)
		return -1;
	if (len > 8 && strncmp(key, "TSCSHIM_", 8) == 0)
		snprintf(name, sizeof name, "%.*s", (int)len, key);
	else
		snprintf(name, sizeof name, "TSCSHIM_%.*s", (int)len, key);
	return option_find(name);
}

/* One VAR=VALUE (value already complete, commas of a clock list included). */
static int apply(struct ab_variant *out, struct option_values *values, const char *key, size_t key_len,
		 const char *value, bool *shim_given, char *err, size_t err_size)
{
	if (key_len == 4 && strncmp(key, "shim", 4) == 0) {
		if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0) {
			snprintf(err, err_size, "shim=%s: expected on or off", value);
			return -1;
		}
		out->shim = strcmp(value, "on") == 0;
		*shim_given = true;
		return 0;
	}
	int id = find_variable(key, key_len);
	if (id < 0) {
		snprintf(err, err_size, "%.*s: no such setting (tscshim options lists them; shim=on|off loads the shim or not)",
			 (int)key_len, key);
		return -1;
	}
	if (id == OPT_STATS) {
		snprintf(err, err_size, "TSCSHIM_STATS is ab's own: it counts the TSC-served calls through it");
		return -1;
	}
	char why[256];
	if (option_parse(values, (enum option_id)id, value, why, sizeof why) != 0) {
		snprintf(err, err_size, "%s", why);
		return -1;
	}
	out->set[id] = true;
	snprintf(out->text[id], sizeof out->text[id], "%s", value);
	return 0;
}

static int parse_settings(char *list, struct ab_variant *out, struct option_values *values, char *err,
			  size_t err_size)
{
	bool shim_given = false, any_setting = false;
	/* Split at commas, but a piece without '=' continues the previous value: a clock list
	 * (CLOCKS=monotonic,realtime) holds commas itself. */
	char *key = NULL, *value = NULL;
	size_t key_len = 0;
	for (char *piece = *list ? list : NULL; piece;) {
		char *comma = strchr(piece, ',');
		if (comma)
			*comma = '\0';
		if (!*piece) {
			snprintf(err, err_size, "an empty setting (two commas, or one at an end)");
			return -1;
		}
		char *eq = strchr(piece, '=');
		if (eq) {
			if (key && apply(out, values, key, key_len, value, &shim_given, err, err_size) != 0)
				return -1;
			key = piece, key_len = (size_t)(eq - piece), value = eq + 1;
			any_setting |= !(key_len == 4 && strncmp(key, "shim", 4) == 0);
		} else if (key) {
			value[strlen(value)] = ','; /* undo the split: the piece belongs to the value */
		} else {
			snprintf(err, err_size, "'%s': expected VAR=VALUE", piece);
			return -1;
		}
		piece = comma ? comma + 1 : NULL;
	}
	if (key && apply(out, values, key, key_len, value, &shim_given, err, err_size) != 0)
		return -1;
	if (shim_given && !out->shim && any_setting) {
		snprintf(err, err_size, "shim=off takes no TSCSHIM_* setting: without the shim they have no effect");
		return -1;
	}
	return 0;
}

int ab_variant_parse(const char *spec, const struct option_values *environment, struct ab_variant *out,
		     char *err, size_t err_size)
{
	memset(out, 0, sizeof *out);
	out->shim = true;
	const char *colon = strchr(spec, ':');
	char why[512] = "";
	if (!colon || !valid_name(spec, (size_t)(colon - spec))) {
		snprintf(err, err_size,
			 "--variant '%.64s': expected NAME:VAR=VALUE[,VAR=VALUE...], NAME of letters, digits, _ + -",
			 spec);
		return -1;
	}
	snprintf(out->name, sizeof out->name, "%.*s", (int)(colon - spec), spec);
	char *list = strdup(colon + 1);
	struct option_values *values = malloc(sizeof *values);
	int rc = -1;
	if (list && values) {
		*values = *environment;
		rc = parse_settings(list, out, values, why, sizeof why);
	} else {
		snprintf(why, sizeof why, "out of memory");
	}
	free(list);
	free(values);
	if (rc != 0)
		snprintf(err, err_size, "--variant '%.64s': %s", spec, why);
	return rc;
}

int ab_variants_check(const struct ab_variant *v, int n, char *err, size_t err_size)
{
	if (n < 2) {
		snprintf(err, err_size, "--variant: give two or more (the first is the baseline)");
		return -1;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(v[i].name, v[j].name) == 0) {
				snprintf(err, err_size, "--variant: the name '%s' is given twice", v[i].name);
				return -1;
			}
	return 0;
}

int ab_environment_check(char *const *envp, char *err, size_t err_size)
{
	for (; envp && *envp; envp++) {
		if (strncmp(*envp, "TSCSHIM_", 8) != 0)
			continue;
		size_t len = strcspn(*envp, "=");
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(len < 100 ? len : 100), *envp);
		/* TSCSHIM_LIBRARY names the library for the commands, not a shim setting. */
		if (option_find(name) < 0 && strcmp(name, "TSCSHIM_LIBRARY") != 0) {
			snprintf(err, err_size, "%s in the environment: no such setting (tscshim options lists them)",
				 name);
			return -1;
		}
	}
	return 0;
}

const char *ab_variant_value(const struct ab_variant *v, int id)
{
	return v->set[id] ? v->text[id] : getenv(option_table[id].name);
}
