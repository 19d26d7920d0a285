/* Every signal blocked on the calling thread, and the mask restored (shim/signals.h). */
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
	/* The same call with a mask it just gave back: only a filter that let the block
	 * through and refuses this could fail it. Tried twice; beyond that the thread keeps
	 * its signals blocked, and nothing here can do better. */
	for (int attempt = 0; blocked && attempt < 2; attempt++)
		if (raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)saved, 0, sizeof *saved) == 0)
			break;
}
