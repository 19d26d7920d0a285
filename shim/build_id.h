/* This library's build identity, the key under which its measured costs are kept. */
#ifndef SHIM_BUILD_ID_H
#define SHIM_BUILD_ID_H

#include <stdint.h>

/* This library's GNU build-id folded to 64 bits (never 0), or 0 if it has none. Reads
 * its own program headers: no lock, no libc; async-signal-safe. */
uint64_t shim_build_id(void);

#endif
