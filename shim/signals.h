/* Every signal blocked on the calling thread, and the mask restored: the decision and a
 * line's publication each run so (no handler runs inside them, jumps out of them or
 * cancels them midway). One helper for both, on a low floor. */
#ifndef SHIM_SIGNALS_H
#define SHIM_SIGNALS_H

#include <stdbool.h>
#include <stdint.h>

/* Blocks every signal, SIGCANCEL and SIGSETXID included (the raw system call: glibc's
 * wrappers leave those out), the old mask into *saved. False when the kernel refused (a
 * seccomp filter, say): then nothing was blocked, and nothing must be restored. */
bool signals_block_all(uint64_t *saved);

/* Puts back the mask signals_block_all saved, when it blocked (blocked is its result). */
void signals_restore(bool blocked, const uint64_t *saved);

#endif
