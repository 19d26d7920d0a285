/* The stats line's prefix and clock fields (calib/stats_line.h), shared by the shim and `tscshim ab`. */
#include "stats_line.h"

const char *stats_clock_name(int slot)
{
	return slot >= 0 && slot < SERVED_CLOCK_COUNT ? clock_table[slot].name : "other";
}
