/* Hardened file I/O for small files another user may have planted or raced: open without
 * following symlinks or blocking, check the opened file itself, read a bounded amount;
 * write through a fresh temporary file and an atomic rename. For the calibration cache,
 * the machine-wide record and (later) the shim's stats file.
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
	uid_t owner;        /* the file (and, with check_directory, its directory) must be owned by this uid */
	int check_directory;/* also refuse a directory that is a symlink or is writable by group or others */
	size_t max_size;    /* a larger file is not ours */
	/* With check_directory: the directory checked by one lstat (a directory, its owner and
	 * mode) instead of being opened, fstat'ed and closed: two system calls fewer. The file
	 * is then opened by its path, which an attacker could redirect only by replacing the
	 * directory itself in its parent; the file's own checks (fstat) stand either way. */
	int directory_by_lstat;
};

/* Reads the whole file into buf (size > trust->max_size, so a file that grew after the
 * check is noticed) and returns an enum safefile_status; *len is set for SAFEFILE_OK.
 * For anything else err gets one line naming the path and the reason (and only then is
 * it written). */
int safefile_read(const char *path, const struct safefile_trust *trust, char *buf, size_t size,
		  size_t *len, char *err, size_t err_size);

/* Writes len bytes to a new "<path>.tmp-<hex>" (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600; 0644
 * when world_readable) in the same directory and renames it over path: readers see the
 * old file or the new one, never a part. Refuses when path exists and is not a regular
 * file (a symlink is neither followed nor replaced). Not fsync'ed. Returns 0, or -1 with
 * one line in err; no temporary file is left behind on failure. */
int safefile_write(const char *path, const char *data, size_t len, int world_readable,
		   char *err, size_t err_size);


#endif
