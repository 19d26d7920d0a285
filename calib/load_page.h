/* What a process pays for having the shim loaded: the pages it touches.
 *
 * Preloaded into every process of a machine, the shim's load and exit run in every
 * `sh`, `date` and compiler pass, most of which never read a clock. What they cost is
 * pages and system calls, far more than their instructions: in the KVM guest measured, a
 * page fault costs about 10 us (a fresh page of data, or a page of text outside the
 * 64 KiB the kernel maps around an earlier fault) and a system call 1-2 us. A first touch
 * of a page of the shim's code that the kernel has already mapped around an earlier
 * fault, with no fault counted, still cost 7-50 us there (the _fini of the C runtime's
 * start files, alone on the last page of .text, touched only at exit: removing it took
 * the exit from 10-25 us to 0.5 us), while a first touch of anonymous memory mapped with
 * MAP_POPULATE cost about 0.2 us. So the code that runs in every process, and the data
 * it reads and writes, is kept on as few pages as possible, and calls into libc (each
 * function another page of libc's text) are avoided there. test/lib_page_touch.c counts
 * the pages; bats/load.bats holds the load and exit to the load path's own.
 *
 * LOAD_PATH: a function that runs at load (or exit) in every process, whatever the
 * variables, including with TSCSHIM_DISABLE=1. shim/load_path.ld places them all right
 * after the tables the loader reads, and cold has them compiled for size, so that the
 * tables and this code together take the image's first three pages (the relocations
 * alone take 3 KB). Only for functions off the clock's hot path: a function in its own
 * section is not inlined into callers elsewhere, and a call to a cold function is laid
 * out as unlikely.
 *
 * ON_LOAD_PAGE: data such code reads or writes. Loading the shim dirties the page where
 * its initialized data ends (the loader zeroes the rest of it, up to where .bss begins on
 * a page of its own); every other page the shim writes costs the process a fault of its
 * own. So the small state that load, the first read and exit touch lives in initialized
 * data (this section name), on that one page, and so do the constants the load path
 * reads (a page of .rodata would be one more fault); the large buffers stay in .bss,
 * touched only by the decision. */
#ifndef CALIB_LOAD_PAGE_H
#define CALIB_LOAD_PAGE_H

#define LOAD_PATH __attribute__((section(".text.startup.tscshim_load"), cold))
#define ON_LOAD_PAGE __attribute__((section(".data.tscshim_load_page")))

/* A page-aligned object in .bss would align all of .bss to a page, and put the small
 * zeroed variables (the C runtime's among them, read at exit) on a page of their own:
 * such objects go to .lbss instead, which the linker places after .bss. */
#define AFTER_BSS __attribute__((section(".lbss")))

#endif
