/* shim/next_symbol.c: the next definition of a function, read from the loader's tables.
 *
 * Two kinds of test. Synthetic objects (a GNU hash table, symbols, versions built here)
 * drive each rule: the bloom filter, the chain, version indexes, hidden versions, kinds
 * of symbol, the walk along the list. And this very process's list, where the answers
 * must equal dlsym's for many of the C library's functions, plain, versioned and
 * indirect (IFUNC) alike: the test program stands where the shim does, just before the
 * C library. */
#define _GNU_SOURCE
#include "next_symbol.h"
#include "unit.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

/* ---- a synthetic object ---- */

#define MAX_SYMS 8
struct fake {
	struct link_map map;
	ElfW(Dyn) dynamic[8];
	uint32_t table[4 + 2 * 1 + 1 + 1 + MAX_SYMS]; /* header, bloom (one 64-bit word), 1 bucket, chain */
	ElfW(Sym) symbols[MAX_SYMS + 1];
	ElfW(Half) versions[MAX_SYMS + 1];
	char strings[256];
	size_t strings_used;
	int count;
};

struct fake_symbol {
	const char *name;
	uintptr_t value;
	unsigned type;     /* STT_FUNC unless set */
	ElfW(Half) version; /* 0: none (index 0), else the version index with its hidden bit */
	unsigned shndx;     /* 1 unless SHN_UNDEF is wanted: pass 0xffff to mean SHN_UNDEF */
};

/* One bucket, one bloom word: every name hashes into the same chain, in the order given. */
static void fake_build(struct fake *f, const char *file_name, const struct fake_symbol *syms, int n, bool with_versions)
{
	memset(f, 0, sizeof *f);
	f->strings_used = 1; /* index 0: the empty name */
	uint32_t *t = f->table;
	t[0] = 1; /* buckets */
	t[1] = 1; /* first hashed symbol */
	t[2] = 1; /* bloom words (64-bit) */
	t[3] = 6; /* bloom shift */
	uint64_t bloom = 0;
	uint32_t *bucket = t + 4 + 2;
	uint32_t *chain = bucket + 1;
	bucket[0] = n ? 1 : 0;
	for (int i = 0; i < n; i++) {
		uint32_t h = gnu_hash(syms[i].name);
		bloom |= 1ull << (h % 64) | 1ull << ((h >> 6) % 64);
		chain[i] = (h & ~1u) | (i == n - 1 ? 1u : 0u);
		size_t len = strlen(syms[i].name) + 1;
		memcpy(f->strings + f->strings_used, syms[i].name, len);
		ElfW(Sym) *s = &f->symbols[i + 1];
		s->st_name = (ElfW(Word))f->strings_used;
		f->strings_used += len;
		s->st_value = syms[i].value;
		s->st_shndx = syms[i].shndx == 0xffff ? SHN_UNDEF : 1;
		s->st_info = ELF64_ST_INFO(STB_GLOBAL, syms[i].type ? syms[i].type : STT_FUNC);
		f->versions[i + 1] = syms[i].version;
	}
	memcpy(t + 4, &bloom, sizeof bloom);
	int d = 0;
	f->dynamic[d++] = (ElfW(Dyn)){.d_tag = DT_GNU_HASH, .d_un.d_ptr = (ElfW(Addr))t};
	f->dynamic[d++] = (ElfW(Dyn)){.d_tag = DT_SYMTAB, .d_un.d_ptr = (ElfW(Addr))f->symbols};
	f->dynamic[d++] = (ElfW(Dyn)){.d_tag = DT_STRTAB, .d_un.d_ptr = (ElfW(Addr))f->strings};
	f->dynamic[d++] = (ElfW(Dyn)){.d_tag = DT_STRSZ, .d_un.d_val = sizeof f->strings};
	if (with_versions)
		f->dynamic[d++] = (ElfW(Dyn)){.d_tag = DT_VERSYM, .d_un.d_ptr = (ElfW(Addr))f->versions};
	f->dynamic[d] = (ElfW(Dyn)){.d_tag = DT_NULL};
	f->map.l_addr = 0;
	f->map.l_ld = f->dynamic;
	f->map.l_name = (char *)file_name;
	f->count = n;
}

static void chain_up(struct fake **objects, int n)
{
	for (int i = 0; i < n; i++) {
		objects[i]->map.l_prev = i ? &objects[i - 1]->map : NULL;
		objects[i]->map.l_next = i + 1 < n ? &objects[i + 1]->map : NULL;
	}
}

static struct fake self, between, libc, vdso;

static enum next_symbol_answer look(struct fake *f, const char *name, void **address)
{
	*address = NULL;
	return next_symbol_in_object(&f->map, name, gnu_hash(name), address);
}

