/* Holds a process while the loader is loading it, before it relocates the shim
 * (bats/ps.bats): preloaded after it (LD_PRELOAD="libtscshim.so libloading_hold.so"),
 * this library is relocated first, and its one relocation runs an IFUNC resolver, which
 * says "ready" on stdout and waits for SIGKILL. The shim is then mapped, its state
 * block still holding the addresses of its file, unrelocated. Raw system calls only:
 * nothing else may be called while the loader relocates. glibc only (musl's loader
 * has no IFUNC). */
#include <sys/syscall.h>

static long raw3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

static void target(void)
{
}

static void (*resolve(void))(void)
{
	static const char ready[] = "ready\n";
	raw3(SYS_write, 1, (long)ready, sizeof ready - 1);
	for (;;)
		raw3(SYS_pause, 0, 0, 0);
	return target;
}

void held(void) __attribute__((ifunc("resolve")));

/* A pointer to it in data: relocated (IRELATIVE) at load, whatever the binding mode. */
__attribute__((used)) void (*held_pointer)(void) = held;
