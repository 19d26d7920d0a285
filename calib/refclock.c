/* The kernel's clock as the calibration core reads it (calib/refclock.h): the pointer the shim sets. */
#include "refclock.h"

#include "kernel_clock.h"

/* The system call until the shim finds the real function: always correct, and never
 * our own interposer. */
int (*refclock_gettime)(clockid_t clock, struct timespec *ts) = kernel_clock_gettime;