static void the_hash_is_the_loaders(void)
{
	CHECK_EQ_U64(gnu_hash(""), 5381);
	/* h = h * 33 + c, as the ELF GNU hash section defines it; these two are often quoted. */
	CHECK_EQ_U64(gnu_hash("printf"), 0x156b2bb8u);
	CHECK_EQ_U64(gnu_hash("exit"), 0x7c967e3fu);
}

static void one_object_finds_and_rules_out(void)
{
	struct fake_symbol syms[] = {{"clock_gettime", 0x1000, 0, 0, 0}, {"gettimeofday", 0x2000, 0, 0, 0}};
	fake_build(&libc, "/lib/libc.so.6", syms, 2, false);
	void *a;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_FOUND && a == (void *)0x1000);
	CHECK(look(&libc, "gettimeofday", &a) == NEXT_FOUND && a == (void *)0x2000);
	/* A name the bloom filter rules out, and one it lets through but the chain lacks. */
	enum next_symbol_answer r = look(&libc, "timespec_get", &a);
	CHECK(r == NEXT_NOT_HERE && a == NULL);
	CHECK(look(&libc, "clock_getres", &a) == NEXT_NOT_HERE);
	/* An empty table. */
	fake_build(&libc, "/lib/libc.so.6", syms, 0, false);
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_NOT_HERE);
}

static void versions_follow_dlsym(void)
{
	void *a;
	/* An unversioned one (index 1, global) is taken at once, even after a versioned one. */
	struct fake_symbol unversioned[] = {{"f", 0x10, 0, 3, 0}, {"f", 0x20, 0, 1, 0}};
	fake_build(&libc, "libc.so.6", unversioned, 2, true);
	CHECK(look(&libc, "f", &a) == NEXT_FOUND && a == (void *)0x20);
	/* The oldest version hidden (name@GLIBC_2.2.5) and the default (name@@GLIBC_2.14), as
	 * memcpy and clock_gettime are: the default. */
	struct fake_symbol old_and_default[] = {{"f", 0x10, 0, 0x8000 | 2, 0}, {"f", 0x20, 0, 5, 0}};
	fake_build(&libc, "libc.so.6", old_and_default, 2, true);
	CHECK(look(&libc, "f", &a) == NEXT_FOUND && a == (void *)0x20);
	/* A hidden newer version and one default: the default. */
	struct fake_symbol hidden_and_default[] = {{"f", 0x10, 0, 0x8000 | 3, 0}, {"f", 0x20, 0, 4, 0}};
	fake_build(&libc, "libc.so.6", hidden_and_default, 2, true);
	CHECK(look(&libc, "f", &a) == NEXT_FOUND && a == (void *)0x20);
	/* Two non-hidden newer versions: the loader takes neither; we are unsure. */
	struct fake_symbol two_newer[] = {{"f", 0x10, 0, 3, 0}, {"f", 0x20, 0, 4, 0}};
	fake_build(&libc, "libc.so.6", two_newer, 2, true);
	CHECK(look(&libc, "f", &a) == NEXT_UNSURE);
	/* Only a hidden one: not a definition dlsym returns. */
	struct fake_symbol only_hidden[] = {{"f", 0x10, 0, 0x8000 | 3, 0}};
	fake_build(&libc, "libc.so.6", only_hidden, 1, true);
	CHECK(look(&libc, "f", &a) == NEXT_NOT_HERE);
}

static void odd_symbols_are_unsure_or_skipped(void)
{
	void *a;
	/* An object (data), a TLS symbol: not functions we would call. */
	struct fake_symbol data[] = {{"f", 0x10, STT_OBJECT, 0, 0}};
	fake_build(&libc, "libc.so.6", data, 1, false);
	CHECK(look(&libc, "f", &a) == NEXT_UNSURE);
	/* Undefined with a value (an executable's canonical PLT entry): dlsym would match it. */
	struct fake_symbol plt[] = {{"f", 0x10, 0, 0, 0xffff}};
	fake_build(&libc, "libc.so.6", plt, 1, false);
	CHECK(look(&libc, "f", &a) == NEXT_UNSURE);
	/* Undefined without a value: no definition at all. */
	struct fake_symbol undefined[] = {{"f", 0, 0, 0, 0xffff}};
	fake_build(&libc, "libc.so.6", undefined, 1, false);
	CHECK(look(&libc, "f", &a) == NEXT_NOT_HERE);
	/* No GNU hash table. */
	fake_build(&libc, "libc.so.6", data, 1, false);
	libc.dynamic[0].d_tag = DT_HASH;
	CHECK(look(&libc, "f", &a) == NEXT_UNSURE);
}

