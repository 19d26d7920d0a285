/* What the shim reports: tscshim_status() and the stats line at exit, both from one
 * struct tscshim_status (include/tscshim.h), which `tscshim ab` and `bench` read too. */
#ifndef SHIM_STATUS_H
#define SHIM_STATUS_H

#include "tscshim.h"

#include <stdbool.h>

/* Fills every field this library knows, deciding first when `decide` is set and no
 * decision was made (a query decides as a first clock read would). Async-signal-safe. */
void status_fill(struct tscshim_status *out, bool decide);

#endif
