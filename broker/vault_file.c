/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_file.c: the vault's file handling — bounded reads, whole-file replacement by
 * temp file and rename with the fsyncs that make it durable, and the directory lock that
 * keeps two writers from losing each other's changes. */
#include "broker/vault_internal.h"
#include "lib/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Splits path into its directory (for the temp file, the lock and the fsync). */
static int path_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	int n;
	if (!slash)
		n = snprintf(dir, len, ".");
	else if (slash == path)
		n = snprintf(dir, len, "/");
	else
		n = snprintf(dir, len, "%.*s", (int)(slash - path), path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Reads a whole regular file of at most max bytes into buf (which the caller provides,
 * so secrets can land in locked memory). Returns the length or a negative errno. */
ssize_t vault_read_small(int fd, unsigned char *buf, size_t max)
{
	ssize_t got = io_read_full(fd, buf, max);
	unsigned char extra;

	if (got < 0 || (size_t)got < max)
		return got;
	/* One more byte means the file is over the limit. */
	return io_read_full(fd, &extra, 1) == 0 ? got : -EFBIG;
}

int vault_fsync_dir(const char *path)
{
	char dir[PATH_MAX];
	if (path_dir(path, dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int rc = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

/* Writes data to a temp file beside path and renames it over path (or, with noreplace,
 * into a free name only). Any failure before the rename leaves path as it was; *renamed
 * says whether path now holds data (even if the directory fsync then failed). */
int vault_write_atomic(const char *path, const unsigned char *data, size_t len, bool noreplace,
		       bool *renamed, char *err, size_t errlen)
{
	*renamed = false;
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (path_dir(path, dir, sizeof(dir)) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base) >= (int)sizeof(tmp)) {
		errbuf_set(err, errlen, "vault path %s is too long", path);
		return -ENAMETOOLONG;
	}
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		errbuf_set(err, errlen,
			   "cannot create a temp file in %s: %s; check that it is writable", dir,
			   strerror(e));
		return -e;
	}
	const char *step = "write";
	int rc = fchmod(fd, 0600) < 0 ? -errno : io_write_full(fd, data, len);
	if (rc == 0 && fsync(fd) < 0) {
		step = "fsync";
		rc = -errno;
	}
	if (close(fd) < 0 && rc == 0) {
		step = "close";
		rc = -errno;
	}
	if (rc == 0) {
		step = "rename";
		if (noreplace)
			rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0 ? -errno
											    : 0;
		else
			rc = rename(tmp, path) < 0 ? -errno : 0;
	}
	if (rc < 0) {
		unlink(tmp);
		errbuf_set(err, errlen, "cannot %s %s (vault %s left as it was): %s", step, tmp,
			   path, strerror(-rc));
		return rc;
	}
	*renamed = true;
	rc = vault_fsync_dir(path);
	if (rc < 0)
		errbuf_set(err, errlen,
			   "vault %s was replaced but fsync of its directory failed: %s; "
			   "the change may not survive a power loss",
			   path, strerror(-rc));
	return rc;
}

/* Temp files of writers that were killed before their rename ('.<base>.XXXXXX'). Called
 * with the directory locked, so no live writer owns one. */
static void remove_stale_temps(int dfd, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t bl = strlen(base);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strncmp(e->d_name + 1, base, bl) == 0 &&
		    e->d_name[bl + 1] == '.' && strlen(e->d_name + bl + 2) == 6)
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

int vault_lock_dir(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	if (path_dir(path, dir, sizeof(dir)) < 0) {
		errbuf_set(err, errlen, "vault path %s is too long", path);
		return -ENAMETOOLONG;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		errbuf_set(err, errlen, "cannot open the vault's directory %s: %s", dir,
			   strerror(e));
		return -e;
	}
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		errbuf_set(err, errlen, "cannot lock %s: %s", dir, strerror(e));
		close(fd);
		return -e;
	}
	remove_stale_temps(fd, path);
	return fd;
}
