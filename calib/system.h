/* Facts the kernel publishes about time and identity, read from /proc and /sys. */
#ifndef CALIB_SYSTEM_H
#define CALIB_SYSTEM_H

#include <stddef.h>

/* Each returns 0, or -1 leaving an empty string. Newlines are stripped. */
int read_current_clocksource(char *buf, size_t size);
int read_available_clocksources(char *buf, size_t size);
int read_boot_id(char *buf, size_t size);

#endif
