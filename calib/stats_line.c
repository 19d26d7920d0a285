#include "stats_line.h"

const char *stats_clock_name(int slot)
{
	return slot >= 0 && slot < SERVED_CLOCK_COUNT ? clock_table[slot].name : "other";
}
