/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_reach.c: whether a host file is within a guest's reach through a share (see
 * share_reach.h). */
#include "session/share_reach.h"

#include <errno.h>
#include <fcntl.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A place in a file system: the file system (its device in the mount table) and the path
 * within it, whatever mount it is seen through. */
struct place {
	dev_t dev;
	char path[PATH_MAX];
};

/* The mount whose id is ID, or NULL. */
static struct libmnt_fs *mount_by_id(struct libmnt_table *tb, int id)
{
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs = NULL;

	while (it && mnt_table_next_fs(tb, it, &fs) == 0 && mnt_fs_get_id(fs) != id)
		;
	if (fs && mnt_fs_get_id(fs) != id)
		fs = NULL;
	mnt_free_iter(it);
	return fs;
}

/* FD's place (with NAME appended: what would be made in directory FD): the mount it is seen
 * through (statx's mount id), that mount's root in its file system, and the rest of FD's path
 * below the mount point. 0, or -1. */
static int place_of(struct libmnt_table *tb, int fd, const char *name, struct place *out)
{
	struct statx stx;
	char self[32], real[PATH_MAX];

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, real, sizeof(real) - 1);
	if (n <= 0 || (size_t)n >= sizeof(real) - 1)
		return -1;
	real[n] = '\0';
	struct libmnt_fs *fs = mount_by_id(tb, (int)stx.stx_mnt_id);
	const char *target = fs ? mnt_fs_get_target(fs) : NULL;
	const char *root = fs ? mnt_fs_get_root(fs) : NULL;
	if (real[0] != '/' || !target || !root)
		return -1;
	size_t tl = strlen(target);
	const char *rest = real;
	if (strcmp(target, "/") != 0) {
		if (strncmp(real, target, tl) != 0 || (real[tl] != '/' && real[tl] != '\0'))
			return -1;
		rest = real + tl;
	}
	int len = snprintf(out->path, sizeof(out->path), "%s%s%s%s", strcmp(root, "/") ? root : "",
			   rest, name ? "/" : "", name ? name : "");
	if (len < 0 || (size_t)len >= sizeof(out->path))
		return -1;
	if (!out->path[0])
		snprintf(out->path, sizeof(out->path), "/");
	out->dev = mnt_fs_get_devno(fs);
	return 0;
}

/* Whether PATH is DIR or beneath it. */
static bool beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strcmp(dir, "/") == 0 ||
	       (strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0'));
}

/* Opens PATH (O_PATH, following links as its reader will) or, when it does not exist yet, the
 * deepest directory on its way that does, with what lies beyond that in REST ("" when PATH
 * exists). The descriptor, or -errno. */
static int open_place(const char *path, char *rest, size_t restlen)
{
	char p[PATH_MAX];

	rest[0] = '\0';
	if (!path[0] || snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (;;) {
		int fd = open(p[0] ? p : ".", O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			const char *r = path + strlen(p);
			while (*r == '/')
				r++;
			if (snprintf(rest, restlen, "%s", r) >= (int)restlen) {
				close(fd);
				return -ENAMETOOLONG;
			}
			return fd;
		}
		if (errno != ENOENT || !p[0])
			return -errno;
		char *slash = strrchr(p, '/');
		if (!slash)
			p[0] = '\0'; /* a relative name: the working directory */
		else if (slash == p && p[1])
			p[1] = '\0';
		else if (slash == p)
			return -ENOENT;
		else
			*slash = '\0';
	}
}

struct share_mounts {
	struct libmnt_table *tb;
};

struct share_mounts *share_mounts_read(char *err, size_t errlen)
{
	struct share_mounts *m = calloc(1, sizeof(*m));

	if (m)
		m->tb = mnt_new_table_from_file("/proc/self/mountinfo");
	if (!m || !m->tb) {
		free(m);
		snprintf(err, errlen, "cannot read the mount table (/proc/self/mountinfo)");
		return NULL;
	}
	return m;
}

void share_mounts_free(struct share_mounts *m)
{
	if (m)
		mnt_unref_table(m->tb);
	free(m);
}

int share_reaches(const struct share_mounts *m, const char *share_dir, const char *path, char *err,
		  size_t errlen)
{
	struct libmnt_table *tb = m->tb;
	char name[PATH_MAX];
	struct place file, share;
	struct stat st;
	int fd = -1, sfd = -1, rc = -1;

	fd = open_place(path, name, sizeof(name));
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-fd));
		goto out;
	}
	sfd = open(share_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || fstat(fd, &st) < 0 || place_of(tb, fd, name[0] ? name : NULL, &file) < 0 ||
	    place_of(tb, sfd, NULL, &share) < 0) {
		snprintf(err, errlen, "%s: cannot tell where it is beside the share %s", path,
			 share_dir);
		goto out;
	}
	/* Other names of a regular file cannot be listed: any on a file system the share
	 * reaches could be inside it. */
	bool linked = !name[0] && S_ISREG(st.st_mode) && st.st_nlink > 1;
	rc = file.dev == share.dev && (beneath(file.path, share.path) || linked);
	/* Mounts inside the share are the guest's too: a directory or a file bound there. */
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	size_t sl = strlen(share_dir);
	while (!rc && it && mnt_table_next_fs(tb, it, &fs) == 0) {
		const char *target = mnt_fs_get_target(fs), *root = mnt_fs_get_root(fs);
		if (!target || !root || strncmp(target, share_dir, sl) != 0 ||
		    (target[sl] != '/' && strcmp(share_dir, "/") != 0))
			continue;
		if (file.dev == mnt_fs_get_devno(fs) && (beneath(file.path, root) || linked))
			rc = 1;
	}
	mnt_free_iter(it);
out:
	if (fd >= 0)
		close(fd);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
