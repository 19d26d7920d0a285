/* The vmclock device's mapping and the watch of its disruption marker (shim/disruption.h).
 * Owns clock_config's two marker fields: the page's marker address, set once when the
 * watch starts and never unmapped (a reader may hold it), and the marker seen, which
 * writers set after they publish; and each disruption's moment (disruption_moment). */
#define _GNU_SOURCE
#include "disruption.h"

#include "say.h"

#include "counter.h"
#include "raw_syscall.h"
#include "vmclock.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#ifdef TSCSHIM_TEST_HOOKS
/* The test build only: TSCSHIM_TEST_VMCLOCK names a file that stands for the device (a
 * page in its layout, which the test changes), so that a host without the device runs
 * the production code. */
#include <stdlib.h>
static const char *device_path(void)
{
	const char *path = getenv("TSCSHIM_TEST_VMCLOCK");
	return path && *path ? path : VMCLOCK_DEVICE;
}
#else
static const char *device_path(void)
{
	return VMCLOCK_DEVICE;
}
#endif

bool disruption_device_exists(void)
{
	return vmclock_device_exists(device_path());
}

bool disruption_watch_start(void)
{
	if (__atomic_load_n(&clock_config.disruption_marker, __ATOMIC_ACQUIRE))
		return true; /* watched already: the first mapping stands (it is never unmapped) */
	long fd = raw_syscall4(SYS_openat, AT_FDCWD, (long)device_path(), O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		if (say_level >= 1)
			say_brief("the hypervisor's vmclock device could not be opened: a migration is seen at the next "
				  "re-synchronization, not at the next read", NULL);
		return false;
	}
	void *page = mmap(NULL, VMCLOCK_PAGE_SIZE, PROT_READ, MAP_SHARED, (int)fd, 0);
	if (raw_syscall4(SYS_close, fd, 0, 0, 0) != 0) {
		/* Nothing to do: the mapping, if any, stands without the descriptor. */
	}
	uint64_t marker;
	if (page == MAP_FAILED || !vmclock_page_usable(page) || !vmclock_marker_read(page, &marker)) {
		if (page != MAP_FAILED && munmap(page, VMCLOCK_PAGE_SIZE) != 0) {
			/* A page left mapped costs nothing read. */
		}
		if (say_level >= 1)
			say_brief("the hypervisor's vmclock device is not one this build reads (mapping, magic, version "
				  "or size): a migration is seen at the next re-synchronization", NULL);
		return false;
	}
	/* The marker before its address: a reader that finds the address compares it with
	 * a marker of this page. The first line is anchored after this: a disruption in
	 * between shows as a marker changed since, and stops it. */
	disruption_note_seen(marker);
	__atomic_store_n(&clock_config.disruption_marker, vmclock_marker_at(page), __ATOMIC_RELEASE);
	return true;
}

/* {marker, moment}: the last disruption's. Not on the hot path's lines. */
static _Alignas(16) uint64_t moment_pair[2];

uint64_t disruption_moment(uint64_t marker, uint64_t t)
{
	uint64_t expected[2] = {__atomic_load_n(&moment_pair[0], __ATOMIC_ACQUIRE),
				__atomic_load_n(&moment_pair[1], __ATOMIC_ACQUIRE)};
	while (expected[0] != marker || expected[1] == 0) {
		/* Fails only where another read set it (or tore the two loads): then expected
		 * holds the pair as it is, and the loop looks again. */
		if (counter_cas_pair(moment_pair, expected, marker, t))
			return t;
	}
	return expected[1];
}

bool disruption_marker_now(uint64_t *marker)
{
	const uint64_t *at = __atomic_load_n(&clock_config.disruption_marker, __ATOMIC_ACQUIRE);
	return at && vmclock_marker_read((const char *)at - VMCLOCK_MARKER_OFFSET, marker);
}
