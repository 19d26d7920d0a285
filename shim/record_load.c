/* Where the records are, and whether one may answer, as the load checks it
 * (shim/record.h): the machine-wide record's lstat and the boot's time, the per-user
 * cache's lstat and path, and what the decision keeps of that (on the load page). Reads no
 * file and measures nothing: the texts, their answers, marks and measurements are
 * shim/record.c's. Everything here that runs at load is on the load path
 * (calib/load_page.h): no libc call but getauxval, no constant off the load page. */
#define _GNU_SOURCE
#include "record_load.h"

#include "environment.h"
#include "load_page.h"

#include "cache.h"
#include "kernel_clock.h"
#include "raw_syscall.h"
#include "safefile.h"

#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>

/* What the load found, for the decision, on the load page (which loading writes anyway). */
static struct {
	bool system_passed;   /* the machine-wide record passed the load's check */
	bool cache_path_made; /* cache_path is the per-user cache's default path */
	uint64_t boot_wall_ns; /* the boot's wall-clock time the check took, 0 none */
	char cache_path[256];
} at_load ON_LOAD_PAGE;

/* A default cache path too long for the load page: a page of .bss, touched only then. */
static char long_cache_path[SAFEFILE_PATH_MAX];

bool record_system_passed_load(void)
{
	return at_load.system_passed;
}

uint64_t record_boot_wall_at_load(void)
{
	return at_load.boot_wall_ns;
}

/* The boot's wall-clock time at load, REALTIME less BOOTTIME, by two system calls: not
 * through the vDSO, whose first read in a process faults in its data pages (the vvar and,
 * under kvm-clock, the pvclock page): 30-60 us on a microVM guest, against about 4.5 us for
 * the two calls, and most processes a machine starts never read a clock at all
 * (doc/STARTUP.md, "What being loaded costs"). */
LOAD_PATH static uint64_t boot_wall_at_load(void)
{
	uint64_t realtime = kernel_clock_ns(CLOCK_REALTIME), boottime = kernel_clock_ns(CLOCK_BOOTTIME);
	return realtime > boottime ? realtime - boottime : 0;
}

/* The machine-wide record at load, from one lstat (newfstatat, which the loader's own fstat
 * calls keep warm: a readlinkat here, a kind of call nothing else at load makes, cost every
 * start 8-9 us more on the host measured, and a look at its directory 2-3 us): a symbolic
 * link (a regular file there is an older build's), root's, of a record's length, made
 * since this boot began (the boot's time by two system calls, a second of slack for the
 * clocks' rounding: a process cannot mark root's link, and one kept from an earlier boot
 * on a persistent path would otherwise answer no read and let no start measure, all boot
 * long). Its directory and its text are the decision's to check and read. */
LOAD_PATH static bool system_record_may_answer(const char *path)
{
	struct stat st;
	if (raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	uint64_t made = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	if (!S_ISLNK(st.st_mode) || st.st_uid != 0 || st.st_size <= 0 || st.st_size > CACHE_MAX_SIZE ||
	    st.st_mtim.tv_sec <= 0)
		return false;
	at_load.boot_wall_ns = boot_wall_at_load();
	return made + 1000000000ull >= at_load.boot_wall_ns;
}

/* What a per-user cache file must be, checked at load from one lstat, with no file read: a
 * regular file (not a symlink), the owner's, readable by it and writable by nobody else,
 * of a size a record file can have, and not marked for a measurement (times of 1970:
 * record_mark_stale). A file that fails here makes the process measure at load, before
 * its threads exist; the read then never measures. */
enum cache_check { CACHE_FAILS, CACHE_MARKED, CACHE_MAY_ANSWER };
LOAD_PATH static enum cache_check cache_may_answer(const char *path, uid_t owner)
{
	struct stat st;
	if (raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW) != 0)
		return CACHE_FAILS;
	if (!S_ISREG(st.st_mode) || st.st_uid != owner || !(st.st_mode & S_IRUSR) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size <= 0 || st.st_size > CACHE_MAX_SIZE)
		return CACHE_FAILS;
	return st.st_mtim.tv_sec > 0 ? CACHE_MAY_ANSWER : CACHE_MARKED;
}