static const char *names[] = {"clock_gettime", "gettimeofday", "timespec_get"};

static void the_walk_stops_at_the_c_library(void)
{
	struct fake_symbol ours[] = {{"clock_gettime", 0x1, 0, 0, 0}};
	struct fake_symbol theirs[] = {{"clock_gettime", 0x2, 0, 0, 0}};
	struct fake_symbol all_three[] = {
		{"clock_gettime", 0x2, 0, 0, 0}, {"gettimeofday", 0x4, 0, 0, 0}, {"timespec_get", 0x6, 0, 0, 0}};
	struct fake_symbol unrelated[] = {{"tgetent", 0x3, 0, 0, 0}};
	fake_build(&self, "/opt/libtscshim.so", ours, 1, false);
	fake_build(&libc, "/lib/x86_64-linux-gnu/libc.so.6", all_three, 3, false);
	const char *why;

	/* Right after us. */
	struct fake *plain[] = {&self, &libc};
	chain_up(plain, 2);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == &libc.map && why[0] == '\0');

	/* A library between that defines none of the names (bash's libtinfo). */
	fake_build(&between, "/lib/libtinfo.so.6", unrelated, 1, false);
	struct fake *with_between[] = {&self, &between, &libc};
	chain_up(with_between, 3);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == &libc.map);

	/* A library between without a GNU hash table: it cannot be ruled out. */
	between.dynamic[0].d_tag = DT_HASH;
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == NULL);

	/* A wrapper preloaded after us: dlsym must answer. */
	fake_build(&between, "/opt/librefclock.so", theirs, 1, false);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == NULL && why[0] != '\0');

	/* A wrapper before us changes nothing: the next definition is after us. */
	struct fake *wrapper_first[] = {&between, &self, &libc};
	chain_up(wrapper_first, 3);
	CHECK(next_symbol_definer(&between.map, self.dynamic, 0, names, 3, &why) == &libc.map);

	/* The vDSO defines clock_gettime, but the loader never binds to it: skipped. */
	fake_build(&vdso, "linux-vdso.so.1", theirs, 1, false);
	vdso.map.l_addr = 4096; /* where the kernel put it (getauxval(AT_SYSINFO_EHDR)) */
	struct fake *with_vdso[] = {&self, &vdso, &libc};
	chain_up(with_vdso, 3);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 4096, names, 3, &why) == &libc.map);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == NULL);

	/* No C library after us (loaded by dlopen, after it), or we are not in the list. */
	struct fake *after_libc[] = {&libc, &self};
	chain_up(after_libc, 2);
	CHECK(next_symbol_definer(&libc.map, self.dynamic, 0, names, 3, &why) == NULL);
	CHECK(next_symbol_definer(&libc.map, between.dynamic, 0, names, 3, &why) == NULL);

	/* A C library whose tables cannot answer for one of the names (found at its first
	 * need, when dlsym may no longer be asked): dlsym now. */
	fake_build(&libc, "/lib/x86_64-linux-gnu/libc.so.6", theirs, 1, false);
	chain_up(plain, 2);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == NULL);

	/* Names that only look like the C library's. */
	fake_build(&libc, "/lib/notlibc.so.6", all_three, 3, false);
	CHECK(next_symbol_definer(&self.map, self.dynamic, 0, names, 3, &why) == NULL);
}

/* The same object, its dynamic section's pointers as glibc leaves them for a library
 * loaded away from its link address: relocated (l_addr added), whether l_addr is small or
 * wraps around (linked high, loaded lower), or not relocated (a read-only section). */
static void addresses_relocated_or_not(void)
{
	struct fake_symbol syms[] = {{"clock_gettime", 0x40, 0, 0, 0}};
	void *a;
	/* Relocated, loaded 1 TiB above its link base: the entries are run-time addresses. */
	fake_build(&libc, "libc.so.6", syms, 1, false);
	libc.map.l_addr = (ElfW(Addr))1 << 40;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_FOUND && a == (void *)(libc.map.l_addr + 0x40));
	/* Loaded only 1 MiB from its link base: both readings are near; unsure, so dlsym. */
	libc.map.l_addr = 0x100000;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_UNSURE);
	/* Relocated, linked 4 GiB above where it was loaded: l_addr wraps around. */
	libc.map.l_addr = (ElfW(Addr))0 - ((ElfW(Addr))1 << 32);
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_FOUND && a == (void *)(libc.map.l_addr + 0x40));
	/* Not relocated: each entry is an offset from the load address. */
	fake_build(&libc, "libc.so.6", syms, 1, false);
	ElfW(Addr) base = (ElfW(Addr))(uintptr_t)&libc - 0x1000;
	for (int i = 0; libc.dynamic[i].d_tag != DT_NULL; i++)
		if (libc.dynamic[i].d_tag != DT_STRSZ)
			libc.dynamic[i].d_un.d_ptr -= base;
	libc.map.l_addr = base;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_FOUND && a == (void *)(base + 0x40));
	/* Neither reading near the dynamic section: unsure, never a wild read. */
	fake_build(&libc, "libc.so.6", syms, 1, false);
	libc.dynamic[0].d_un.d_ptr = 0x1000;
	libc.map.l_addr = 0x2000;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_UNSURE);
}

