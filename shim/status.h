/* What the shim reports: tscshim_status() and the stats line at exit, both from one
 * struct tscshim_status (include/tscshim.h), which `tscshim ab` and `bench` read too. */
#ifndef SHIM_STATUS_H
#define SHIM_STATUS_H

#include "tscshim.h"


/* Fills every field this library knows, as things stand: it never decides (a query
 * does that first, as a first clock read would: tscshim_status). Async-signal-safe. */
void status_fill(struct tscshim_status *out);

#endif
