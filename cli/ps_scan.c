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

/* /proc/PID/maps read whole (it may be megabytes): a malloc'd text, or NULL (errno). */
static char *read_maps(int dir)
{
	int fd = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t size = 65536, len = 0;
	char *text = malloc(size);
	while (text) {
		if (len + 1 == size) {
			char *bigger = size < (64u << 20) ? realloc(text, size * 2) : NULL;
			if (!bigger) {
				free(text);
				text = NULL;
				errno = ENOMEM;
				break;
			}
			text = bigger;
			size *= 2;
		}
		ssize_t r = read(fd, text + len, size - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(text);
			text = NULL;
			break;
		}
		if (r == 0) {
			text[len] = '\0';
			break;
		}
		len += (size_t)r;
	}
	int error = errno;
	close(fd);
	errno = error;
	return text;
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

static int memory_read(void *ctx, uint64_t address, void *buf, size_t len)
{
	int fd = *(const int *)ctx;
	if (address > (uint64_t)INT64_MAX - len) {
		errno = EIO;
		return -1;
	}
	for (size_t done = 0; done < len;) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(address + done));
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
 * and whether the block lies in a writable mapping of that same file (the library was
 * loaded, not only mapped). Returns false where no shim is mapped. */
struct shim_mappings {
	struct ps_mapping first;
	char path[256];
	uint64_t writable_low[8], writable_high[8];
	size_t writable;
};

static bool find_shim(char *maps, struct shim_mappings *out)
{
	memset(out, 0, sizeof *out);
	bool found = false;
	for (char *line = maps, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		struct ps_mapping m;
		if (ps_maps_parse(line, &m) != 0 || !m.path[0])
			continue;
		if (!found && m.offset == 0 && m.readable && ps_is_shim_path(m.path)) {
			out->first = m;
			text_line(out->path, sizeof out->path, m.path, NULL);
			out->first.path = out->path;
			found = true;
		}
		if (found && m.writable && m.inode == out->first.inode && m.dev_major == out->first.dev_major &&
		    m.dev_minor == out->first.dev_minor && out->writable < 8) {
			out->writable_low[out->writable] = m.start;
			out->writable_high[out->writable++] = m.end;
		}
	}
	return found;
}

static bool in_writable_mapping(const struct shim_mappings *s, uint64_t address)
{
	for (size_t i = 0; i < s->writable; i++)
		if (address >= s->writable_low[i] && address + sizeof(struct state_block) <= s->writable_high[i])
			return true;
	return false;
}

/* The shim's image and block in the process, through its memory (fd). */
static enum look read_state(int dir, int mem, const struct shim_mappings *shim, struct ps_process *p)
{
	struct ps_memory m = {memory_read, &mem};
	struct ps_image image;
	if (ps_image_read(&m, shim->first.start, &image) != 0) {
		if (exited_meanwhile(dir, errno))
			return LOOK_EXITED;
		snprintf(p->note, sizeof p->note, "its image could not be read");
		p->state = PS_OTHER_VERSION;
		return LOOK_LISTED;
	}
	memcpy(p->build_id, image.build_id, sizeof p->build_id);
	/* Mapped, not loaded (a file opened by mmap): no block of a running shim there. */
	if (!shim->writable)
		return LOOK_NOT_LOADED;
	if (image.block && !in_writable_mapping(shim, image.block)) {
		snprintf(p->note, sizeof p->note, "state block outside the library's data");
		p->state = PS_OTHER_VERSION;
		return LOOK_LISTED;
	}
	enum ps_block_result r = ps_block_read(&m, &image, p);
	if (r == PS_BLOCK_FAILED && exited_meanwhile(dir, errno))
		return LOOK_EXITED;
	if (r == PS_BLOCK_FAILED) {
		snprintf(p->note, sizeof p->note, "its state block could not be read");
		p->state = PS_OTHER_VERSION;
	}
	return LOOK_LISTED;
}

static enum look look_into(int pid, const struct scan_context *ctx, struct ps_process *p, enum ps_denied *denied)
{
	char path[32];
	snprintf(path, sizeof path, "/proc/%d", pid);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return LOOK_GONE;
	enum look result = LOOK_NOT_LOADED;
	char status[4096];
	unsigned uid = 0;
	char *maps = NULL;
	int mem = -1;
	if (read_small(dir, "status", status, sizeof status) < 0 || ps_status_uid(status, &uid) != 0) {
		result = LOOK_GONE;
		goto done;
	}
	maps = read_maps(dir);
	if (!maps) {
		bool denial = errno == EACCES || errno == EPERM;
		result = process_gone(dir) ? LOOK_GONE : denial ? LOOK_DENIED : LOOK_EXITED;
		*denied = ps_denied_why(uid, ctx->my_uid, ctx->ptrace_scope);
		goto done;
	}
	struct shim_mappings shim;
	if (!find_shim(maps, &shim))
		goto done;
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->uid = uid;
	user_name(uid, p->user, sizeof p->user);
	char comm[64];
	if (read_small(dir, "comm", comm, sizeof comm) < 0) {
		result = LOOK_EXITED;
		goto done;
	}
	comm[strcspn(comm, "\n")] = '\0';
	text_line(p->command, sizeof p->command, comm, NULL);
	text_line(p->library, sizeof p->library, shim.path, shim.first.deleted ? " (deleted)" : "", NULL);
	mem = openat(dir, "mem", O_RDONLY | O_CLOEXEC);
	if (mem < 0 && exited_meanwhile(dir, errno)) {
		result = LOOK_EXITED;
	} else if (mem < 0) {
		p->state = PS_UNREADABLE;
		p->denied = ps_denied_why(uid, ctx->my_uid, ctx->ptrace_scope);
		result = LOOK_LISTED;
	} else {
		result = read_state(dir, mem, &shim, p);
	}
done:
	if (mem >= 0)
		close(mem);
	free(maps);
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
		enum look look = look_into(pids[i], &ctx, &(*list)[*n], &denied);
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
		else
			fprintf(stderr, "tscshim ps: process %d: %s\n", pids[i],
				look == LOOK_NOT_LOADED ? "the shim is not loaded"
				: look == LOOK_EXITED   ? "exited while being read"
							: "no such process");
	}
	free(all);
	return missing;
}
