/* Hardened small-file I/O (see safefile.h). Every loop is bounded; every check looks at
 * the opened file itself, so nothing can be swapped in between the check and the read. */
#define _GNU_SOURCE
#include "safefile.h"

#include "counter.h"
#include "raw_syscall.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Retries after a signal are bounded too: a file that keeps failing is not worth it. */
enum { EINTR_RETRIES = 64, TEMP_ATTEMPTS = 16 };


static const char *number(char buf[24], uint64_t v)
{
	struct text t = text_start(buf, 24);
	text_add_u64(&t, v);
	return buf;
}

static const char *octal_mode(char buf[8], unsigned mode)
{
	for (int i = 3; i >= 0; i--, mode >>= 3)
		buf[i] = (char)('0' + (mode & 7));
	buf[4] = '\0';
	return buf;
}

/* The directory part of path into dir (SAFEFILE_PATH_MAX bytes). 0, or -1 with err. */
static int directory_of(const char *path, char *dir, char *err, size_t err_size)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	if (!slash) {
		dir[0] = '.';
		len = 1;
	} else if (len == 0) {
		dir[0] = '/';
		len = 1;
	} else if (len >= SAFEFILE_PATH_MAX) {
		text_line(err, err_size, path, ": path too long", NULL);
		errno = ENAMETOOLONG;
		return -1;
	} else {
		memcpy(dir, path, len);
	}
	dir[len] = '\0';
	return 0;
}

/* The directory part of path, opened without following a final symlink. */
static int open_directory(const char *path, char *err, size_t err_size)
{
	char dir[SAFEFILE_PATH_MAX];
	if (directory_of(path, dir, err, err_size) != 0)
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct stat st;
		/* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR, not ELOOP. */
		if (e == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			e = ELOOP;
		/* A missing directory is the common case (no machine-wide record): a fixed text,
		 * as strerror would fault in libc's message tables for a line rarely shown. */
		text_line(err, err_size, path, ": ", e == ELOOP ? "not trusted: its directory is a symbolic link"
				 : e == ENOENT ? "does not exist yet" : strerror(e), NULL);
		errno = e;
	}
	return fd;
}

static int check_owner_mode(const char *path, const char *what, const struct stat *st,
			    uid_t owner, char *err, size_t err_size)
{
	char n1[24], n2[24], m[8];
	if (st->st_uid != owner) {
		text_line(err, err_size, path, ": not trusted: ", what, " owned by uid ",
				 number(n1, st->st_uid), ", not ", number(n2, owner), NULL);
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		text_line(err, err_size, path, ": not trusted: ", what,
				 " writable by group or others (mode ",
				 octal_mode(m, (unsigned)(st->st_mode & 07777)), ")", NULL);
		return -1;
	}
	return 0;
}

/* Opens path for reading, never through a symbolic link nor blocking on a FIFO, and,
 * where the trust asks it, only in a directory that passes the owner and mode checks.
 * SAFEFILE_OK with *fd open, else the status with err set. */
