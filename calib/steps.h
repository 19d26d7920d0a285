/* Where the start-up and the decision spend their time, step by step: the steps build only
 * (-DTSCTEST_STEPS_BUILD, build/test/libtscshim-steps.so, never installed). Each STEP(name), and
 * each system call made through raw_syscall.h, notes the counter and the process's page
 * faults so far; at exit the notes go to the file TSCTEST_STEPS_FILE names, and
 * test/steps.py turns many processes' notes into doc/STARTUP.md's table of what each step
 * costs. The notes' own cost (a getrusage per note) is left out of the steps' times.
 *
 * The same build stages a host whose system calls are dear (TSCTEST_SYSCALL_COST_NS: each
 * system call the shim makes takes that much longer) and one whose fresh pages are
 * (TSCTEST_FAULT_COST_NS: each page fault a step took costs that much more, paid at the
 * step's end), so that the table and the tests that count steps hold on any host kind.
 *
 * In every other build STEP is nothing and raw_syscall.h is untouched. */
#ifndef CALIB_STEPS_H
#define CALIB_STEPS_H

#ifdef TSCTEST_STEPS_BUILD
/* A step ends here: NAME is a string literal. */
void steps_note(const char *name, long arg);
#define STEP(name) steps_note(name, 0)
/* Around each system call of raw_syscall.h: the call's number. */
void steps_syscall_begin(long number);
void steps_syscall_end(long number);
/* At each read of the kernel's clock (real_clock_gettime). */
void steps_kernel_read(void);
#else
#define STEP(name) ((void)0)
#endif

#endif
