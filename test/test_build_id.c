/* shim/build_id.c, linked into this program: the identity it reads from the program's own
 * headers (__ehdr_start) is the one the loader's list gives for the same object, and it
 * follows the build-id note's bytes. Built twice: position-independent (the shim's case,
 * a load bias) and at a fixed address (the first segment's address not 0). */
#define _GNU_SOURCE
#include "build_id.h"
#include "cache.h"
#include "unit.h"

#include <elf.h>
#include <link.h>
#include <string.h>

struct found {
	uint64_t id;
	int notes;
};

/* The reference: the first object dl_iterate_phdr lists is the program itself. */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct found *f = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_filesz;
		size_t align = ph->p_align >= 8 ? 8 : 4;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			size_t name = (n->n_namesz + align - 1) & ~(align - 1);
			size_t desc = (n->n_descsz + align - 1) & ~(align - 1);
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(p + sizeof *n, "GNU", 4) == 0) {
				f->id = fnv1a64((const char *)p + sizeof *n + name, n->n_descsz) | 1;
				f->notes++;
			}
			p += sizeof *n + name + desc;
		}
	}
	return 1;
}

static void same_as_the_loaders_list(void)
{
	struct found f = {0, 0};
	dl_iterate_phdr(first_object, &f);
	CHECK(f.notes == 1); /* the Makefile links it with --build-id */
	CHECK(f.id != 0);
	CHECK_EQ_U64(shim_build_id(), f.id);
}

static void stable_and_never_zero(void)
{
	uint64_t a = shim_build_id(), b = shim_build_id();
	CHECK_EQ_U64(a, b);
	CHECK((a & 1) == 1);
}

int main(void)
{
	RUN(same_as_the_loaders_list);
	RUN(stable_and_never_zero);
	return unit_finish();
}
