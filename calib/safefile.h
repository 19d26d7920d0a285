/* Hardened file I/O for small files another user may have planted or raced: open without
 * following symlinks or blocking, check the opened file itself, read a bounded amount;
 * write through a fresh temporary file and an atomic rename. For the calibration cache
 * and the shim's stats file; and, as the target of a symbolic link, for the machine-wide
 * record, whose content one readlinkat reads whole (no open, fstat, read or close).
 *
 * No stdio and no malloc: this runs in the preloaded library's constructor. Messages are
 * built with text.h and hold only printable characters. */
#ifndef CALIB_SAFEFILE_H
#define CALIB_SAFEFILE_H

#include <stddef.h>

#include "text.h"
#include <sys/types.h>

/* Longest path these functions take (the options bound theirs to 511 bytes): buffers
 * for derived names live on the constructor's small stack. */
#define SAFEFILE_PATH_MAX 640

enum safefile_status {
	SAFEFILE_OK = 0,
	SAFEFILE_MISSING,   /* the file (or a directory on its path) does not exist */
	SAFEFILE_UNTRUSTED, /* exists, but its owner, mode, kind or size rule it out */
	SAFEFILE_IO_ERROR,  /* could not be opened or read for another reason (EACCES, EIO...) */
};

struct safefile_trust {
	uid_t owner;     /* the file (with link, its directory) must be owned by this uid */
	size_t max_size; /* a larger file is not ours */
	/* The content is a symbolic link's target, not a file's (the machine-wide record). A
	 * link's target cannot be written, only the link replaced, which takes write access to
	 * its directory: so the directory is what is trusted (owner's, a directory and not a
	 * symlink, writable by nobody else), and the link's own owner says nothing more. */
	int link;
	/* The shim's decision: the fewest system calls. The open proves the owner where the
	 * owner is not root (O_NOATIME is refused on another's file), so the file is not
	 * fstat'ed then (a process that holds CAP_FOWNER without being root has its owner
	 * checked by the caller's earlier lstat alone); one read of at most the buffer, whose
	 * short count is the end. buf may then be smaller than max_size + 1: a file that
	 * fills it may be longer (read it again into a larger one). */
	int lean;
};

/* Reads the whole file into buf (size > trust->max_size, so a file that grew after the
 * check is noticed) and returns an enum safefile_status; *len is set for SAFEFILE_OK.
 * For anything else err gets one line naming the path and the reason (and only then is
 * it written). With trust->link: the link's target, after its directory's check; a
 * regular file there is SAFEFILE_UNTRUSTED ("not a symbolic link": an older build's). */
int safefile_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
		  size_t *len, char *err, size_t err_size);
/* The same for one kind (the shim's decision calls the one it needs: its stack is small,
 * and a call graph then holds only that one's frames). */
int safefile_read_file(const char *path, const struct safefile_trust *trust, char *buf, size_t size, size_t *len,
		       char *err, size_t err_size);
int safefile_read_link(const char *path, const struct safefile_trust *trust, char *buf, size_t size, size_t *len,
		       char *err, size_t err_size);
/* A link's target alone, its directory not checked (the caller checked it before), at
 * most max_size bytes; buf may be smaller: a target that fills it may be longer. */
int safefile_read_link_target(const char *path, size_t max_size, char *buf, size_t size, size_t *len, char *err,
			      size_t err_size);

/* The check of a link's directory alone (one lstat): SAFEFILE_OK when it is a directory,
 * not a symlink, owner's and writable by nobody else; else the status, err set. */
int safefile_directory_trusted(const char *path, uid_t owner, char *err, size_t err_size);

/* Writes len bytes to a new "<path>.tmp-<hex>" (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600; 0644
 * when world_readable) in the same directory and renames it over path: readers see the
 * old file or the new one, never a part. Refuses when path exists and is not a regular
 * file (a symlink is neither followed nor replaced). Not fsync'ed. Returns 0, or -1 with
 * one line in err; no temporary file is left behind on failure. */
int safefile_write(const char *path, const char *data, size_t len, int world_readable,
		   char *err, size_t err_size);

/* The same as a symbolic link whose target is the len bytes (at most SAFEFILE_LINK_MAX,
 * no NUL): made at a temporary name and renamed over path, which may hold a link or a
 * regular file (an older build's record), never a directory. */
#define SAFEFILE_LINK_MAX 4095
int safefile_write_link(const char *path, const char *data, size_t len, char *err, size_t err_size);

#endif
