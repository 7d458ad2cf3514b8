/* SPDX-License-Identifier: Apache-2.0 */
/* image/work.c: work in progress under tmp/ — each entry is owned by whoever holds the flock of
 * its .lock (inherited by the tools it runs, so a tool outliving a killed bulkhead still owns
 * it), removed without crossing mounts, and published by one rename. */
#include "image/image_internal.h"

#include "lib/mono.h"
#include "lib/errbuf.h"
#include "lib/tree_remove.h"

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
		if (tree_remove(tmpfd, e->d_name, err, sizeof(err)) < 0)
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
	if (tmpfd >= 0 && tree_remove(tmpfd, slash + 1, err, sizeof(err)) < 0)
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
		    uint64_t t0_ns, bool existed)
{
	printf("%s %s: %.1f MiB in %.1f s, %s%s\n", verb, name, (double)m->size / (1 << 20),
	       (double)(mono_ns() - t0_ns) / 1e9,
	       m->digest, existed ? " (already in the store)" : "");
}
