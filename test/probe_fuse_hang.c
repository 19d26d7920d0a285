/* A file system that never answers a read, and a process that maps a file of it, for
 * `tscshim ps` to meet (bats/ps.bats): what a hostile neighbour can stage. Needs root (it
 * mounts with mount(2) and /dev/fuse, no fusermount).
 *   probe_fuse_hang serve DIR   mounts at DIR a file system of one file, libtscshim.so
 *                               (64 KiB), says "ready", and answers everything but a
 *                               read of it, which waits for good: a page of the file that
 *                               is not in memory, read by anyone, waits in state D until
 *                               this process ends (the kernel then aborts the connection
 *                               and the read fails)
 *   probe_fuse_hang map FILE [touch]
 *                               maps FILE as a loaded library is mapped (its first page
 *                               read-only, then a writable private copy), touching no
 *                               page of it (with `touch`, reading a byte of each: in
 *                               memory), says "ready" and waits to be killed
 * Exit status 2 for a bad invocation, 3 where the file system cannot be mounted, 4 where
 * the file cannot be mapped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#if __has_include(<linux/fuse.h>)
#include <linux/fuse.h>
#define HAVE_FUSE 1
#endif

enum { FILE_NODE = 2, FILE_SIZE = 65536 };

static void say_ready(void)
{
	static const char ready[] = "ready\n";
	if (write(STDOUT_FILENO, ready, sizeof ready - 1) != (ssize_t)(sizeof ready - 1))
		_exit(4);
}

#ifdef HAVE_FUSE
/* One reply: the header (error, or 0 with len bytes of body). */
static void reply(int fd, uint64_t unique, int error, const void *body, size_t len)
{
	unsigned char out[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header h = {.len = (uint32_t)(sizeof h + (error ? 0 : len)), .error = error, .unique = unique};
	memcpy(out, &h, sizeof h);
	if (!error && len)
		memcpy(out + sizeof h, body, len);
	if (write(fd, out, h.len) < 0 && errno != ENOENT)
		perror("probe_fuse_hang: reply");
}

static void attr_of(uint64_t node, struct fuse_attr *a)
{
	memset(a, 0, sizeof *a);
	a->ino = node;
	a->nlink = 1;
	a->mode = node == FILE_NODE ? S_IFREG | 0755 : S_IFDIR | 0755;
	a->size = node == FILE_NODE ? FILE_SIZE : 0;
	a->blocks = a->size / 512;
	a->blksize = 4096;
}

static int serve(const char *dir)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("probe_fuse_hang: /dev/fuse");
		return 3;
	}
	char options[128];
	snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("tscshim-hang", dir, "fuse.tscshim-hang", MS_NOSUID | MS_NODEV, options) != 0) {
		perror("probe_fuse_hang: mount");
		return 3;
	}
	say_ready();
	static unsigned char in[FUSE_MIN_READ_BUFFER + 1048576];
	for (;;) {
		ssize_t n = read(fd, in, sizeof in);
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return 0; /* unmounted */
		const struct fuse_in_header *h = (const void *)in;
		const void *arg = in + sizeof *h;
		switch (h->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *i = arg;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
						  .max_readahead = i->max_readahead, .max_write = 4096};
			reply(fd, h->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_LOOKUP: {
			if (h->nodeid != FUSE_ROOT_ID || strcmp(arg, "libtscshim.so") != 0) {
				reply(fd, h->unique, -ENOENT, NULL, 0);
				break;
			}
			struct fuse_entry_out e = {.nodeid = FILE_NODE, .entry_valid = 3600, .attr_valid = 3600};
			attr_of(FILE_NODE, &e.attr);
			reply(fd, h->unique, 0, &e, sizeof e);
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a = {.attr_valid = 3600};
			attr_of(h->nodeid, &a.attr);
			reply(fd, h->unique, 0, &a, sizeof a);
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = {.fh = 1};
			reply(fd, h->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_READ:
		case FUSE_INTERRUPT:
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break; /* a read waits for good; the others want no answer */
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
			reply(fd, h->unique, 0, NULL, 0);
			break;
		default:
			reply(fd, h->unique, -ENOSYS, NULL, 0);
			break;
		}
	}
}

#else
/* Without the kernel's FUSE header (musl's tool chain): no file system to serve. */
static int serve(const char *dir)
{
	(void)dir;
	fprintf(stderr, "probe_fuse_hang: built without <linux/fuse.h>\n");
	return 3;
}
#endif

static int map(const char *path, bool touch)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("probe_fuse_hang: open");
		return 4;
	}
	/* As the loader maps a library: the first page read-only, then its data writable and
	 * private, right after. MAP_PRIVATE and PROT_WRITE from a read-only descriptor is
	 * allowed: nothing goes back to the file. */
	char *first = mmap(NULL, 2 * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (first == MAP_FAILED ||
	    mmap(first + 4096, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 4096) == MAP_FAILED) {
		perror("probe_fuse_hang: mmap");
		return 4;
	}
	if (touch && *(volatile char *)first + *(volatile char *)(first + 4096) == 1000)
		return 4;
	say_ready();
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	if ((argc == 3 || (argc == 4 && strcmp(argv[3], "touch") == 0)) && strcmp(argv[1], "map") == 0)
		return map(argv[2], argc == 4);
	fprintf(stderr, "usage: probe_fuse_hang serve DIR | map FILE [touch]\n");
	return 2;
}
