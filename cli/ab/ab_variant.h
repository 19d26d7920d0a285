/* --variant NAME:SETTINGS: one side of `tscshim ab`, with or without the shim and the
 * TSCSHIM_* values it sets on top of the environment's. Pure; internal to the command. */
#ifndef CLI_AB_VARIANT_H
#define CLI_AB_VARIANT_H

#include "options.h"

#include <stdbool.h>
#include <stddef.h>

/* A name becomes part of file names in the output directory (NAME-RUN.out). */
enum { AB_MAX_VARIANTS = 8, AB_NAME_MAX = 32 };

struct ab_variant {
	char name[AB_NAME_MAX];
	bool shim;                      /* preload libtscshim.so */
	bool set[OPTION_COUNT];         /* set by this variant (else the environment's, if any) */
	char text[OPTION_COUNT][OPTION_TEXT_MAX];
};

/* The default pair: A without the shim, B with it and the environment's settings. */
void ab_variant_defaults(struct ab_variant out[2]);

/* Parses "NAME:VAR=VALUE[,VAR=VALUE...]" (VAR: TSCSHIM_FENCE or FENCE; the key shim=on|off
 * says whether the shim is loaded, on by default) and validates every value with the
 * options table, on top of the environment's values. Returns 0, or -1 with one line in err. */
int ab_variant_parse(const char *spec, const struct option_values *environment, struct ab_variant *out,
		     char *err, size_t err_size);

/* Names distinct, at least two variants. Returns 0 or -1 with one line in err. */
int ab_variants_check(const struct ab_variant *v, int n, char *err, size_t err_size);

/* Every NAME=VALUE in envp whose NAME starts with TSCSHIM_ must be a variable of the
 * options table (a misspelt one would be silently ignored). Returns 0 or -1 with err. */
int ab_environment_check(char *const *envp, char *err, size_t err_size);

/* The value the variant's processes see for option id: the variant's, else the
 * environment's (getenv), else NULL. */
const char *ab_variant_value(const struct ab_variant *v, int id);

#endif
