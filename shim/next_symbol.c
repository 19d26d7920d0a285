/* See next_symbol.h. The rules are glibc's for dlsym(RTLD_NEXT, name) (elf/dl-lookup.c:
 * check_match and do_lookup_x, asked for the newest version): the first object along the
 * search list whose table has a match wins; within it, an unversioned symbol (version
 * index 0 or 1) is taken at once, and otherwise the one non-hidden version (the default,
 * name@@VERSION) if there is exactly one. test/test_next_symbol.c holds them to dlsym's
 * answers in its own process. */
#define _GNU_SOURCE
#include "next_symbol.h"
#include "absdiff.h"
#include "load_page.h"

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>

#define BLOOM_BITS (8 * sizeof(ElfW(Addr)))
/* Bounds on what is read, so that a damaged table cannot keep us walking. */
#define DYNAMIC_ENTRIES_MAX 512
#define CHAIN_MAX 4096
#define OBJECTS_MAX 4096

LOAD_PATH uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

/* An address from the dynamic section, or 0 when it cannot be told. glibc adds the load
 * address to these entries in place, except where the section is read-only (the vDSO's,
 * a few objects'); musl never does. Which one a value is, is told by where the object is:
 * its tables lie near its own dynamic section (l_ld, always a run-time address), so of
 * the value as it is and the value plus l_addr, the one within 1 GiB of l_ld is taken,
 * and none when both or neither are. (A library linked at a high base and loaded below
 * it has an l_addr that wraps around: comparing with l_addr itself misreads it.) */
LOAD_PATH static uintptr_t at(const struct link_map *object, ElfW(Addr) value)
{
	const uintptr_t near = (uintptr_t)1 << 30, here = (uintptr_t)object->l_ld;
	uintptr_t as_is = value, moved = value + object->l_addr;
	bool as_is_near = abs_diff_u64(as_is, here) < near;
	bool moved_near = abs_diff_u64(moved, here) < near;
	if (object->l_addr == 0 || as_is_near == moved_near)
		return object->l_addr == 0 && as_is_near ? as_is : 0;
	return as_is_near ? as_is : moved;
}

struct tables {
	const uint32_t *gnu_hash;
	const ElfW(Sym) *symbols;
	const char *strings;
	size_t strings_size;
	const ElfW(Half) *versions; /* NULL when the object has no version table */
};

LOAD_PATH static bool tables_of(const struct link_map *object, struct tables *t)
{
	*t = (struct tables){0};
	bool versioned = false;
	const ElfW(Dyn) *d = object->l_ld;
	for (int i = 0; d && i < DYNAMIC_ENTRIES_MAX && d[i].d_tag != DT_NULL; i++) {
		switch (d[i].d_tag) {
		case DT_GNU_HASH:
			t->gnu_hash = (const uint32_t *)at(object, d[i].d_un.d_ptr);
			break;
		case DT_SYMTAB:
			t->symbols = (const ElfW(Sym) *)at(object, d[i].d_un.d_ptr);
			break;
		case DT_STRTAB:
			t->strings = (const char *)at(object, d[i].d_un.d_ptr);
			break;
		case DT_STRSZ:
			t->strings_size = d[i].d_un.d_val;
			break;
		case DT_VERSYM:
			versioned = true;
			t->versions = (const ElfW(Half) *)at(object, d[i].d_un.d_ptr);
			break;
		}
	}
	/* A version table that is there but could not be placed is no "unversioned". */
	return t->gnu_hash && t->symbols && t->strings && t->strings_size && (!versioned || t->versions);
}

LOAD_PATH static bool same_name(const char *in_table, size_t room, const char *name)
{
	size_t i = 0;
	for (; i < room && name[i]; i++)
		if (in_table[i] != name[i])
			return false;
	return i < room && in_table[i] == '\0' && name[i] == '\0';
}

/* check_match's first filters: what the loader does not count as a definition at all. */
LOAD_PATH static bool counts(const ElfW(Sym) *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	if (s->st_value == 0 && s->st_shndx != SHN_ABS && type != STT_TLS)
		return false;
	const unsigned allowed = (1u << STT_NOTYPE) | (1u << STT_OBJECT) | (1u << STT_FUNC) | (1u << STT_COMMON) |
				 (1u << STT_TLS) | (1u << STT_GNU_IFUNC);
	return type < 32 && (allowed >> type & 1);
}

/* A chosen symbol as a function's address, when it is one we can take as is. */
static enum next_symbol_answer function_address(const struct link_map *object, const ElfW(Sym) *s, void **address)
{
	unsigned binding = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
	if (s->st_shndx == SHN_UNDEF || (binding != STB_GLOBAL && binding != STB_WEAK))
		return NEXT_UNSURE;
	uintptr_t where = object->l_addr + s->st_value;
	if (type == STT_FUNC) {
		*address = (void *)where;
		return NEXT_FOUND;
	}
#if defined(__x86_64__)
	/* The loader's elf_ifunc_invoke on x86-64: the resolver takes no argument. */
	if (type == STT_GNU_IFUNC) {
		*address = ((void *(*)(void))where)();
		return *address ? NEXT_FOUND : NEXT_UNSURE;
	}
#endif
	return NEXT_UNSURE;
}

/* The object's bloom filter for hash: NEXT_NOT_HERE when it rules the name out,
 * NEXT_FOUND when the name may be there (t then holds the tables), NEXT_UNSURE when the
 * tables cannot be read. Reads only the filter's word, which the loader read too. */
