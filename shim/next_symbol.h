/* The next definition of a function after ours, as dlsym(RTLD_NEXT, name) finds it, read
 * straight from the dynamic loader's tables: its list of loaded objects (public fields of
 * struct link_map) and each object's GNU hash table, symbol table and version table.
 *
 * Why not dlsym: the shim needs the real clock_gettime at load, in every process of a
 * machine where it is preloaded, and dlsym there costs two fresh pages (its error
 * catching in libc, the name's page in ours) plus the loader's lock; on a host where
 * every fresh page traps, that was a third of the shim's start-up. This reads only what
 * the loader itself read while relocating the program. It answers only where it is sure;
 * anything unusual (no GNU hash table, a bloom filter that cannot rule the name out, a
 * symbol of an odd kind, several versions) is NEXT_UNSURE, and the caller asks dlsym.
 *
 * Runs where the list cannot change under it: in a constructor at start-up (one thread)
 * or inside dlopen (which holds the loader's lock). */
#ifndef SHIM_NEXT_SYMBOL_H
#define SHIM_NEXT_SYMBOL_H

#include <link.h>
#include <stdint.h>

enum next_symbol_answer {
	NEXT_FOUND,      /* *address is what dlsym(RTLD_NEXT, name) returns */
	NEXT_NOT_HERE,   /* this object does not define it (one object's answer only) */
	NEXT_UNSURE,     /* ask dlsym */
};

/* The GNU hash of a symbol name (the loader's: h = h * 33 + c from 5381). */
uint32_t gnu_hash(const char *name);

/* One object's definition of name (a function, the default version), by its GNU hash
 * table. An indirect function (IFUNC) is resolved as the loader does, on x86-64; elsewhere
 * it is NEXT_UNSURE. */
enum next_symbol_answer next_symbol_in_object(const struct link_map *object, const char *name, uint32_t hash,
					      void **address);

/* The object that holds the next definition of every one of names (count of them) after
 * the object whose dynamic section is self_dynamic, along the list from head, skipping
 * the vDSO (the object loaded at vdso, getauxval(AT_SYSINFO_EHDR), or 0; the loader
 * never binds to it). Found only when that object is the C library (its file name libc.so.6) and no
 * object between defines any of the names: a library preloaded after the shim that wraps
 * one of them (it comes first) gets dlsym's exact answer instead. Reads only the list and
 * the bloom filters of the objects between, which the loader read for every symbol it
 * bound: no page of the C library's symbol tables. NULL when unsure, with *why. */
const struct link_map *next_symbol_definer(const struct link_map *head, const void *self_dynamic, uintptr_t vdso,
					   const char *const *names, int count, const char **why);

#endif
