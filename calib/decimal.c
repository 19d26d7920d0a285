/* Strict decimal numbers (calib/decimal.h): the one parser of options, cache files and arguments. */
#include "decimal.h"

int decimal_parse_u64(const char *s, size_t len, uint64_t *out)
{
	if (len == 0)
		return -1;
	uint64_t value = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned digit = (unsigned)(s[i] - '0');
		if (value > (UINT64_MAX - digit) / 10)
			return -2;
		value = value * 10 + digit;
	}
	*out = value;
	return 0;
}
