/* The processes `tscshim ps` looks into, through /proc: each one's files are opened from
 * one directory descriptor of /proc/PID, so that a process that exits and whose pid is
 * taken again meanwhile is never read in place of the one listed (the descriptor's files
 * are gone with it), and its memory is read through /proc/PID/mem, which the kernel
 * allows as it would a ptrace (PTRACE_MODE_ATTACH): the process is not stopped,
 * signalled or traced. */
#define _GNU_SOURCE
#include "ps.h"

#include "text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What looking into one process found. */
enum look {
	LOOK_LISTED,     /* the shim is loaded: the process goes in the list */
	LOOK_NOT_LOADED, /* no shim (or a kernel thread, a zombie) */
	LOOK_GONE,       /* no such process (any more) */
	LOOK_EXITED,     /* it exited while being read */
	LOOK_DENIED,     /* its maps may not be read: whether it has the shim is not known */
	LOOK_NOT_SHIM,   /* a file of the shim's name is loaded, but it is no ELF object of ours */
	LOOK_THREAD,     /* a thread's id, not a process's */
};

struct scan_context {
	unsigned my_uid;
	int ptrace_scope; /* Yama's, 0 where the kernel has none */
};

/* A file of /proc/PID read whole into buf (NUL-terminated): its length, or -1 (errno). */
static ssize_t read_small(int dir, const char *name, char *buf, size_t size)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, size - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (len += (size_t)r) >= size - 1)
			break;
	}
	int error = errno;
	close(fd);
	buf[len] = '\0';
	errno = error;
	return (ssize_t)len;
}

/* Gone, or a zombie (its memory is gone): the process exited. */
static bool process_gone(int dir)
{
	char stat[512];
	if (read_small(dir, "stat", stat, sizeof stat) <= 0)
		return true;
	const char *end = strrchr(stat, ')');
	return !end || end[1] != ' ' || end[2] == 'Z' || end[2] == 'X';
}

/* After a call on the process's memory failed with err: whether the process has exited
 * meanwhile. ESRCH (no memory any more, or memory_read's end of file) says it is exiting:
 * the kernel releases the memory before /proc shows the process a zombie, so its stat may
 * still say running. */
static bool exited_meanwhile(int dir, int err)
{
	return err == ESRCH || process_gone(dir);
}

/* The user's name, from a small cache of those seen (a scan meets few users). */
static void user_name(unsigned uid, char *buf, size_t size)
{
	static struct {
		unsigned uid;
		char name[33];
	} seen[32];
	static size_t count;
	for (size_t i = 0; i < count; i++)
		if (seen[i].uid == uid) {
			snprintf(buf, size, "%s", seen[i].name);
			return;
		}
	struct passwd pw, *found = NULL;
	char text[1024];
	if (getpwuid_r(uid, &pw, text, sizeof text, &found) == 0 && found)
		snprintf(buf, size, "%s", found->pw_name);
	else
		snprintf(buf, size, "%u", uid);
	if (count < sizeof seen / sizeof *seen) {
		seen[count].uid = uid;
		snprintf(seen[count].name, sizeof seen[count].name, "%s", buf);
		count++;
	}
}

/* The shim in a process's maps: the mapping of its first page (offset 0, by its name),
 * then the regions its image may take, in address order: the mappings of that same file
 * and anonymous ones (its .bss), up to the first mapping of anything else. Only there is
 * its memory ever read (process_memory). */
enum { MAX_REGIONS = 64 };
struct region {
	uint64_t start, end;
	bool shim_file;  /* a mapping of the shim's file; else anonymous */
	bool writable;
};
struct shim_mappings {
	bool found, ended;
	struct ps_mapping first;
	char path[256];
	struct region region[MAX_REGIONS];
	size_t regions;
	bool writable; /* a writable mapping of the file: the library was loaded, not only mapped */
};

