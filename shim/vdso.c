/* Reads a function's address from the vDSO's dynamic symbol table (vdso.h). The image is
 * the kernel's, but it is read as untrusted all the same: every offset and count is checked
 * against the bounds the headers give before it is followed. */
#include "vdso.h"

#include "load_page.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>

/* A vDSO is a few pages; anything larger is not one. */
enum { VDSO_MAX_BYTES = 1 << 20, VDSO_MAX_SYMBOLS = 4096 };

struct vdso_tables {
	uintptr_t load_offset; /* where the image is, less where it was linked */
	const ElfW(Sym) *symbols;
	const char *strings;
	size_t symbol_count, strings_size;
};

/* On the load path (load_page.h): the load reads the boot's time through the vDSO, where
 * a machine-wide record passed its other checks. No libc call but getauxval, no constant
 * off the load page. */
LOAD_PATH static bool in_image(uintptr_t base, uintptr_t address, size_t size)
{
	return address >= base && size <= VDSO_MAX_BYTES && address - base <= VDSO_MAX_BYTES - size;
}

/* The symbol and string tables the dynamic section names, relocated to where the image
 * is loaded. False where it has no SysV hash table (the symbol count) or any table falls
 * outside the image. */
LOAD_PATH static bool vdso_tables(uintptr_t base, struct vdso_tables *out)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	if (eh->e_ident[EI_MAG0] != ELFMAG0 || eh->e_ident[EI_MAG1] != ELFMAG1 || eh->e_ident[EI_MAG2] != ELFMAG2 ||
	    eh->e_ident[EI_MAG3] != ELFMAG3 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) || !in_image(base, base + eh->e_phoff, eh->e_phnum * sizeof(ElfW(Phdr))))
		return false;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	uintptr_t load_offset = 0, dynamic = 0;
	bool loaded = false;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !loaded) {
			load_offset = base + ph[i].p_offset - ph[i].p_vaddr;
			loaded = true;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dynamic = base + ph[i].p_offset;
		}
	}
	if (!loaded || !dynamic || !in_image(base, dynamic, sizeof(ElfW(Dyn))))
		return false;
	uintptr_t symtab = 0, strtab = 0, hash = 0;
	size_t strsz = 0;
	for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)dynamic; in_image(base, (uintptr_t)d, sizeof *d) && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = load_offset + d->d_un.d_ptr; break;
		case DT_STRTAB: strtab = load_offset + d->d_un.d_ptr; break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_HASH: hash = load_offset + d->d_un.d_ptr; break;
		}
	}
	if (!symtab || !strtab || !hash || !in_image(base, hash, 2 * sizeof(Elf_Symndx)) || !in_image(base, strtab, strsz))
		return false;
	size_t count = ((const Elf_Symndx *)hash)[1]; /* nchain: one per symbol */
	if (count > VDSO_MAX_SYMBOLS || !in_image(base, symtab, count * sizeof(ElfW(Sym))))
		return false;
	*out = (struct vdso_tables){load_offset, (const ElfW(Sym) *)symtab, (const char *)strtab, count, strsz};
	return true;
}

/* The first size bytes at a and b are the same. */
LOAD_PATH static bool same_bytes(const char *a, const char *b, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

LOAD_PATH void *vdso_function_at(uintptr_t base, const char *name)
{
	struct vdso_tables t;
	if (!base || !vdso_tables(base, &t))
		return NULL;
	size_t name_size = 1;
	while (name[name_size - 1])
		name_size++;
	for (size_t i = 0; i < t.symbol_count; i++) {
		const ElfW(Sym) *s = &t.symbols[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || ELF64_ST_BIND(s->st_info) != STB_GLOBAL ||
		    s->st_shndx == SHN_UNDEF || s->st_name >= t.strings_size ||
		    t.strings_size - s->st_name < name_size || !same_bytes(t.strings + s->st_name, name, name_size))
			continue;
		uintptr_t address = t.load_offset + s->st_value;
		return in_image(base, address, 1) ? (void *)address : NULL;
	}
	return NULL;
}

LOAD_PATH void *vdso_function(const char *name)
{
	return vdso_function_at(getauxval(AT_SYSINFO_EHDR), name);
}