/* The suffix of this build's cache beside another build's (cache_format_sibling). */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
static char format_suffix[] ON_LOAD_PAGE = ".v" STRINGIFY(CACHE_FORMAT_VERSION);

/* On the load path: no libc call but getauxval (raw_syscall.h), no string constant off the
 * load page. */
LOAD_PATH bool record_may_answer(const char *system, const char *option, const char *xdg_runtime_dir)
{
	if (system[0] == '/' && system_record_may_answer(system)) {
		at_load.system_passed = true;
		return true;
	}
	/* Small: a page-sized buffer here would reach a fresh page of the stack, a fault of its
	 * own. A default path longer than this (a very long XDG_RUNTIME_DIR) is made in static
	 * storage instead, a page touched only then. */
	char path[256];
	static char long_path[SAFEFILE_PATH_MAX];
	if (option[0] == 'o' && option[1] == 'f' && option[2] == 'f' && option[3] == '\0')
		return false;
	/* The uid the process was started with, from the auxiliary vector (the page of
	 * getauxval, which the load path calls anyway). */
	uid_t euid = (uid_t)getauxval(AT_EUID);
	if (!option[0]) {
		option = path;
		if (cache_default_path_for(xdg_runtime_dir, euid, path, sizeof path) != 0) {
			if (cache_default_path_for(xdg_runtime_dir, euid, long_path, sizeof long_path) != 0)
				return false; /* no cache can be kept: the decision says so */
			option = long_path;
		}
	}
	/* Kept for the decision, which then makes no system call to find it again. */
	if (option == path) {
		for (size_t i = 0; i < sizeof path; i++)
			if ((at_load.cache_path[i] = path[i]) == '\0')
				break;
		at_load.cache_path_made = true;
	}
	enum cache_check cache = cache_may_answer(option, euid);
	if (cache != CACHE_MARKED)
		return cache == CACHE_MAY_ANSWER;
	/* Marked: a decision of this build found it unable to answer, and marked this build's
	 * file beside it too (record_mark_stale), or it is another build's file this build
	 * marked, its own records beside it (record_keep). The file beside answers only in
	 * that second case: one lstat more, only for a marked cache. */
	char sibling[sizeof path + sizeof format_suffix];
	size_t n = 0;
	for (; option[n] && n < sizeof path; n++)
		sibling[n] = option[n];
	if (option[n])
		return false;
	for (size_t i = 0; i < sizeof format_suffix; i++)
		sibling[n + i] = format_suffix[i];
	return cache_may_answer(sibling, euid) == CACHE_MAY_ANSWER;
}

static char boot_id_path[] ON_LOAD_PAGE = "/proc/sys/kernel/random/boot_id";

LOAD_PATH bool record_boot_known(void)
{
	struct stat st;
	return raw_stat(boot_id_path, &st) == 0;
}

/* ---- at the decision: the per-user cache's path ---- */

/* The effective uid the per-user cache belongs to: the one the process started with, from
 * the auxiliary vector (no system call). */
uid_t record_cache_owner(void)
{
	return (uid_t)getauxval(AT_EUID);
}

const char *record_cache_path(const struct option_values *o)
{
	const char *option = o->text[OPT_CACHE];
	if (strcmp(option, "off") == 0)
		return NULL;
	if (option[0])
		return option;
	if (at_load.cache_path_made)
		return at_load.cache_path;
	/* Not made at load (the machine-wide record answered there, or the default path is
	 * long): made now onto the load page where it fits (a page of .bss, first touched
	 * here, cost every decision from the machine-wide record a fault: about 12 us on a
	 * microVM guest). Never in secure execution, which passes through before any record is
	 * looked at. */
	extern char **environ;
	const char *runtime_dir = environment_value(environ, "XDG_RUNTIME_DIR");
	if (cache_default_path_for(runtime_dir, record_cache_owner(), at_load.cache_path, sizeof at_load.cache_path) == 0) {
		at_load.cache_path_made = true;
		return at_load.cache_path;
	}
	if (cache_default_path_for(runtime_dir, record_cache_owner(), long_cache_path, sizeof long_cache_path) != 0)
		return NULL;
	return long_cache_path;
}
