/* The hypervisor's vmclock device (Linux 6.13 and later, /dev/vmclock0): a page the
 * hypervisor writes, read-only to the guest, whose disruption marker changes whenever the
 * guest's counter was disrupted (a live migration, above all), so that anything calibrated
 * against the counter is to be measured again. The shim uses that marker alone. Pure:
 * what a page must hold to be read, and the marker read under the page's sequence count;
 * the mapping is the shim's (shim/disruption.c).
 *
 * The layout is the kernel's include/uapi/linux/vmclock-abi.h, little-endian, as x86-64
 * reads it: magic at 0, size at 4, version (16 bits) at 8, counter_id at 10, seq_count
 * at 12 (odd while the hypervisor writes), disruption_marker at 16. */
#ifndef CALIB_VMCLOCK_H
#define CALIB_VMCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMCLOCK_DEVICE "/dev/vmclock0"

enum {
	VMCLOCK_PAGE_SIZE = 4096,      /* the device maps one page, at offset 0, read-only */
	VMCLOCK_MAGIC = 0x4b4c4356,    /* "VCLK" */
	VMCLOCK_VERSION = 1,
	VMCLOCK_SEQ_OFFSET = 12,
	VMCLOCK_MARKER_OFFSET = 16,
	VMCLOCK_SIZE_LEAST = 24,       /* through the marker */
	VMCLOCK_MARKER_TRIES = 64,     /* sequence reads before the marker counts as unreadable */
};

/* Whether `page` (VMCLOCK_PAGE_SIZE bytes) is a vmclock structure this code reads: the
 * magic, version 1, a size that holds the marker and fits the page. */
bool vmclock_page_usable(const volatile void *page);

/* The disruption marker, read between two equal even sequence counts. False where the
 * hypervisor was writing at every one of VMCLOCK_MARKER_TRIES tries. Async-signal-safe. */
bool vmclock_marker_read(const volatile void *page, uint64_t *marker);

/* Where the marker is, for a load on the hot path (one aligned 64-bit load is whole). */
static inline const uint64_t *vmclock_marker_at(const volatile void *page)
{
	return (const uint64_t *)((const volatile char *)page + VMCLOCK_MARKER_OFFSET);
}

/* Whether a vmclock device exists at path (a process that cannot open it still learns
 * that it might). One system call. */
bool vmclock_device_exists(const char *path);

#endif
