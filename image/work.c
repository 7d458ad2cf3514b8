/* SPDX-License-Identifier: Apache-2.0 */
/* image/work.c: work in progress under tmp/ — each entry is owned by whoever holds the flock of
 * its .lock (inherited by the tools it runs, so a tool outliving a killed bulkhead still owns
 * it), removed without crossing mounts, and published by one rename. */
#include "image/image_int.h"
#include "lib/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_SECONDS 3600

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
int image_tree_remove(int dirfd, const char *top, char *err, size_t errlen)
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

/* An entry is stale when its .lock is free, or when it has none and is old. */
static int entry_stale(int tmpfd, const char *name)
{
	char lock[300];
	struct stat st;

	snprintf(lock, sizeof(lock), "%s/.lock", name);
	int fd = openat(tmpfd, lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		int free_lock = flock(fd, LOCK_EX | LOCK_NB) == 0;
		close(fd);
		return free_lock;
	}
	return fstatat(tmpfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       time(NULL) - st.st_mtime > STALE_SECONDS;
}

void image_work_sweep(struct image_store *s)
{
	int tmpfd = openat(s->fd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = tmpfd < 0 ? NULL : fdopendir(tmpfd);
	struct dirent *e;
	char err[512];

	if (!d) {
		if (tmpfd >= 0)
			close(tmpfd);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !entry_stale(tmpfd, e->d_name))
			continue;
		fprintf(stderr, "bulkhead image: removing stale work directory tmp/%s\n",
			e->d_name);
		if (image_tree_remove(tmpfd, e->d_name, err, sizeof(err)) < 0)
			fprintf(stderr, "bulkhead image: %s\n", err);
	}
	closedir(d);
}

int image_work_begin(struct image_store *s, const char *kind, struct image_work *w, char *err,
		     size_t errlen)
{
	char lockpath[PATH_MAX + 16];

	w->fd = w->lockfd = -1;
	snprintf(w->dir, sizeof(w->dir), "%s/tmp/%s-XXXXXX", s->dir, kind);
	if (!mkdtemp(w->dir))
		return errbuf_fail(err, errlen, -1,
				   "cannot create a work directory in %s/tmp: %s%s", s->dir,
				   strerror(errno), image_store_space(s, 0));
	w->fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Locked before it has its name, so a sweep never sees an unlocked .lock of ours. The
	 * descriptor is inherited by our tools on purpose (no O_CLOEXEC). */
	snprintf(lockpath, sizeof(lockpath), "%s/.lock-new", w->dir);
	w->lockfd = open(lockpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (w->fd < 0 || w->lockfd < 0 || flock(w->lockfd, LOCK_EX) < 0 ||
	    renameat(w->fd, ".lock-new", w->fd, ".lock") < 0) {
		errbuf_set(err, errlen, "cannot set up %s: %s%s", w->dir, strerror(errno),
			   image_store_space(s, 0));
		image_work_end(w);
		return -1;
	}
	return 0;
}

void image_work_end(struct image_work *w)
{
	char err[512], *slash = strrchr(w->dir, '/');
	int tmpfd;

	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (!slash || !w->dir[0])
		return;
	*slash = '\0';
	tmpfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*slash = '/';
	if (tmpfd >= 0 && image_tree_remove(tmpfd, slash + 1, err, sizeof(err)) < 0)
		fprintf(stderr, "bulkhead image: %s\n", err);
	if (tmpfd >= 0)
		close(tmpfd);
	if (w->lockfd >= 0)
		close(w->lockfd);
	w->lockfd = -1;
	w->dir[0] = '\0';
}

void image_work_failed(const struct image_store *s, const struct image_work *w, char *err,
		       size_t errlen)
{
	size_t n = strlen(err);
	if (!strstr(err, "MiB free)") && w->dir[0])
		snprintf(err + n, errlen - n, "%s", image_store_space(s, image_du(w->dir)));
}

void image_say_done(const char *verb, const char *name, const struct image_meta *m,
		    const struct timespec *t0, bool existed)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s %s: %.1f MiB in %.1f s, %s%s\n", verb, name, (double)m->size / (1 << 20),
	       (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9,
	       m->digest, existed ? " (already in the store)" : "");
}
