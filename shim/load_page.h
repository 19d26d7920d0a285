/* The page the dynamic loader writes anyway.
 *
 * Loading the shim dirties the page where its initialized data ends (the loader zeroes
 * the rest of it, up to where .bss begins on a page of its own). Every other page the
 * shim writes costs the process a fault of its own, and a fresh page is the dearest
 * thing a preloaded library can ask of a process that never reads a clock: about 10 us
 * in a KVM guest whose host backs guest memory lazily, where a system call costs 1 us.
 * So the small state that load, the first read and exit touch lives in initialized data
 * (this section name), on that one page; the large buffers stay in .bss, touched only by
 * the decision. */
#ifndef SHIM_LOAD_PAGE_H
#define SHIM_LOAD_PAGE_H

#define ON_LOAD_PAGE __attribute__((section(".data.tscshim_load_page")))

/* A page-aligned object in .bss would align all of .bss to a page, and put the small
 * zeroed variables (the C runtime's among them, read at exit) on a page of their own:
 * such objects go to .lbss instead, which the linker places after .bss. */
#define AFTER_BSS __attribute__((section(".lbss")))

#endif
