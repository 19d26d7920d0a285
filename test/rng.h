/* Marsaglia's xorshift64: reproducible pseudo-random inputs for tests and models. */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
