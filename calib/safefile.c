/* Hardened small-file I/O (see safefile.h). Every loop is bounded; every check looks at
 * the opened file itself, so nothing can be swapped in between the check and the read. */
#define _GNU_SOURCE
#include "safefile.h"
#include "bytes.h"

#include "counter.h"
#include "raw_syscall.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
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

/* Whether the open itself proves the file the owner's: O_NOATIME is refused (EPERM) on a
 * file the caller does not own, unless it may override that (CAP_FOWNER: root). So only
 * for an owner that is the caller, and not root: the effective uid the process started
 * with (the auxiliary vector's; a process that is not root and not setuid cannot change
 * it since). */
static bool open_proves_owner(const struct safefile_trust *trust)
{
	return trust->lean && trust->owner != 0 && trust->owner == (uid_t)getauxval(AT_EUID);
}

/* Opens path for reading, never through a symbolic link nor blocking on a FIFO.
 * SAFEFILE_OK with *fd open, else the status with err set. */
static int open_for_reading(const char *path, const struct safefile_trust *trust, int *fd, char *err,
			    size_t err_size)
{
	/* O_NOFOLLOW: a symlink fails with ELOOP instead of being opened; O_NONBLOCK: a FIFO
	 * planted at the path cannot hang the open. The system call itself, as the shim's
	 * decision makes it (a page of libc's text fewer), errno untouched. */
	long opened = raw_syscall4(SYS_openat, AT_FDCWD, (long)path,
				   O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (open_proves_owner(trust) ? O_NOATIME : 0),
				   0);
	*fd = (int)opened;
	if (opened >= 0)
		return SAFEFILE_OK;
	int e = (int)-opened;
	if (e == EPERM && open_proves_owner(trust)) {
		char n[24];
		text_line(err, err_size, path, ": not trusted: not owned by uid ", number(n, trust->owner), NULL);
		return SAFEFILE_UNTRUSTED;
	}
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
	long rc = raw_syscall4(SYS_fstat, fd, (long)st, 0, 0);
	if (rc != 0) {
		text_line(err, err_size, path, ": cannot stat: ", strerror((int)-rc), NULL);
		return SAFEFILE_IO_ERROR;
	}
	if (!S_ISREG(st->st_mode)) {
		text_line(err, err_size, path, ": not trusted: ",
			  S_ISDIR(st->st_mode) ? "a directory" : "not a regular file", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	if (check_owner_mode(path, "the file", st, trust->owner, err, err_size) != 0)
		return SAFEFILE_UNTRUSTED;
	if ((uint64_t)st->st_size > trust->max_size || (size <= trust->max_size && !trust->lean))
		return larger_than_allowed(path, trust, err, err_size);
	return SAFEFILE_OK;
}

/* The lean read (trust->lean): one read of at most size bytes (and no more than one
 * byte past the trust's bound), whose short count is the end of a regular file. */
static int read_once(int fd, const char *path, const struct safefile_trust *trust, char *buf, size_t size,
		     size_t *len, char *err, size_t err_size)
{
	size_t want = size < trust->max_size + 1 ? size : trust->max_size + 1;
	long got;
	int retries = 0;
	do
		got = raw_syscall4(SYS_read, fd, (long)buf, (long)want, 0);
	while (got == -EINTR && retries++ < EINTR_RETRIES);
	if (got < 0) {
		text_line(err, err_size, path, ": cannot read: ", strerror((int)-got), NULL);
		return SAFEFILE_IO_ERROR;
	}
	if ((size_t)got > trust->max_size)
		return larger_than_allowed(path, trust, err, err_size);
	*len = (size_t)got;
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

int safefile_directory_trusted(const char *path, uid_t owner, char *err, size_t err_size)
{
	char dir[SAFEFILE_PATH_MAX];
	struct stat st;
	if (directory_of(path, dir, err, err_size) != 0)
		return SAFEFILE_IO_ERROR;
	/* The system call itself, as the shim's load path makes them: libc's lstat is a page
	 * of libc's text a program that reads the clock may never have touched. */
	if (raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, AT_SYMLINK_NOFOLLOW) != 0) {
		text_line(err, err_size, path, ": does not exist yet", NULL);
		return SAFEFILE_MISSING;
	}
	if (!S_ISDIR(st.st_mode)) {
		text_line(err, err_size, path, ": not trusted: its directory is a symbolic link", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	return check_owner_mode(path, "its directory", &st, owner, err, err_size) == 0 ? SAFEFILE_OK
											  : SAFEFILE_UNTRUSTED;
}

int safefile_read_link(const char *path, const struct safefile_trust *trust, char *buf, size_t size, size_t *len,
		       char *err, size_t err_size)
{
	int status = safefile_directory_trusted(path, trust->owner, err, err_size);
	return status == SAFEFILE_OK ? safefile_read_link_target(path, trust->max_size, buf, size, len, err, err_size)
				     : status;
}

int safefile_read_link_target(const char *path, size_t max_size, char *buf, size_t size, size_t *len, char *err,
			      size_t err_size)
{
	/* One byte more than allowed is asked for, where the buffer holds it: a longer
	 * target is noticed. */
	size_t want = size < max_size + 1 ? size : max_size + 1;
	long n = raw_syscall4(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)want);
	if (n == -ENOENT || n == -ENOTDIR) {
		text_line(err, err_size, path, ": does not exist yet", NULL);
		return SAFEFILE_MISSING;
	}
	if (n == -EINVAL) {
		text_line(err, err_size, path, ": not trusted: not a symbolic link (an older build's record?)", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	if (n < 0) {
		text_line(err, err_size, path, ": cannot read: ", strerror((int)-n), NULL);
		return SAFEFILE_IO_ERROR;
	}
	if ((size_t)n > max_size) {
		char number_text[24];
		text_line(err, err_size, path, ": not trusted: larger than ", number(number_text, max_size), " bytes", NULL);
		return SAFEFILE_UNTRUSTED;
	}
	*len = (size_t)n;
	return SAFEFILE_OK;
}

int safefile_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
		  size_t *len, char *err, size_t err_size)
{
	return trust->link ? safefile_read_link(path, trust, buf, size, len, err, err_size)
			   : safefile_read_file(path, trust, buf, size, len, err, err_size);
}

int safefile_read_file(const char *path, const struct safefile_trust *trust, char *buf, size_t size, size_t *len,
		       char *err, size_t err_size)
{
	/* err is written only on a failure: the shim keeps it on a page of its own, which a
	 * read that succeeds never touches. */
	int fd;
	int status = open_for_reading(path, trust, &fd, err, err_size);
	if (status != SAFEFILE_OK)
		return status;
	struct stat st;
	if (!open_proves_owner(trust))
		status = check_opened(fd, path, trust, size, &st, err, err_size);
	if (status == SAFEFILE_OK)
		status = trust->lean ? read_once(fd, path, trust, buf, size, len, err, err_size)
				     : read_bounded(fd, path, trust, &st, buf, len, err, err_size);
	long closed = raw_syscall4(SYS_close, fd, 0, 0, 0);
	if (closed != 0 && status == SAFEFILE_OK) {
		text_line(err, err_size, path, ": cannot close: ", strerror((int)-closed), NULL);
		status = SAFEFILE_IO_ERROR;
	}
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

/* Whether something other than what may be replaced stands at path: a directory always,
 * and for a regular file's write anything but a regular file (a symlink is neither
 * followed nor replaced). rename() itself never follows a symlink and never replaces a
 * directory with a file, so one appearing after this check is not written through
 * either. 0, or -1 with err. */
static int in_the_way(const char *path, bool link_may_go, char *err, size_t err_size)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		text_line(err, err_size, path, ": not written: ", strerror(errno), NULL);
		return -1;
	}
	if (S_ISREG(st.st_mode) || (link_may_go && S_ISLNK(st.st_mode)))
		return 0;
	text_line(err, err_size, path, ": not written: ",
		  S_ISLNK(st.st_mode)   ? "a symbolic link is"
		  : S_ISDIR(st.st_mode) ? "a directory is"
					: "something other than a regular file is",
		  " in the way", NULL);
	return -1;
}

/* "<path>.tmp-<16 hex digits>" into tmp: names unpredictable enough that nobody can
 * pre-create them all (O_EXCL, or symlink's EEXIST, makes a collision a retry, never a
 * clobber). 0, or -1 with err when the path is too long. */
static int temp_name(const char *path, int attempt, char tmp[SAFEFILE_PATH_MAX + 24], char *err, size_t err_size)
{
	uint64_t salt = (counter_read_unfenced() * 0x100000001b3ull) ^ ((uint64_t)getpid() << 40) ^ (uint64_t)attempt;
	struct text t = text_start(tmp, SAFEFILE_PATH_MAX + 24);
	text_add(&t, path);
	text_add(&t, ".tmp-");
	char hex[17];
	for (int i = 15; i >= 0; i--, salt >>= 4)
		hex[i] = "0123456789abcdef"[salt & 15];
	hex[16] = '\0';
	text_add(&t, hex);
	if (!t.truncated)
		return 0;
	text_line(err, err_size, path, ": not written: path too long", NULL);
	return -1;
}

/* Renames tmp over path; on failure removes tmp and says which step failed. */
static int put_in_place(const char *tmp, const char *path, const char *failed_step, int e, char *err,
			size_t err_size)
{
	if (!failed_step && rename(tmp, path) != 0) {
		failed_step = "rename";
		e = errno;
	}
	if (!failed_step)
		return 0;
	if (unlink(tmp) != 0 && errno != ENOENT)
		text_line(err, err_size, path, ": not written: ", failed_step, ": ", strerror(e),
			  "; and its temporary file is left behind", NULL);
	else
		text_line(err, err_size, path, ": not written: ", failed_step, ": ", strerror(e), NULL);
	return -1;
}

int safefile_write(const char *path, const char *data, size_t len, int world_readable,
		   char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	if (in_the_way(path, false, err, err_size) != 0)
		return -1;
	char tmp[SAFEFILE_PATH_MAX + 24];
	int fd = -1;
	for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
		if (temp_name(path, attempt, tmp, err, err_size) != 0)
			return -1;
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
	return put_in_place(tmp, path, step, e, err, err_size);
}

int safefile_write_link(const char *path, const char *data, size_t len, char *err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	char target[SAFEFILE_LINK_MAX + 1];
	if (len == 0 || len > SAFEFILE_LINK_MAX || bytes_find(data, '\0', len)) {
		text_line(err, err_size, path, ": not written: a link's target is 1 to 4095 bytes without NUL", NULL);
		return -1;
	}
	memcpy(target, data, len);
	target[len] = '\0';
	if (in_the_way(path, true, err, err_size) != 0)
		return -1;
	char tmp[SAFEFILE_PATH_MAX + 24];
	int rc = -1;
	for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
		if (temp_name(path, attempt, tmp, err, err_size) != 0)
			return -1;
		rc = symlink(target, tmp);
		if (rc == 0 || errno != EEXIST)
			break;
	}
	if (rc != 0) {
		text_line(err, err_size, path, ": not written: cannot create a temporary link: ", strerror(errno), NULL);
		return -1;
	}
	return put_in_place(tmp, path, NULL, 0, err, err_size);
}