/* One line of the maps into s. */
static void take_mapping(char *line, struct shim_mappings *s)
{
	struct ps_mapping m;
	if (s->ended || ps_maps_parse(line, &m) != 0)
		return;
	if (!s->found) {
		if (!m.path[0] || m.offset != 0 || !m.readable || !ps_is_shim_path(m.path))
			return;
		s->found = true;
		s->first = m;
		snprintf(s->path, sizeof s->path, "%s", m.path);
		s->first.path = s->path;
	}
	bool same = m.path[0] && m.inode == s->first.inode && m.dev_major == s->first.dev_major &&
		    m.dev_minor == s->first.dev_minor;
	bool anonymous = !m.path[0] && m.inode == 0;
	if ((!same && !anonymous) || s->regions == MAX_REGIONS) {
		s->ended = true;
		return;
	}
	s->region[s->regions++] = (struct region){m.start, m.end, same, m.writable};
	s->writable = s->writable || (same && m.writable);
}

/* /proc/PID/maps read through, line by line, however long it is (a process may map
 * hundreds of megabytes of it): 0 with *out filled, or -1 (errno). */
static int scan_maps(int dir, struct shim_mappings *out)
{
	memset(out, 0, sizeof *out);
	int fd = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static char buf[65536];
	size_t have = 0;
	bool overlong = false; /* within a line longer than buf: no mapping this reader uses */
	int rc = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == 0) {
			buf[have] = '\0';
			if (have && !overlong)
				take_mapping(buf, out);
			break;
		}
		have += (size_t)r;
		char *line = buf, *newline;
		while ((newline = memchr(line, '\n', (size_t)(buf + have - line)))) {
			*newline = '\0';
			if (!overlong)
				take_mapping(line, out);
			overlong = false;
			line = newline + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) {
			overlong = true;
			have = 0;
		}
	}
	int error = errno;
	close(fd);
	errno = error;
	return rc;
}

static const struct region *region_of(const struct shim_mappings *s, uint64_t address)
{
	for (size_t i = 0; i < s->regions; i++)
		if (address >= s->region[i].start && address < s->region[i].end)
			return &s->region[i];
	return NULL;
}

static bool in_writable_mapping(const struct shim_mappings *s, uint64_t address)
{
	const struct region *r = region_of(s, address);
	return r && r->shim_file && r->writable && sizeof(struct state_block) <= r->end - address;
}

/* A process's memory as ps reads it: only what the kernel answers from memory. A page of
 * a file that is not in memory would be read from its file system, which the process's
 * owner may hold up for good (a FUSE server that stops answering: the read waits in state
 * D, and no signal ends it); so each page is looked up in /proc/PID/pagemap first (which
 * reads nothing), and read only where it is present or swapped out (to swap, which no
 * user holds). A page of an anonymous mapping that is not there reads as zeros, without a
 * read; one of a file fails with EAGAIN. Nothing outside the shim's regions is read. */
struct process_memory {
	int mem, pagemap;
	const struct shim_mappings *shim;
};

enum { PAGE = 4096 };
#define PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define PAGEMAP_SWAPPED (UINT64_C(1) << 62)

/* pread whole: 0, or -1 (errno; ESRCH where the end came first: the memory is gone). */
static int read_whole(int fd, void *buf, size_t len, uint64_t offset)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = ESRCH; /* its memory is gone: the process exited */
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

static int memory_read(void *ctx, uint64_t address, void *buf, size_t len)
{
	const struct process_memory *pm = ctx;
	if (address > (uint64_t)INT64_MAX - len) {
		errno = EIO;
		return -1;
	}
	for (size_t done = 0; done < len;) {
		uint64_t at = address + done;
		size_t chunk = PAGE - (size_t)(at % PAGE);
		chunk = chunk < len - done ? chunk : len - done;
		const struct region *r = region_of(pm->shim, at);
		if (!r) {
			errno = EIO;
			return -1;
		}
		uint64_t entry;
		if (read_whole(pm->pagemap, &entry, sizeof entry, at / PAGE * sizeof entry) != 0)
			return -1;
		if (entry & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)) {
			if (read_whole(pm->mem, (char *)buf + done, chunk, at) != 0)
				return -1;
		} else if (!r->shim_file) {
			memset((char *)buf + done, 0, chunk);
		} else {
			errno = EAGAIN;
			return -1;
		}
		done += chunk;
	}
	return 0;
}

