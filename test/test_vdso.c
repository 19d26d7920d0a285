/* shim/vdso.c: the kernel's clock_gettime found in this process's vDSO, and called, gives
 * the kernel's clock; images that are not a vDSO, or are cut short, answer NULL. */
#include "vdso.h"
#include "unit.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int clock_gettime_fn(clockid_t, struct timespec *);

static long long ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000ll + ts->tv_nsec;
}

static void finds_and_calls_the_kernels_clock_gettime(void)
{
	if (!getauxval(AT_SYSINFO_EHDR)) {
		printf("# no vDSO in this process (valgrind?): nothing to find\n");
		CHECK(vdso_function("__vdso_clock_gettime") == NULL);
		return;
	}
	clock_gettime_fn *fn = (clock_gettime_fn *)vdso_function("__vdso_clock_gettime");
	CHECK(fn != NULL);
	if (!fn)
		return;
	struct timespec lo, ts, hi;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &lo);
	CHECK(fn(CLOCK_MONOTONIC, &ts) == 0);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &hi);
	CHECK(ns(&lo) <= ns(&ts) && ns(&ts) <= ns(&hi));
	/* A failure is a negated errno, not -1 and errno. */
	CHECK(fn((clockid_t)12345, &ts) == -22);
	CHECK(vdso_function("__vdso_no_such_function") == NULL);
	CHECK(vdso_function("__vdso_clock_gettim") == NULL); /* a prefix is not a name */
}

static void what_is_not_a_vdso_answers_null(void)
{
	CHECK(vdso_function_at(0, "__vdso_clock_gettime") == NULL);
	static unsigned char zeros[8192];
	CHECK(vdso_function_at((uintptr_t)zeros, "__vdso_clock_gettime") == NULL);
	/* The real image's headers with every table offset made absurd, in a copy. */
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return;
	/* Larger than anything the reader follows (1 MiB from the base), so that even a
	 * random image keeps its reads inside the buffer. */
	static unsigned char copy[2 << 20];
	memcpy(copy, (const void *)base, 4096);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;
	eh->e_phoff = 1u << 30;
	CHECK(vdso_function_at((uintptr_t)copy, "__vdso_clock_gettime") == NULL);
	memcpy(copy, (const void *)base, 4096);
	eh->e_phnum = 0;
	CHECK(vdso_function_at((uintptr_t)copy, "__vdso_clock_gettime") == NULL);
	/* Random bytes after a valid ELF magic never crash it. */
	srand(7);
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < 4096; i++)
			copy[i] = (unsigned char)rand();
		memcpy(copy, ELFMAG, SELFMAG);
		copy[EI_CLASS] = ELFCLASS64;
		void *p = vdso_function_at((uintptr_t)copy, "__vdso_clock_gettime");
		CHECK(p == NULL || ((uintptr_t)p >= (uintptr_t)copy && (uintptr_t)p < (uintptr_t)copy + (1u << 20)));
	}
}

int main(void)
{
	RUN(finds_and_calls_the_kernels_clock_gettime);
	RUN(what_is_not_a_vdso_answers_null);
	return unit_finish();
}
