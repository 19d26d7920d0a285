/* Strict decimal numbers: the one parser behind the options, the cache file and the
 * command's arguments, so that "what is a number" is decided once. */
#ifndef CALIB_DECIMAL_H
#define CALIB_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* The len characters at s, decimal digits only: no sign, no space, no base prefix.
 * Returns 0 with *out set; -1 if empty or not all digits; -2 if above UINT64_MAX.
 * Leading zeros are accepted: a caller whose format forbids them checks first. */
int decimal_parse_u64(const char *s, size_t len, uint64_t *out);

#endif