/* The image where its headers are not in memory: a fork child's, whose file-backed pages
 * the kernel maps again only as the child touches them, or a library's whose first page
 * was reclaimed. The block is then found in the library's data that is (a copy of the
 * file written at load, on the load page: present, or swapped out, never read from the
 * file), by its magic; the image's span and data are the regions' (its load bias the
 * first page's: a shared object's first segment starts at address 0). No build-id. True
 * with *out where a block is found. */
#define PAGEMAP_FILE (UINT64_C(1) << 61)
static bool image_from_data(const struct process_memory *pm, const struct shim_mappings *shim, struct ps_image *out)
{
	memset(out, 0, sizeof *out);
	out->bias = out->low = shim->region[0].start;
	out->high = shim->region[shim->regions - 1].end;
	/* A page and the one after it: a block may straddle the two (where the load page's
	 * layout puts it near a page's end). */
	static unsigned char page[2 * PAGE];
	for (size_t i = 0; i < shim->regions; i++) {
		const struct region *r = &shim->region[i];
		if (!r->shim_file || !r->writable)
			continue;
		for (uint64_t at = r->start; at < r->end; at += PAGE) {
			uint64_t entry[2] = {0, 0};
			if (read_whole(pm->pagemap, &entry[0], sizeof entry[0], at / PAGE * sizeof entry[0]) != 0)
				return false;
			/* A private copy (not the file's page), in memory or swapped out. */
			bool readable[2];
			readable[0] = (entry[0] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)) && !(entry[0] & PAGEMAP_FILE);
			if (!readable[0] || read_whole(pm->mem, page, PAGE, at) != 0)
				continue;
			readable[1] = at + PAGE < r->end &&
				      read_whole(pm->pagemap, &entry[1], sizeof entry[1], (at / PAGE + 1) * sizeof entry[1]) == 0 &&
				      (entry[1] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)) && !(entry[1] & PAGEMAP_FILE) &&
				      read_whole(pm->mem, page + PAGE, PAGE, at + PAGE) == 0;
			size_t span = readable[1] ? 2 * PAGE : PAGE;
			for (size_t off = 0; off < PAGE && off + sizeof(struct state_block) <= span; off += 8)
				if (memcmp(page + off, STATE_BLOCK_MAGIC, 8) == 0) {
					out->block = at + off;
					out->data_low = r->start;
					out->data_high = r->end;
					return true;
				}
		}
	}
	return false;
}

/* What a read that was refused because its page is not in memory makes of the process. */
static enum look skipped(struct ps_process *p, const char *what)
{
	snprintf(p->note, sizeof p->note, "%s not in memory: reading it could wait on its file system", what);
	p->state = PS_SKIPPED;
	return LOOK_LISTED;
}

/* The shim's image and block in the process, through its memory. */
static enum look read_state(int dir, struct process_memory *pm, const struct shim_mappings *shim, struct ps_process *p)
{
	/* Mapped, not loaded (a file opened by mmap): no block of a running shim there. Said
	 * before anything of the file is read. */
	if (!shim->writable)
		return LOOK_NOT_LOADED;
	struct ps_memory m = {memory_read, pm};
	struct ps_image image;
	if (ps_image_read(&m, shim->first.start, &image) != 0) {
		int err = errno;
		if (exited_meanwhile(dir, err))
			return LOOK_EXITED;
		if (err == 0)
			return LOOK_NOT_SHIM;
		if (err == EAGAIN && !image_from_data(pm, shim, &image))
			return skipped(p, "its library's headers are");
		if (err != EAGAIN) {
			snprintf(p->note, sizeof p->note, "its image could not be read");
			p->state = PS_OTHER_VERSION;
			return LOOK_LISTED;
		}
	}
	memcpy(p->build_id, image.build_id, sizeof p->build_id);
	if (image.block && !in_writable_mapping(shim, image.block)) {
		snprintf(p->note, sizeof p->note, "state block outside the library's data");
		p->state = PS_OTHER_VERSION;
		return LOOK_LISTED;
	}
	enum ps_block_result r = ps_block_read(&m, &image, p);
	int err = errno;
	if (r == PS_BLOCK_FAILED && exited_meanwhile(dir, err))
		return LOOK_EXITED;
	if (r == PS_BLOCK_FAILED && err == EAGAIN) {
		memset(p->build_id, 0, sizeof p->build_id);
		return skipped(p, "its state is");
	}
	if (r == PS_BLOCK_FAILED) {
		snprintf(p->note, sizeof p->note, "its state block could not be read");
		p->state = PS_OTHER_VERSION;
	}
	return LOOK_LISTED;
}