/* A bloom filter that lets every name through: the chain alone decides. */
static void a_full_filter_leaves_it_to_the_chain(void)
{
	struct fake_symbol syms[] = {{"clock_gettime", 0x10, 0, 0, 0}};
	fake_build(&libc, "libc.so.6", syms, 1, false);
	uint64_t every = ~(uint64_t)0;
	memcpy(libc.table + 4, &every, sizeof every);
	void *a;
	CHECK(look(&libc, "clock_gettime", &a) == NEXT_FOUND && a == (void *)0x10);
	CHECK(look(&libc, "clock_getres", &a) == NEXT_NOT_HERE);
	CHECK(look(&libc, "timespec_get", &a) == NEXT_NOT_HERE);
}

/* ---- this process ---- */

#ifndef TSCSHIM_LIBC_MUSL
extern ElfW(Dyn) _DYNAMIC[];

static void this_process_agrees_with_dlsym(void)
{
	const char *why = "unset";
	const struct link_map *c = next_symbol_definer(_r_debug.r_map, _DYNAMIC, getauxval(AT_SYSINFO_EHDR), names,
						       3, &why);
	/* Unsure only where a wrapper really comes first: a sanitizer's runtime, linked
	 * before the C library, intercepts clock_gettime. */
	Dl_info info = {0};
	void *next = dlsym(RTLD_NEXT, "clock_gettime");
	CHECK(next && dladdr(next, &info) && info.dli_fname);
	const char *file = info.dli_fname ? info.dli_fname : "";
	size_t len = strlen(file);
	bool next_is_libc = len >= 9 && strcmp(file + len - 9, "libc.so.6") == 0;
	if (!c) {
		printf("# unsure (%s): %s defines clock_gettime first\n", why, file);
		CHECK(!next_is_libc);
		return;
	}
	CHECK(next_is_libc);
	/* Plain, versioned (memcpy, realpath, pthread_cond_wait have older versions beside the
	 * default), indirect (gettimeofday, time, strlen are IFUNCs on x86-64). */
	static const char *const functions[] = {
		"clock_gettime", "gettimeofday", "timespec_get", "time",    "clock_getres", "nanosleep",
		"memcpy",        "strlen",       "realpath",     "malloc",  "pthread_cond_wait", "qsort",
		"sched_getaffinity", "fopen",   "sigaction",    "clock_nanosleep",
	};
	int found = 0;
	for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
		void *mine = NULL;
		enum next_symbol_answer a = next_symbol_in_object(c, functions[i], gnu_hash(functions[i]), &mine);
		void *theirs = dlsym(RTLD_NEXT, functions[i]);
		if (a == NEXT_FOUND) {
			found++;
			if (mine != theirs) {
				printf("# %s: %p from the table, %p from dlsym\n", functions[i], mine, theirs);
				CHECK(mine == theirs);
			}
		} else {
			printf("# %s: unsure (dlsym says %p)\n", functions[i], theirs);
		}
	}
	/* The three the shim needs are always answered. */
	for (int i = 0; i < 3; i++) {
		void *mine = NULL;
		CHECK(next_symbol_in_object(c, names[i], gnu_hash(names[i]), &mine) == NEXT_FOUND);
	}
	CHECK(found >= 14);
	void *none;
	CHECK(next_symbol_in_object(c, "tscshim_no_such_function", gnu_hash("tscshim_no_such_function"), &none) ==
	      NEXT_NOT_HERE);
}
#endif

int main(void)
{
	RUN(the_hash_is_the_loaders);
	RUN(one_object_finds_and_rules_out);
	RUN(versions_follow_dlsym);
	RUN(odd_symbols_are_unsure_or_skipped);
	RUN(the_walk_stops_at_the_c_library);
	RUN(addresses_relocated_or_not);
	RUN(a_full_filter_leaves_it_to_the_chain);
#ifndef TSCSHIM_LIBC_MUSL /* musl keeps no _r_debug list: the musl build asks dlsym */
	RUN(this_process_agrees_with_dlsym);
#endif
	return unit_finish();
}