static int open_for_reading(const char *path, const struct safefile_trust *trust, int *fd, char *err,
			    size_t err_size)
{
	int dirfd = AT_FDCWD;
	const char *name = path;
	if (trust->check_directory) {
		dirfd = open_directory(path, err, err_size);
		if (dirfd < 0)
			return errno == ENOENT || errno == ENOTDIR ? SAFEFILE_MISSING
			       : errno == ELOOP			   ? SAFEFILE_UNTRUSTED
								   : SAFEFILE_IO_ERROR;
		struct stat dst;
		if (fstat(dirfd, &dst) != 0 ||
		    check_owner_mode(path, "its directory", &dst, trust->owner, err, err_size) != 0) {
			close(dirfd);
			return SAFEFILE_UNTRUSTED;
		}
		const char *slash = strrchr(path, '/');
		name = slash ? slash + 1 : path;
	}
	/* O_NOFOLLOW: a symlink fails with ELOOP instead of being opened; O_NONBLOCK: a FIFO
	 * planted at the path cannot hang the open. */
	*fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int e = errno;
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (*fd >= 0)
		return SAFEFILE_OK;
	if (e == ENOENT || e == ENOTDIR) {
		text_line(err, err_size, path, ": does not exist yet", NULL);
		return SAFEFILE_MISSING;
	}
	if (e == ELOOP) {
		text_line(err, err_size, path, ": not trusted: a symbolic link", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	text_line(err, err_size, path, ": cannot open: ", strerror(e), NULL);
	return SAFEFILE_IO_ERROR;
}

/* The file is larger than the trust allows: SAFEFILE_UNTRUSTED, saying so. */
static int larger_than_allowed(const char *path, const struct safefile_trust *trust, char *err, size_t err_size)
{
	char n[24];
	text_line(err, err_size, path, ": not trusted: larger than ", number(n, trust->max_size), " bytes", NULL);
	return SAFEFILE_UNTRUSTED;
}

/* The open file as the trust requires it: a regular file, its owner and mode, and no
 * larger than the trust's bound (which the caller's buffer of size must hold, and a
 * byte more). SAFEFILE_OK with *st filled, else the status with err set. */
static int check_opened(int fd, const char *path, const struct safefile_trust *trust, size_t size,
			struct stat *st, char *err, size_t err_size)
{
	/* The system call itself: glibc's fstat passes fstatat an empty path from its own
	 * constants, a page of libc the kernel then faults in to read one byte. */
	if (raw_syscall4(SYS_fstat, fd, (long)st, 0, 0) != 0) {
		text_line(err, err_size, path, ": cannot stat: ", strerror(errno), NULL);
		return SAFEFILE_IO_ERROR;
	}
	if (!S_ISREG(st->st_mode)) {
		text_line(err, err_size, path, ": not trusted: ",
			  S_ISDIR(st->st_mode) ? "a directory" : "not a regular file", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	if (check_owner_mode(path, "the file", st, trust->owner, err, err_size) != 0)
		return SAFEFILE_UNTRUSTED;
	if ((uint64_t)st->st_size > trust->max_size || size <= trust->max_size)
		return larger_than_allowed(path, trust, err, err_size);
	return SAFEFILE_OK;
}

/* Reads the checked file into buf, at most the trust's bound: one byte more than allowed
 * is asked for, to notice a file that grew after fstat (st). */
static int read_bounded(int fd, const char *path, const struct safefile_trust *trust, const struct stat *st,
			char *buf, size_t *len, char *err, size_t err_size)
{
	size_t total = 0, want = trust->max_size + 1;
	int retries = 0;
	while (total < want) {
		ssize_t got = read(fd, buf + total, want - total);
		if (got < 0 && errno == EINTR && retries++ < EINTR_RETRIES)
			continue;
		if (got < 0) {
			text_line(err, err_size, path, ": cannot read: ", strerror(errno), NULL);
			return SAFEFILE_IO_ERROR;
		}
		if (got == 0)
			break;
		total += (size_t)got;
		/* A short read of a regular file that reached fstat's size is its end: no second
		 * read to see 0 (a system call saved at every first clock read). A file that grew
		 * past that size still shows as one read filling all that was asked; one whose
		 * size says nothing (0, as in /proc) is read to its end. */
		if ((size_t)got < want - (total - (size_t)got) && st->st_size > 0 &&
		    total >= (uint64_t)st->st_size)
			break;
	}
	if (total > trust->max_size)
		return larger_than_allowed(path, trust, err, err_size);
	*len = total;
	return SAFEFILE_OK;
}

/* safefile_read with the directory checked by lstat (trust->directory_by_lstat): a
 * directory, not a symlink, its owner and mode; then the file opened without following a
 * symlink, checked itself (fstat) and read. */
static int read_with_directory_lstat(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
			       size_t *len, char *err, size_t err_size)
{
	char dir[SAFEFILE_PATH_MAX];
	struct stat st;
	if (directory_of(path, dir, err, err_size) != 0)
		return SAFEFILE_IO_ERROR;
	/* System calls made directly, as the shim's load path makes them: libc's wrappers are
	 * pages of libc's text a program that reads the clock may never have touched. */
	if (raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, AT_SYMLINK_NOFOLLOW) != 0) {
		text_line(err, err_size, path, ": does not exist yet", NULL);
		return SAFEFILE_MISSING;
	}
	if (!S_ISDIR(st.st_mode)) {
		text_line(err, err_size, path, ": not trusted: its directory is a symbolic link", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	if (check_owner_mode(path, "its directory", &st, trust->owner, err, err_size) != 0)
		return SAFEFILE_UNTRUSTED;
	long opened = raw_syscall4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
	int fd = (int)opened;
	if (opened < 0) {
		int e = (int)-opened;
		text_line(err, err_size, path, e == ENOENT ? ": does not exist yet" : e == ELOOP ? ": not trusted: a symbolic link"
							     : ": cannot open", NULL);
		return e == ENOENT ? SAFEFILE_MISSING : e == ELOOP ? SAFEFILE_UNTRUSTED : SAFEFILE_IO_ERROR;
	}
	/* The opened file itself, checked again: its owner or mode may have changed since the
	 * load's lstat (root may chown or chmod it). */
	int status = check_opened(fd, path, trust, size, &st, err, err_size);
	if (status == SAFEFILE_OK)
		status = read_bounded(fd, path, trust, &st, buf, len, err, err_size);
	if (raw_syscall4(SYS_close, fd, 0, 0, 0) != 0) {
		/* Linux releases the descriptor all the same, and nothing was written to it. */
	}
	return status;
}

int safefile_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
		  size_t *len, char *err, size_t err_size)
{
	/* err is written only on a failure: the shim keeps it on a page of its own, which a
	 * read that succeeds never touches. */
	if (trust->directory_by_lstat && trust->check_directory)
		return read_with_directory_lstat(path, trust, buf, size, len, err, err_size);
	int fd;
	int status = open_for_reading(path, trust, &fd, err, err_size);
	if (status != SAFEFILE_OK)
		return status;
	struct stat st;
	status = check_opened(fd, path, trust, size, &st, err, err_size);
	if (status == SAFEFILE_OK)
		status = read_bounded(fd, path, trust, &st, buf, len, err, err_size);
	close(fd);
	return status;
}

static int write_all(int fd, const char *p, size_t len)
{
	int retries = 0;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR && retries++ < EINTR_RETRIES)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int safefile_write(const char *path, const char *data, size_t len, int world_readable,
		   char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	/* For a clear message and to leave such things alone. rename() itself never follows
	 * a symlink and never replaces a directory with a file, so one appearing after this
	 * check is not written through either. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			text_line(err, err_size, path, ": not written: ",
					 S_ISLNK(st.st_mode)   ? "a symbolic link is"
					 : S_ISDIR(st.st_mode) ? "a directory is"
							       : "something other than a regular file is",
					 " in the way", NULL);
			return -1;
		}
	} else if (errno != ENOENT) {
		text_line(err, err_size, path, ": not written: ", strerror(errno), NULL);
		return -1;
	}

	/* Names are unpredictable enough that nobody can pre-create them all; O_EXCL makes a
	 * collision a retry, never a clobber. */
	char tmp[SAFEFILE_PATH_MAX + 24];
	int fd = -1;
	for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
		uint64_t salt = (counter_read_unfenced() * 0x100000001b3ull) ^
				((uint64_t)getpid() << 40) ^ (uint64_t)attempt;
		struct text t = text_start(tmp, sizeof tmp);
		text_add(&t, path);
		text_add(&t, ".tmp-");
		char hex[17];
		for (int i = 15; i >= 0; i--, salt >>= 4)
			hex[i] = "0123456789abcdef"[salt & 15];
		hex[16] = '\0';
		text_add(&t, hex);
		if (t.truncated) {
			text_line(err, err_size, path, ": not written: path too long", NULL);
			return -1;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		text_line(err, err_size, path, ": not written: cannot create a temporary file: ",
				 strerror(errno), NULL);
		return -1;
	}

	const char *step = NULL;
	int e = 0;
	/* The umask could have taken the owner's read bit; the reader needs it. */
	if (fchmod(fd, world_readable ? 0644 : 0600) != 0)
		step = "chmod";
	else if (write_all(fd, data, len) != 0)
		step = "write";
	if (step)
		e = errno;
	if (close(fd) != 0 && !step) {
		step = "close";
		e = errno;
	}
	if (!step && rename(tmp, path) != 0) {
		step = "rename";
		e = errno;
	}
	if (step) {
		unlink(tmp);
		text_line(err, err_size, path, ": not written: ", step, ": ", strerror(e), NULL);
		return -1;
	}
	return 0;
}
