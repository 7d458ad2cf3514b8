/* SPDX-License-Identifier: Apache-2.0 */
/* lib/tree_remove.c: a directory tree removed without following a link or crossing a mount,
 * at any depth with one descriptor at a time: the image store's work entries and the
 * session API's work directories. */
#include "lib/tree_remove.h"
#include "lib/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One level of the removal: a directory's name, its inode (to check ".." on the way back). */
struct level {
	char *name;
	ino_t ino;
	dev_t dev;
};

static int mnt_id(int dirfd, const char *name, uint64_t *id)
{
	struct statx sx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH), STATX_MNT_ID,
		  &sx) < 0)
		return -1;
	*id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
	return 0;
}

/* Removes every entry of FD that is not a directory, and names the first directory left in
 * SUB. 1 with SUB, 0 when no directory is left, -1 on error (errno). */
static int clear_files(int fd, char *sub, size_t len)
{
	int dfd = dup(fd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	int rc = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int dir = e->d_type == DT_DIR;
		if (e->d_type == DT_UNKNOWN) {
			if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				rc = -1;
				break;
			}
			dir = S_ISDIR(st.st_mode);
		}
		if (dir) {
			if (rc == 0)
				snprintf(sub, len, "%s", e->d_name);
			rc = 1;
		} else if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT) {
			rc = -1;
			break;
		}
	}
	closedir(d);
	return rc;
}

/* Depth-first with one descriptor at a time (any depth), going back up through ".." checked
 * against the inode we came from; a directory on another mount is never entered. */
int tree_remove(int dirfd, const char *top, char *err, size_t errlen)
{
	struct level *stack = NULL;
	size_t depth = 0, cap = 0;
	char name[256];
	uint64_t mnt, m;
	struct stat st;
	int fd = -1, rc = -1;

	if (unlinkat(dirfd, top, 0) == 0 || errno == ENOENT)
		return 0;
	if (mnt_id(dirfd, top, &mnt) < 0 ||
	    (fd = openat(dirfd, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto fail;
	fchmod(fd, 0700); /* so that a 0555 directory can be emptied when we are not root */
	for (;;) {
		int r = clear_files(fd, name, sizeof(name));
		if (r < 0)
			goto fail;
		if (r == 0) { /* empty: go up and remove it */
			if (depth == 0)
				break;
			struct level *l = &stack[--depth];
			int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (up < 0 || fstat(up, &st) < 0 || st.st_ino != l->ino ||
			    st.st_dev != l->dev) {
				if (up >= 0)
					close(up);
				free(l->name);
				errno = EXDEV;
				goto fail;
			}
			close(fd);
			fd = up;
			int u = unlinkat(fd, l->name, AT_REMOVEDIR);
			free(l->name);
			if (u < 0)
				goto fail;
			continue;
		}
		if (mnt_id(fd, name, &m) < 0)
			goto fail;
		if (m != mnt) {
			errbuf_set(err, errlen,
				   "cannot remove %s: a file system is mounted at %s in it "
				   "(unmount it, then remove it)",
				   top, name);
			goto out;
		}
		if (depth == cap) {
			struct level *n = realloc(stack, (cap = cap ? cap * 2 : 16) * sizeof(*n));
			if (!n)
				goto fail;
			stack = n;
		}
		int down = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (down < 0 || fstat(fd, &st) < 0 || !(stack[depth].name = strdup(name))) {
			if (down >= 0)
				close(down);
			goto fail;
		}
		stack[depth].ino = st.st_ino;
		stack[depth].dev = st.st_dev;
		depth++;
		fchmod(down, 0700);
		close(fd);
		fd = down;
	}
	close(fd);
	fd = -1;
	if (unlinkat(dirfd, top, AT_REMOVEDIR) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	errbuf_set(err, errlen, "cannot remove %s: %s (at %s)", top, strerror(errno),
		   depth ? stack[depth - 1].name : top);
out:
	while (depth)
		free(stack[--depth].name);
	free(stack);
	if (fd >= 0)
		close(fd);
	return rc;
}
