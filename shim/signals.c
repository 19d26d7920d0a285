#define _GNU_SOURCE
#include "signals.h"

#include "raw_syscall.h"

#include <signal.h>
#include <sys/syscall.h>

bool signals_block_all(uint64_t *saved)
{
	uint64_t all = ~(uint64_t)0;
	return raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)saved, sizeof all) == 0;
}

void signals_restore(bool blocked, const uint64_t *saved)
{
	if (blocked)
		raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)saved, 0, sizeof *saved);
}
