/* The shim's one line on stderr: "tscshim: " and the parts, written with one write(2).
 * Neither fprintf (for an unbuffered stream glibc formats through an 8 KiB buffer on the
 * stack, which a small stack such as ulimit -s 16 or a signal's stack does not have) nor
 * printf's formatting (about 2 KiB of stack more). Async-signal-safe. */
#ifndef SHIM_SAY_H
#define SHIM_SAY_H

/* TSCSHIM_VERBOSE: 0 silent but for bad options, 1 the decision, 2 every look-up. */
extern unsigned say_level;

/* Where say() writes: stderr (2), or, at exit, the copy of the stderr the process had at
 * load (say_keep_stderr), which a program may have closed by then (coreutils do). */
extern int say_fd;

void say(const char *first, ...) __attribute__((sentinel));

/* The same, for a short line from deep in a read (a clock that stops serving): its
 * buffer is 256 bytes, not 1 KiB, on a stack that may be a signal's. */
void say_brief(const char *first, ...) __attribute__((sentinel));

/* For TSCSHIM_VERBOSE, at load: a copy of stderr (close-on-exec, numbered 64 or above) for
 * a line at exit; say_at_exit() switches say() to it when stderr is no longer that file. */
void say_keep_stderr(void);
void say_at_exit(void);

#endif
