#include "clocks.h"

const struct clock_desc clock_table[SERVED_CLOCK_COUNT] = {
	[SERVED_MONOTONIC] = {CLOCK_MONOTONIC, "monotonic", FAMILY_MONOTONIC, false},
	[SERVED_MONOTONIC_RAW] = {CLOCK_MONOTONIC_RAW, "monotonic_raw", FAMILY_RAW, false},
	[SERVED_BOOTTIME] = {CLOCK_BOOTTIME, "boottime", FAMILY_MONOTONIC, false},
	[SERVED_REALTIME] = {CLOCK_REALTIME, "realtime", FAMILY_MONOTONIC, true},
};

int served_clock_of(clockid_t id)
{
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++)
		if (clock_table[c].id == id)
			return c;
	return -1;
}
