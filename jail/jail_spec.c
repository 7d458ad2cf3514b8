/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_spec.c: whether a spec is one the jail can follow (see jail.h), checked in the
 * launcher before anything starts, so that a mistake in a caller is an error with a reason and
 * not a child that fails half-way through its set-up. */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define JAIL_MOUNT_FLAGS                                                                           \
	(JAIL_MOUNT_RW | JAIL_MOUNT_DEV | JAIL_MOUNT_OPTIONAL | JAIL_MOUNT_SAME | JAIL_MOUNT_TREE)

static bool absolute(const char *p)
{
	return p && p[0] == '/';
}

static int check_mount(const struct jail_spec *s, const struct jail_mount *m, char *err,
		       size_t errlen)
{
	const char *where = m->dst ? m->dst : m->src;

	/* The source may be relative (a --kernel the user named): it is opened as it stands,
	 * before anything moves. Where it goes must be a place in the root. */
	if (!m->src || !m->src[0]) {
		snprintf(err, errlen, "a mount without a source");
		return -EINVAL;
	}
	if (!s->empty_root && m->dst) {
		snprintf(err, errlen, "mount %s: without an empty root it is bound over itself",
			 m->src);
		return -EINVAL;
	}
	if (s->empty_root && !absolute(where)) {
		snprintf(err, errlen, "mount %s: its place in the root must be an absolute path",
			 m->src);
		return -EINVAL;
	}
	if (!strcmp(where, "/")) {
		snprintf(err, errlen, "mount %s: not over the root itself", m->src);
		return -EINVAL;
	}
	if (m->flags & ~JAIL_MOUNT_FLAGS) {
		snprintf(err, errlen, "mount %s: unknown flags %#x", m->src, m->flags);
		return -EINVAL;
	}
	if ((m->flags & JAIL_MOUNT_SAME) && !m->ino) {
		snprintf(err, errlen, "mount %s: JAIL_MOUNT_SAME without the inode to compare",
			 m->src);
		return -EINVAL;
	}
	/* Above the handed-over range: descriptors 3.. are overwritten before the root is built. */
	if ((m->flags & JAIL_MOUNT_TREE) &&
	    ((m->flags & JAIL_MOUNT_SAME) || m->tree_fd < JAIL_TREE_FD_MIN ||
	     fcntl(m->tree_fd, F_GETFD) < 0)) {
		snprintf(err, errlen,
			 "mount %s: JAIL_MOUNT_TREE wants an open tree_fd of at least %d (and no "
			 "SAME)",
			 m->src, JAIL_TREE_FD_MIN);
		return -EINVAL;
	}
	return 0;
}

static int check_fd(int fd, const char *what, char *err, size_t errlen)
{
	if (fd >= 0 && fcntl(fd, F_GETFD) >= 0)
		return 0;
	snprintf(err, errlen, "%s %d is not an open descriptor", what, fd);
	return -EBADF;
}

int jail_spec_check(const struct jail_spec *s, char *err, size_t errlen)
{
	int rc = 0;

	if (!s->ids && !s->map_root) {
		snprintf(err, errlen, "neither ids nor a user namespace to run as");
		return -EINVAL;
	}
	if (s->map_root && s->map_root->count > 1 && geteuid() != 0) {
		snprintf(err, errlen, "a user namespace mapping %u ids needs a privileged launcher",
			 s->map_root->count);
		return -EPERM;
	}
	if (s->lock_mounts && (!s->map_root || s->map_root->count > 1 || s->empty_root)) {
		snprintf(err, errlen, "locked mounts need map_root of one id, without an empty root");
		return -EINVAL;
	}
	if (s->nmounts > JAIL_MOUNTS_MAX || s->nlinks > JAIL_LINKS_MAX || s->nfds > JAIL_FDS_MAX) {
		snprintf(err, errlen,
			 "too many mounts (%zu of %d), links (%zu of %d) or descriptors "
			 "(%zu of %d)",
			 s->nmounts, JAIL_MOUNTS_MAX, s->nlinks, JAIL_LINKS_MAX, s->nfds,
			 JAIL_FDS_MAX);
		return -E2BIG;
	}
	if ((s->nmounts && !s->mounts) || (s->nlinks && !s->links) || (s->nfds && !s->fds)) {
		snprintf(err, errlen, "a count without its list");
		return -EINVAL;
	}
	for (size_t i = 0; !rc && i < s->nmounts; i++)
		rc = check_mount(s, &s->mounts[i], err, errlen);
	if (!rc && s->nlinks && !s->empty_root) {
		snprintf(err, errlen, "links need an empty root");
		rc = -EINVAL;
	}
	for (size_t i = 0; !rc && i < s->nlinks; i++)
		if (!absolute(s->links[2 * i]) || !strcmp(s->links[2 * i], "/") ||
		    !s->links[2 * i + 1] || !s->links[2 * i + 1][0]) {
			snprintf(err, errlen, "link %zu: an absolute path and a target", i);
			rc = -EINVAL;
		}
	for (size_t i = 0; !rc && i < s->nfds; i++)
		rc = check_fd(s->fds[i], "descriptor to hand over", err, errlen);
	if (!rc)
		rc = check_fd(s->out_fd, "stdout", err, errlen);
	if (!rc)
		rc = check_fd(s->diag_fd, "stderr", err, errlen);
	return rc;
}
