/* The floor: what a served clock read cannot go below (the counter read, fenced or not,
 * and the shim's multiply-shift and split into a timespec or timeval, calib/convert.h).
 * `tscshim bench` reports it beside each variant; `tscshim calib` uses it as its counter
 * path's cost. */
#ifndef CLI_FLOOR_H
#define CLI_FLOOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* Once before any read: a conversion at rate_millihz from now on, and the cheaper of the
 * CPU's ordered reads (lfence; rdtsc or rdtscp) for the fenced floor. */
void floor_setup(uint64_t rate_millihz);

/* "lfence; rdtsc" or "rdtscp": the ordered read the fenced floor uses. */
const char *floor_ordered_read(void);

/* Not inlined, so that it costs a call as the real function and the shim do. */
int floor_read(struct timespec *ts, bool fenced);
int floor_read_tv(struct timeval *tv, bool fenced);

#endif
