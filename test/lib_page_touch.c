/* Which pages of the shim's code a process touches. Preloaded after the shim
 * (LD_PRELOAD="libtscshim.so libpage_touch.so"), its constructor runs before the shim's:
 * it counts the load, the program and the exit. Preloaded before it, its constructor
 * runs after the shim's: it counts the program and the exit only. Either way it reports
 * from an exit handler registered in its constructor with no object of its own
 * (__cxa_atexit(..., NULL)): glibc runs that after every loaded object's destructor,
 * since the loader's exit handler was registered after it and handlers run newest first.
 * (atexit would tie it to this object, whose destructors run before the shim's when it
 * comes first.)
 *
 * Why count pages: in the KVM guests the shim is measured on, the first touch of a page of
 * its code in a process costs about as much as a page fault (10-25 us), whether or not
 * the kernel counts a fault (the kernel maps the 64 KiB around a fault at once, but the
 * host still fills its own tables page by page). A count of pages is exact where a time
 * of a few microseconds drowns in the noise of a shared machine, so tests assert it.
 *
 * How: the constructor takes every page of the shim's executable segment away
 * (PROT_NONE) and a SIGSEGV handler gives each back, and notes it, on its first touch.
 * At exit (after the shim's own destructor) it prints one line on stderr:
 *   page-touch: pages=N touched=K list=0x2,0x3
 * (page numbers from the start of the shim's image) or "page-touch: error ..." when it
 * could not take the pages.
 *
 * Only for code paths that keep signals unblocked (the shim's load and exit, and a
 * program's reads after the decision): a SIGSEGV raised while every signal is blocked
 * kills the process. Pages of constants in the same segment: a system call given an
 * address there would fail with EFAULT instead of faulting, so the shim's load path keeps
 * its paths and names in data (calib/load_page.h), and tests compare the shim's verdict
 * with and without this probe. */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_PAGES 512

extern int __cxa_atexit(void (*function)(void *), void *argument, void *dso_handle);

static uintptr_t image_base;     /* the shim's load address: page numbers count from it */
static uintptr_t first_page;     /* address of the segment's first page */
static int page_count;           /* pages taken away */
static int page_prot;            /* the segment's own protection, given back */
static volatile sig_atomic_t touched[MAX_PAGES];
static struct sigaction previous;
static char error_text[160];

static void on_fault(int sig, siginfo_t *info, void *context)
{
	uintptr_t address = (uintptr_t)info->si_addr;
	long page_size = 4096;
	if (page_count > 0 && address >= first_page && address < first_page + (uintptr_t)page_count * page_size) {
		int page = (int)((address - first_page) / page_size);
		touched[page] = 1;
		mprotect((void *)(first_page + (uintptr_t)page * page_size), page_size, page_prot);
		return;
	}
	/* Not ours: the program's own fault. Hand it to whoever handled it before. */
	sigaction(SIGSEGV, &previous, NULL);
	if (previous.sa_flags & SA_SIGINFO && previous.sa_sigaction)
		previous.sa_sigaction(sig, info, context);
	else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)
		previous.sa_handler(sig);
}

struct found {
	uintptr_t base, start, end;
	int prot;
};

static int find_shim(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct found *found = data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libtscshim"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		found->base = info->dlpi_addr;
		found->start = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
		found->end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
		found->prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0);
		return 1;
	}
	return 0;
}

static void take_pages(void)
{
	struct found found = {0, 0, 0, 0};
	if (!dl_iterate_phdr(find_shim, &found) || found.end <= found.start) {
		snprintf(error_text, sizeof error_text, "no libtscshim with an executable segment is loaded");
		return;
	}
	int count = (int)((found.end - found.start) / 4096);
	if (count > MAX_PAGES) {
		snprintf(error_text, sizeof error_text, "%d pages, more than %d", count, MAX_PAGES);
		return;
	}
	struct sigaction action;
	memset(&action, 0, sizeof action);
	action.sa_sigaction = on_fault;
	action.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGSEGV, &action, &previous) != 0) {
		snprintf(error_text, sizeof error_text, "sigaction failed");
		return;
	}
	image_base = found.base;
	first_page = found.start;
	page_prot = found.prot;
	page_count = count;
	if (mprotect((void *)found.start, found.end - found.start, PROT_NONE) != 0) {
		page_count = 0;
		snprintf(error_text, sizeof error_text, "mprotect failed");
	}
}

static void report(void *unused)
{
	(void)unused;
	char line[MAX_PAGES * 7 + 128];
	int length;
	if (error_text[0]) {
		length = snprintf(line, sizeof line, "page-touch: error %s\n", error_text);
	} else {
		int touched_count = 0;
		for (int i = 0; i < page_count; i++)
			touched_count += touched[i] != 0;
		length = snprintf(line, sizeof line, "page-touch: pages=%d touched=%d list=", page_count, touched_count);
		const char *separator = "";
		for (int i = 0; i < page_count && length < (int)sizeof line - 16; i++)
			if (touched[i]) {
				length += snprintf(line + length, sizeof line - (size_t)length, "%s%#x", separator,
						   (unsigned)((first_page - image_base) / 4096 + (unsigned)i));
				separator = ",";
			}
		length += snprintf(line + length, sizeof line - (size_t)length, "\n");
	}
	if (length > (int)sizeof line - 1)
		length = (int)sizeof line - 1;
	if (write(2, line, (size_t)length) < 0)
		return;
}

__attribute__((constructor)) static void page_touch_start(void)
{
	take_pages();
	if (__cxa_atexit(report, NULL, NULL) != 0)
		report(NULL);
}