/* first and then second into buf, cut at a character's boundary to fit. */
static void copy_cut(char *buf, size_t size, const char *first, const char *second)
{
	size_t a = strnlen(first, size - 1), b = strnlen(second, size - 1 - a);
	memcpy(buf, first, a);
	memcpy(buf + a, second, b);
	buf[a + b] = '\0';
	ps_utf8_cut(buf, size - 1);
}

/* The thread group (the process) of the task pid, from its status text: -1 where it does
 * not say. */
static long status_tgid(const char *status)
{
	const char *line = strstr(status, "\nTgid:");
	if (!line)
		return -1;
	char *end;
	long tgid = strtol(line + 6, &end, 10);
	return end == line + 6 ? -1 : tgid;
}

static enum look look_into(int pid, const struct scan_context *ctx, struct ps_process *p, enum ps_denied *denied,
			   long *tgid)
{
	char path[32];
	snprintf(path, sizeof path, "/proc/%d", pid);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return LOOK_GONE;
	enum look result = LOOK_NOT_LOADED;
	char status[4096];
	unsigned uid = 0;
	struct process_memory pm = {-1, -1, NULL};
	memset(p, 0, sizeof *p);
	if (read_small(dir, "status", status, sizeof status) < 0 || ps_status_uid(status, &uid) != 0) {
		result = LOOK_GONE;
		goto done;
	}
	/* A thread's id: /proc shows it (not in its listing), with its process's maps. */
	*tgid = status_tgid(status);
	if (*tgid > 0 && *tgid != pid) {
		result = LOOK_THREAD;
		goto done;
	}
	static struct shim_mappings shim;
	if (scan_maps(dir, &shim) != 0) {
		bool denial = errno == EACCES || errno == EPERM;
		result = process_gone(dir) ? LOOK_GONE : denial ? LOOK_DENIED : LOOK_EXITED;
		*denied = ps_denied_why(uid, ctx->my_uid, ctx->ptrace_scope);
		goto done;
	}
	if (!shim.found)
		goto done;
	p->pid = pid;
	p->uid = uid;
	user_name(uid, p->user, sizeof p->user);
	char comm[64];
	if (read_small(dir, "comm", comm, sizeof comm) < 0) {
		result = LOOK_EXITED;
		goto done;
	}
	comm[strcspn(comm, "\n")] = '\0';
	copy_cut(p->command, sizeof p->command, comm, "");
	copy_cut(p->library, sizeof p->library, shim.path, shim.first.deleted ? " (deleted)" : "");
	pm.shim = &shim;
	pm.mem = openat(dir, "mem", O_RDONLY | O_CLOEXEC);
	if (pm.mem >= 0)
		pm.pagemap = openat(dir, "pagemap", O_RDONLY | O_CLOEXEC);
	if ((pm.mem < 0 || pm.pagemap < 0) && exited_meanwhile(dir, errno)) {
		result = LOOK_EXITED;
	} else if (pm.mem < 0 || pm.pagemap < 0) {
		p->state = PS_UNREADABLE;
		p->denied = ps_denied_why(uid, ctx->my_uid, ctx->ptrace_scope);
		result = LOOK_LISTED;
	} else {
		result = read_state(dir, &pm, &shim, p);
	}
done:
	if (pm.mem >= 0)
		close(pm.mem);
	if (pm.pagemap >= 0)
		close(pm.pagemap);
	close(dir);
	return result;
}

