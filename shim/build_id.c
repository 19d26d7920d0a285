/* This library's build identity: its GNU build-id (the linker's hash of its contents),
 * folded to 64 bits. The benefit gate's cached costs are kept under it, so that a new
 * build, whose hot path may cost something else, measures them again instead of trusting
 * an older build's figures for the rest of the boot.
 *
 * Read from our own program headers, which the linker maps with the code and names
 * __ehdr_start: not dl_iterate_phdr, which takes the loader's lock (the first clock read
 * may be in a signal handler that interrupted a dlopen) and touches pages of libc and of
 * the loader's data that the program may never touch. */
#define _GNU_SOURCE
#include "build_id.h"

#include "cache.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

static bool is_gnu(const unsigned char name[4])
{
	return name[0] == 'G' && name[1] == 'N' && name[2] == 'U' && name[3] == '\0';
}

/* The build-id note in one PT_NOTE segment, hashed; 0 if there is none. */
static uint64_t build_id_in(uintptr_t bias, const ElfW(Phdr) *ph)
{
	size_t align = ph->p_align >= 8 ? 8 : 4;
	const unsigned char *p = (const unsigned char *)(bias + ph->p_vaddr);
	size_t left = ph->p_filesz;
	while (left >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
		size_t name = (n->n_namesz + align - 1) & ~(align - 1);
		size_t desc = (n->n_descsz + align - 1) & ~(align - 1);
		if (name > left - sizeof *n || desc > left - sizeof *n - name)
			return 0;
		const unsigned char *name_at = p + sizeof *n;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && is_gnu(name_at) && n->n_descsz > 0)
			return fnv1a64((const char *)name_at + name, n->n_descsz) | 1;
		p += sizeof *n + name + desc;
		left -= sizeof *n + name + desc;
	}
	return 0;
}

uint64_t shim_build_id(void)
{
	/* The headers are at file offset 0, which the PT_LOAD of offset 0 maps at its p_vaddr:
	 * the load bias, which segment addresses are relative to, is the difference. */
	const ElfW(Ehdr) *eh = &__ehdr_start;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((uintptr_t)eh + eh->e_phoff);
	uintptr_t bias = 0;
	bool mapped = false;
	for (int i = 0; i < eh->e_phnum && !mapped; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			bias = (uintptr_t)eh - ph[i].p_vaddr;
			mapped = true;
		}
	uint64_t id = 0;
	for (int i = 0; mapped && i < eh->e_phnum && !id; i++)
		if (ph[i].p_type == PT_NOTE)
			id = build_id_in(bias, &ph[i]);
	return id;
}
