/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_root.c: what a jailed process sees of the host's files (see jail.h): an empty
 * read-only root holding only its mounts and links, or, without one, its mounts bound over
 * themselves in a mount namespace of its own. Every mount is a copy of that one mount alone
 * (what is mounted below it stays out) and never set-user-ID. */
#include "jail/jail_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int jail_open_nofollow(const char *path, int flags)
{
	struct open_how how = { .flags = (unsigned)(O_PATH | O_CLOEXEC | flags),
				.resolve = RESOLVE_NO_SYMLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* mkdir -p for PATH's directories (and PATH itself unless it is a file to create). */
static int make_path(const char *path, bool file)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (file) {
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* M's source: *at, the path (O_PATH), and *tree, a detached copy of its mount alone with the
 * spec's attributes; both -1 for an optional source the host lacks. 0 or -errno. */
static int open_source(const struct jail_spec *s, const struct jail_mount *m, int *at, int *tree,
		       char *step, size_t steplen)
{
	struct mount_attr a = {
		.attr_set = MOUNT_ATTR_NOSUID | (m->flags & JAIL_MOUNT_RW ? 0 : MOUNT_ATTR_RDONLY) |
			    (m->flags & JAIL_MOUNT_DEV ? 0 : MOUNT_ATTR_NODEV),
	};
	struct stat st;
	unsigned uid = s->map_root ? (unsigned)s->map_root->uid : 0;

	*tree = -1;
	*at = m->flags & JAIL_MOUNT_SAME ? jail_open_nofollow(m->src, 0)
					 : open(m->src, O_PATH | O_CLOEXEC);
	if (*at < 0 && !(m->flags & JAIL_MOUNT_SAME))
		*at = -errno;
	if (*at == -ENOENT && (m->flags & JAIL_MOUNT_OPTIONAL))
		return 0;
	if (*at < 0 || fstat(*at, &st) < 0) {
		if (s->map_root)
			snprintf(step, steplen, "uid %u cannot open %s", uid, m->src);
		else
			snprintf(step, steplen, "cannot open %s", m->src);
		return *at < 0 ? *at : -errno;
	}
	/* Still what the launcher judged: nothing swapped in since. */
	if ((m->flags & JAIL_MOUNT_SAME) && (st.st_dev != m->dev || st.st_ino != m->ino)) {
		snprintf(step, steplen, "%s changed after it was checked", m->src);
		return -ESTALE;
	}
	/* The namespace's root is another user outside, who may not open what root could: say
	 * so here rather than let the program fail (it works as that user). */
	if (s->map_root &&
	    faccessat(*at, "", R_OK | (S_ISDIR(st.st_mode) ? X_OK : 0), AT_EMPTY_PATH) < 0) {
		snprintf(step, steplen, "uid %u cannot open %s", uid, m->src);
		return -errno;
	}
	if (m->flags & JAIL_MOUNT_TREE) {
		*tree = fcntl(m->tree_fd, F_DUPFD_CLOEXEC, 3);
		if (*tree < 0) {
			snprintf(step, steplen, "mount over %s", m->src);
			return -errno;
		}
		return 0;
	}
	*tree = open_tree(*at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (*tree < 0 || mount_setattr(*tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
		snprintf(step, steplen, "mount %s", m->src);
		return -errno;
	}
	return 0;
}

/* Without an empty root: each mount over its own path, in our own mount namespace. */
static int bind_in_place(const struct jail_spec *s, char *step, size_t steplen)
{
	for (size_t i = 0; i < s->nmounts; i++) {
		int at, tree, rc = open_source(s, &s->mounts[i], &at, &tree, step, steplen);

		if (!rc && tree >= 0 &&
		    move_mount(tree, "", at, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
			snprintf(step, steplen, "mount %s", s->mounts[i].src);
			rc = -errno;
		}
		if (rc < 0)
			return rc;
		if (tree >= 0)
			close(tree);
		if (at >= 0)
			close(at);
	}
	return 0;
}

/* A new root: a tmpfs holding the spec's mounts and links; the old root detached; the tmpfs
 * made read-only. Every source is opened (cloned) before anything covers it. */
static int make_root(const struct jail_spec *s, char *step, size_t steplen)
{
	static const char top[] = "/tmp"; /* any directory will do: it is covered, not used */
	int trees[JAIL_MOUNTS_MAX], rc;
	size_t i;

	for (i = 0; i < s->nmounts; i++) {
		int at;

		if ((rc = open_source(s, &s->mounts[i], &at, &trees[i], step, steplen)) < 0)
			return rc;
		if (at >= 0)
			close(at);
	}
	snprintf(step, steplen, "empty root");
	if (mount("jail", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
		return -errno;
	for (i = 0; i < s->nmounts; i++) {
		const struct jail_mount *m = &s->mounts[i];
		struct stat st;
		char at[PATH_MAX + 8];

		if (trees[i] < 0)
			continue;
		snprintf(at, sizeof(at), "%s%s", top, m->dst ? m->dst : m->src);
		if (fstat(trees[i], &st) < 0)
			return -errno;
		rc = make_path(at, !S_ISDIR(st.st_mode));
		if (rc < 0)
			return rc;
		if (move_mount(trees[i], "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		close(trees[i]);
	}
	for (i = 0; i < s->nlinks; i++) {
		char at[PATH_MAX + 8];

		snprintf(at, sizeof(at), "%s%s", top, s->links[2 * i]);
		if (symlink(s->links[2 * i + 1], at) < 0)
			return -errno;
	}
	if (mkdir("/tmp/.old", 0700) < 0 || syscall(SYS_pivot_root, top, "/tmp/.old") < 0 ||
	    chdir("/") < 0 || umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0 ||
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		    0)
		return -errno;
	return 0;
}

int jail_root_build(const struct jail_spec *s, char *step, size_t steplen)
{
	if (!s->empty_root && !s->nmounts)
		return 0; /* the host's tree, as it is (tests only) */
	snprintf(step, steplen, "make mounts private");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return s->empty_root ? make_root(s, step, steplen) : bind_in_place(s, step, steplen);
}