/* Yama's ptrace_scope, 0 where the kernel has none. */
static int read_ptrace_scope(void)
{
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char text[16] = "";
	ssize_t r = read(fd, text, sizeof text - 1);
	close(fd);
	return r > 0 ? atoi(text) : 0;
}

static int compare_pids(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Every process's id, ascending: a malloc'd array of *n, or NULL. */
static int *every_pid(size_t *n)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return NULL;
	size_t cap = 1024;
	int *pids = malloc(cap * sizeof *pids);
	*n = 0;
	for (struct dirent *e; pids && (e = readdir(proc));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX || !isdigit((unsigned char)e->d_name[0]))
			continue;
		if (*n == cap) {
			int *bigger = realloc(pids, 2 * cap * sizeof *pids);
			if (!bigger) {
				free(pids);
				pids = NULL;
				break;
			}
			pids = bigger;
			cap *= 2;
		}
		pids[(*n)++] = (int)pid;
	}
	closedir(proc);
	if (pids)
		qsort(pids, *n, sizeof *pids, compare_pids);
	return pids;
}

/* The line for a process whose file of the shim's name is no ELF object of this machine:
 * not the shim, whatever its name (the path escaped: the process chose it). */
static void not_the_shim(int pid, const char *library)
{
	char path[1024];
	ps_terminal_text(path, sizeof path, library);
	fprintf(stderr, "tscshim ps: process %d: the shim is not loaded (%s is not the shim: not an ELF object of this "
			"machine)\n",
		pid, path);
}

int ps_scan(const int *requested, size_t count, struct ps_process **list, size_t *n, struct ps_scan_totals *t)
{
	struct scan_context ctx = {(unsigned)geteuid(), read_ptrace_scope()};
	memset(t, 0, sizeof *t);
	size_t total = count;
	int *all = NULL;
	if (count == 0) {
		all = every_pid(&total);
		if (!all) {
			fprintf(stderr, "tscshim ps: cannot list /proc: %s\n", strerror(errno));
			return -1;
		}
	}
	const int *pids = count ? requested : all;
	size_t cap = 0;
	int missing = 0;
	for (size_t i = 0; i < total; i++) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct ps_process *bigger = realloc(*list, cap * sizeof **list);
			if (!bigger) {
				fprintf(stderr, "tscshim ps: out of memory\n");
				free(all);
				return -1;
			}
			*list = bigger;
		}
		enum ps_denied denied = PS_DENIED_NOT_PERMITTED;
		long tgid = -1;
		enum look look = look_into(pids[i], &ctx, &(*list)[*n], &denied, &tgid);
		if (look == LOOK_LISTED)
			(*n)++;
		if (look == LOOK_DENIED)
			t->not_inspected[denied]++;
		if (look == LOOK_EXITED)
			t->exited++;
		if (!count || look == LOOK_LISTED)
			continue;
		missing++;
		if (look == LOOK_DENIED)
			fprintf(stderr, "tscshim ps: process %d: could not look into it (%s)\n", pids[i], ps_denied_words(denied));
		else if (look == LOOK_THREAD)
			fprintf(stderr, "tscshim ps: process %d: a thread of process %ld, not a process (try -p %ld)\n",
				pids[i], tgid, tgid);
		else if (look == LOOK_NOT_SHIM)
			not_the_shim(pids[i], (*list)[*n].library);
		else
			fprintf(stderr, "tscshim ps: process %d: %s\n", pids[i],
				look == LOOK_NOT_LOADED ? "the shim is not loaded"
				: look == LOOK_EXITED   ? "exited while being read"
							: "no such process");
	}
	free(all);
	return missing;
}
