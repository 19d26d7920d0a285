/* Where a build with -DTSCSHIM_TEST_HOOKS (build/test/libtscshim-hooks.so) calls the
 * function that `tscshim_test_hook` points to, so that tests can pause a writer, raise a
 * signal in it or jump out of it at a chosen point and drive the production code
 * through the case. The production library has no hook and no symbol. */
#ifndef SHIM_TEST_POINTS_H
#define SHIM_TEST_POINTS_H

enum test_point {
	TEST_POINT_ANCHORED = 1, /* a writer has its anchor and holds nothing shared */
	TEST_POINT_CLAIMED,      /* a writer holds a slot, signals blocked */
	TEST_POINT_PUBLISHED,    /* published, the superseded slot not yet freed */
	TEST_POINT_KERNEL_READ,  /* a reader past the hard end is about to raise the floor */
	TEST_POINT_HELD_READ,    /* a read of a stopped clock has its kernel reading, not yet
	                          * compared with what the clock held */
};

/* TEST_POINT(p) calls the hook, where one is set, in the hooks build; it is nothing in the
 * production library. The hook's storage is in shim/test_points.c. */
#ifdef TSCSHIM_TEST_HOOKS
#include "export.h"
extern SHIM_EXPORT void (*tscshim_test_hook)(int point);
#define TEST_POINT(p)                                                                  \
	do {                                                                           \
		void (*hook_)(int) = tscshim_test_hook;                                \
		if (hook_)                                                             \
			hook_(p);                                                      \
	} while (0)
#else
#define TEST_POINT(p) ((void)0)
#endif

#endif