LOAD_PATH static enum next_symbol_answer bloom_filter(const struct link_map *object, uint32_t hash, struct tables *t)
{
	if (!tables_of(object, t))
		return NEXT_UNSURE;
	const uint32_t buckets_count = t->gnu_hash[0], bloom_words = t->gnu_hash[2], bloom_shift = t->gnu_hash[3];
	if (buckets_count == 0 || bloom_words == 0 || (bloom_words & (bloom_words - 1)) != 0)
		return NEXT_UNSURE;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t->gnu_hash + 4);
	ElfW(Addr) word = bloom[(hash / BLOOM_BITS) & (bloom_words - 1)];
	ElfW(Addr) mask = (ElfW(Addr))1 << (hash % BLOOM_BITS) | (ElfW(Addr))1 << ((hash >> bloom_shift) % BLOOM_BITS);
	return (word & mask) == mask ? NEXT_FOUND : NEXT_NOT_HERE;
}

/* The symbol the loader would take for name in this object, without resolving it. */
LOAD_PATH static enum next_symbol_answer find_symbol(const struct link_map *object, const char *name, uint32_t hash,
					   const ElfW(Sym) **found)
{
	struct tables t;
	enum next_symbol_answer filter = bloom_filter(object, hash, &t);
	if (filter != NEXT_FOUND)
		return filter; /* NEXT_NOT_HERE, the filter ruling it out, is the common answer */
	const uint32_t buckets_count = t.gnu_hash[0], first_hashed = t.gnu_hash[1];
	const uint32_t bloom_words = t.gnu_hash[2];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t.gnu_hash + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_words);
	const uint32_t *chain = buckets + buckets_count;
	uint32_t index = buckets[hash % buckets_count];
	if (index == 0)
		return NEXT_NOT_HERE;
	if (index < first_hashed)
		return NEXT_UNSURE;

	const ElfW(Sym) *chosen = NULL, *newer = NULL;
	unsigned newer_count = 0;
	for (int step = 0; step < CHAIN_MAX; step++, index++) {
		uint32_t link = chain[index - first_hashed];
		const ElfW(Sym) *s = &t.symbols[index];
		if ((link | 1) == (hash | 1) && counts(s) && s->st_name < t.strings_size &&
		    same_name(t.strings + s->st_name, t.strings_size - s->st_name, name)) {
			ElfW(Half) version = t.versions ? t.versions[index] : 0;
			if ((version & 0x7fff) < 2) {
				chosen = s;
				break;
			}
			if ((version & 0x8000) == 0 && newer_count++ == 0)
				newer = s;
		}
		if (link & 1)
			break;
		if (step == CHAIN_MAX - 1)
			return NEXT_UNSURE;
	}
	if (!chosen)
		chosen = newer_count == 1 ? newer : NULL;
	if (!chosen)
		return newer_count ? NEXT_UNSURE : NEXT_NOT_HERE;
	*found = chosen;
	return NEXT_FOUND;
}

enum next_symbol_answer next_symbol_in_object(const struct link_map *object, const char *name, uint32_t hash,
					      void **address)
{
	const ElfW(Sym) *s;
	enum next_symbol_answer a = find_symbol(object, name, hash, &s);
	return a == NEXT_FOUND ? function_address(object, s, address) : a;
}

/* The C library by its file name: ".../libc.so.6", or "libc.so.6". Compared by hand,
 * with no string constant: its page would be one more for every process to fault in. */
LOAD_PATH static bool is_c_library(const char *path)
{
	if (!path)
		return false;
	size_t len = 0;
	while (path[len])
		len++;
	if (len < 9 || (len > 9 && path[len - 10] != '/'))
		return false;
	const char *b = path + len - 9;
	return b[0] == 'l' && b[1] == 'i' && b[2] == 'b' && b[3] == 'c' && b[4] == '.' && b[5] == 's' &&
	       b[6] == 'o' && b[7] == '.' && b[8] == '6';
}

LOAD_PATH const struct link_map *next_symbol_definer(const struct link_map *head, const void *self_dynamic, uintptr_t vdso,
					   const char *const *names, int count, const char **why)
{
	*why = "the shim is not in the loader's main list (loaded by dlmopen?)";
	const struct link_map *m = head;
	int n = 0;
	for (; m && n < OBJECTS_MAX && (const void *)m->l_ld != self_dynamic; m = m->l_next, n++)
		;
	if (!m || n == OBJECTS_MAX)
		return NULL;
	for (m = m->l_next; m && n < OBJECTS_MAX; m = m->l_next, n++) {
		if (vdso && m->l_addr == vdso)
			continue;
		if (is_c_library(m->l_name)) {
			/* Its tables must answer each name at its first need, when dlsym can no
			 * longer be asked: readable, and each name let through by its filter. */
			for (int i = 0; i < count; i++) {
				struct tables t;
				if (bloom_filter(m, gnu_hash(names[i]), &t) != NEXT_FOUND) {
					*why = "the C library's tables cannot answer for one";
					return NULL;
				}
			}
			*why = "";
			return m;
		}
		for (int i = 0; i < count; i++) {
			const ElfW(Sym) *ignored;
			if (find_symbol(m, names[i], gnu_hash(names[i]), &ignored) != NEXT_NOT_HERE) {
				/* A wrapper of the function, preloaded after the shim (or a bloom
				 * filter that cannot rule the name out): dlsym finds it exactly. */
				*why = "a library between the shim and the C library may define one";
				return NULL;
			}
		}
	}
	*why = "no C library after the shim in the loader's list";
	return NULL;
}
