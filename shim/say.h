/* The shim's one line on stderr: "tscshim: " and the parts, written with one write(2).
 * Neither fprintf (for an unbuffered stream glibc formats through an 8 KiB buffer on the
 * stack, which a small stack such as ulimit -s 16 or a signal's stack does not have) nor
 * printf's formatting (about 2 KiB of stack more). Async-signal-safe. */
#ifndef SHIM_SAY_H
#define SHIM_SAY_H

/* TSCSHIM_VERBOSE: 0 silent but for bad options, 1 the decision, 2 every look-up. */
extern unsigned say_level;

void say(const char *first, ...) __attribute__((sentinel));

#endif
