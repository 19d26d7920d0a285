/* The vmclock page's checks and its marker read (calib/vmclock.h). */
#include "vmclock.h"

#include "raw_syscall.h"

#include <stdatomic.h>
#include <sys/stat.h>

static uint32_t load32(const volatile void *page, size_t offset)
{
	return __atomic_load_n((const uint32_t *)((const volatile char *)page + offset), __ATOMIC_ACQUIRE);
}

bool vmclock_page_usable(const volatile void *page)
{
	const volatile unsigned char *p = page;
	uint32_t size = load32(page, 4);
	uint16_t version = (uint16_t)(p[8] | p[9] << 8);
	return load32(page, 0) == VMCLOCK_MAGIC && version == VMCLOCK_VERSION && size >= VMCLOCK_SIZE_LEAST &&
	       size <= VMCLOCK_PAGE_SIZE;
}

bool vmclock_marker_read(const volatile void *page, uint64_t *marker)
{
	for (int i = 0; i < VMCLOCK_MARKER_TRIES; i++) {
		uint32_t seq = load32(page, VMCLOCK_SEQ_OFFSET);
		if (seq & 1)
			continue; /* being written */
		uint64_t m = __atomic_load_n(vmclock_marker_at(page), __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		if (load32(page, VMCLOCK_SEQ_OFFSET) == seq) {
			*marker = m;
			return true;
		}
	}
	return false;
}

bool vmclock_device_exists(const char *path)
{
	struct stat st;
	return raw_stat(path, &st) == 0;
}
