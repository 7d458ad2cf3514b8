/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_rules_apply.c: a share's rules put in place in virtiofsd's mount namespace
 * (share_rules.h), in the jailed child before virtiofsd starts: the share is already bound over
 * itself there, and virtiofsd's own sandbox later binds the share recursively, these mounts
 * included. Every path is resolved beneath the share with no symbolic link; the sources of
 * ro and rw binds are opened before any rule is applied, so each is the real directory or
 * file, not what an earlier rule put over it. Nothing here allocates: it runs in a child of
 * the launcher. */
#include "session/share_rules.h"
#include "session/share_scan.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RULES_APPLY_MAX (SHARE_RULES_MAX + SHARE_SCAN_FOUND)

/* REL beneath DIRFD (any mount on the way: earlier rules' mounts are crossed on purpose). */
static int at(int dirfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	while ((fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how))) < 0 && errno == EAGAIN)
		;
	return fd < 0 ? -errno : (int)fd;
}

/* The covers' tmpfs, detached: one entry "cN" per hidden rule N (an empty directory, or a file
 * holding the rule's clean text), and inside each the skeleton of the deeper rules under it,
 * so that they have somewhere to go. The mount's descriptor, or -errno. */
static int covers(const struct share_rules *rs, char *step, size_t steplen)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), mnt = -1, rc = 0;

	snprintf(step, steplen, "the covers of hidden paths (tmpfs)");
	if (fs < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", "16m", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) < 0) {
		rc = -errno;
		close(fs);
		return rc;
	}
	close(fs);
	for (size_t i = 0; !rc && i < rs->n; i++) {
		const struct share_rule *h = &rs->r[i];
		char name[PATH_MAX];

		if (h->mode != SHARE_MODE_HIDDEN)
			continue;
		snprintf(name, sizeof(name), "c%zu", i);
		snprintf(step, steplen, "the cover of %s", h->path);
		if (h->dir) {
			if (mkdirat(mnt, name, 0755) < 0)
				rc = -errno;
		} else {
			int f = openat(mnt, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);

			if (f < 0)
				rc = -errno;
			else if (h->clean_n && write(f, h->clean, h->clean_n) != (ssize_t)h->clean_n)
				rc = -EIO;
			if (f >= 0)
				close(f);
		}
		/* The deeper rules under it: their ways made in the cover. */
		size_t hl = strlen(h->path);

		for (size_t j = i + 1; !rc && h->dir && j < rs->n; j++) {
			const struct share_rule *d = &rs->r[j];
			char p[PATH_MAX];

			if (strncmp(d->path, h->path, hl) || d->path[hl] != '/')
				continue;
			snprintf(p, sizeof(p), "%s%s", name, d->path + hl);
			for (char *s = p + strlen(name) + 1;; s++) {
				int end = *s == '\0';

				if (*s != '/' && !end)
					continue;
				*s = '\0';
				if (end && !d->dir) {
					int f = openat(mnt, p, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);

					if (f < 0)
						rc = -errno;
					else
						close(f);
				} else if (mkdirat(mnt, p, 0755) < 0 && errno != EEXIST) {
					rc = -errno;
				}
				if (end || rc)
					break;
				*s = '/';
			}
		}
	}
	if (rc) {
		close(mnt);
		return rc;
	}
	return mnt;
}

/* Whether PREFIX (LEN bytes) is a rule's path, or an ancestor of rule I's earlier met. */
static bool pinned_before(const struct share_rules *rs, size_t i, const char *prefix, size_t len)
{
	for (size_t j = 0; j < rs->n; j++) {
		const char *p = rs->r[j].path;

		if (strlen(p) == len && !strncmp(p, prefix, len))
			return true; /* a rule's own mount holds it */
		if (j < i && strlen(p) > len && !strncmp(p, prefix, len) && p[len] == '/')
			return true; /* pinned for an earlier rule */
	}
	return false;
}

/* Every directory on a rule's way (below the share's top, not a rule itself) bound over itself,
 * as it is, before any rule: a mount point cannot be renamed or removed (EBUSY), so the guest
 * cannot move a rule's parent aside and put a directory of its own where the rule was (nor,
 * for the next session, move a hidden file out from under its rule). Done first: a bind made
 * after a rule would copy the directory without the rule's mount under it. */
static int pin_ways(int share, const struct share_rules *rs, char *step, size_t steplen)
{
	for (size_t i = 0; i < rs->n; i++) {
		const char *p = rs->r[i].path;

		for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
			char way[PATH_MAX];
			size_t len = (size_t)(s - p);
			int dir, tree, rc = 0;

			if (len >= sizeof(way) || pinned_before(rs, i, p, len))
				continue;
			memcpy(way, p, len);
			way[len] = '\0';
			snprintf(step, steplen, "the way to rule %s: %s", p, way);
			dir = at(share, way, O_PATH | O_DIRECTORY);
			if (dir == -ENOENT)
				break; /* nothing there to move; deeper ones are not there either */
			if (dir < 0)
				return dir;
			tree = open_tree(dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
			if (tree < 0 || move_mount(tree, "", dir, "",
						   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
				rc = -errno;
			if (tree >= 0)
				close(tree);
			close(dir);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int share_rules_apply(const void *arg, char *step, size_t steplen)
{
	const struct share_rules *rs = arg;
	int src[RULES_APPLY_MAX], share, cov = -1, rc = 0;
	size_t i;
	bool hidden = false;

	if (rs->n > RULES_APPLY_MAX)
		return snprintf(step, steplen, "share rules: too many"), -E2BIG;
	snprintf(step, steplen, "share %s", rs->share);
	if ((share = open(rs->share, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	for (i = 0; i < rs->n; i++) {
		src[i] = -1;
		hidden |= rs->r[i].mode == SHARE_MODE_HIDDEN;
		if (!rc && rs->r[i].mode != SHARE_MODE_HIDDEN) {
			snprintf(step, steplen, "rule %s", rs->r[i].path);
			src[i] = at(share, rs->r[i].path, O_PATH);
			rc = src[i] < 0 ? src[i] : 0;
		}
	}
	if (!rc)
		rc = pin_ways(share, rs, step, steplen);
	if (!rc && hidden)
		rc = (cov = covers(rs, step, steplen)) < 0 ? cov : 0;
	for (i = 0; !rc && i < rs->n; i++) {
		const struct share_rule *r = &rs->r[i];
		struct mount_attr a = {
			.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				    (r->mode == SHARE_MODE_RW ? 0 : MOUNT_ATTR_RDONLY),
			.attr_clr = r->mode == SHARE_MODE_RW ? MOUNT_ATTR_RDONLY : 0,
		};
		char name[32];
		int tree, dst;

		snprintf(step, steplen, "rule %s:%s", r->path, share_mode_name(r->mode));
		snprintf(name, sizeof(name), "c%zu", i);
		tree = r->mode == SHARE_MODE_HIDDEN
			       ? open_tree(cov, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)
			       : open_tree(src[i], "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
							       AT_EMPTY_PATH);
		if (tree < 0) {
			rc = -errno;
			break;
		}
		dst = at(share, r->path, O_PATH);
		if (dst < 0 || mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0 ||
		    move_mount(tree, "", dst, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			rc = dst < 0 ? dst : -errno;
		close(tree);
		if (dst >= 0)
			close(dst);
	}
	for (i = 0; i < rs->n; i++)
		if (src[i] >= 0)
			close(src[i]);
	if (cov >= 0)
		close(cov);
	close(share);
	return rc;
}
