/* This library's build identity: its GNU build-id (the linker's hash of its contents),
 * folded to 64 bits. The benefit gate's cached costs are kept under it, so that a new
 * build, whose hot path may cost something else, measures them again instead of trusting
 * an older build's figures for the rest of the boot. */
#define _GNU_SOURCE
#include "build_id.h"

#include "cache.h"

#include <elf.h>
#include <link.h>
#include <string.h>

struct search {
	uintptr_t address; /* an address inside this library */
	uint64_t id;
};

static bool contains(const struct dl_phdr_info *info, uintptr_t address)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz)
			return true;
	}
	return false;
}

/* The build-id note in one PT_NOTE segment, hashed; 0 if there is none. */
static uint64_t build_id_in(const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
	size_t align = ph->p_align >= 8 ? 8 : 4;
	const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
	size_t left = ph->p_filesz;
	while (left >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
		size_t name = (n->n_namesz + align - 1) & ~(align - 1);
		size_t desc = (n->n_descsz + align - 1) & ~(align - 1);
		if (name > left - sizeof *n || desc > left - sizeof *n - name)
			return 0;
		const unsigned char *name_at = p + sizeof *n;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name_at, "GNU", 4) == 0 &&
		    n->n_descsz > 0)
			return fnv1a64((const char *)name_at + name, n->n_descsz) | 1;
		p += sizeof *n + name + desc;
		left -= sizeof *n + name + desc;
	}
	return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct search *s = data;
	if (!contains(info, s->address))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && !s->id; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE)
			s->id = build_id_in(info, &info->dlpi_phdr[i]);
	return 1;
}

uint64_t shim_build_id(void)
{
	struct search s = {(uintptr_t)&shim_build_id, 0};
	dl_iterate_phdr(visit, &s);
	return s.id;
}
