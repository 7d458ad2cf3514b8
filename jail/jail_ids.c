/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_ids.c: whom a session's jailed processes run as (see jail_ids.h): a uid/gid of the
 * session's own, leased with an flock so two live sessions never share one. */
#include "jail/jail_ids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Takes the lease on UID in DIR: 0, -EBUSY when another session holds it, or -errno.
 * A lease's file lives only while it is held (jail_ids_release removes it, still locked), so
 * the directory does not grow with every session ever run. A lock taken on a file that its
 * holder removed meanwhile is worth nothing: the lock must be on the file the path names now. */
static int lease(struct jail_ids *ids, const char *dir, unsigned long uid)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%lu", dir, uid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno == EWOULDBLOCK ? EBUSY : errno;
			close(fd);
			return -e;
		}
		struct stat held, named;
		if (fstat(fd, &held) == 0 && lstat(path, &named) == 0 &&
		    held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
			ids->lease_fd = fd;
			snprintf(ids->lease_path, sizeof(ids->lease_path), "%s", path);
			return 0;
		}
		close(fd); /* its holder ended and removed it between our open and our lock */
	}
	return -EBUSY;
}

int jail_ids_parse(const char *s, uid_t *uid, gid_t *gid)
{
	unsigned long u, g;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	u = strtoul(s, &end, 10);
	g = u;
	if (!errno && *end == ':' && end[1] >= '0' && end[1] <= '9')
		g = strtoul(end + 1, &end, 10);
	if (errno || *end || !u || !g || u >= 0xffffffffUL || g >= 0xffffffffUL)
		return -1;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int jail_ids_lease(struct jail_ids *ids, const struct jail_lease *l, const char *want, char *err,
		   size_t errlen)
{
	uid_t uid = 0;
	gid_t gid = 0;
	int rc = -EBUSY;

	if (want && jail_ids_parse(want, &uid, &gid) < 0) {
		snprintf(err, errlen, "--jail-uid %s: want UID or UID:GID, not 0", want);
		return -1;
	}
	if (mkdir(l->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", l->dir, strerror(errno));
		return -1;
	}
	if (want) {
		rc = lease(ids, l->dir, uid);
		if (rc == -EBUSY)
			snprintf(err, errlen, "--jail-uid %u: another session runs as that uid",
				 (unsigned)uid);
	} else if (l->count) {
		/* From a random start, so concurrent launchers rarely contend for one file. */
		unsigned start = 0;

		if (getrandom(&start, sizeof(start), 0) != (ssize_t)sizeof(start))
			start = (unsigned)getpid();
		for (unsigned i = 0; i < l->count && rc == -EBUSY; i++) {
			uid = gid = l->first + (start + i) % l->count;
			rc = lease(ids, l->dir, uid);
		}
	}
	if (rc == -EBUSY && !want)
		snprintf(err, errlen, "every jail uid from %u is in use (%u sessions)", l->first,
			 l->count);
	if (rc < 0) {
		if (rc != -EBUSY)
			snprintf(err, errlen, "jail uid lease in %s: %s", l->dir, strerror(-rc));
		return -1;
	}
	ids->uid = uid;
	ids->gid = gid;
	return 0;
}

int jail_ids_acquire(struct jail_ids *ids, const char *want, char *err, size_t errlen)
{
	static const struct jail_lease host = JAIL_LEASE_DEFAULT;
	uid_t uid;
	gid_t gid;

	ids->lease_fd = -1;
	ids->netns_fd = -1;
	ids->uid = geteuid();
	ids->gid = getegid();
	if (want && jail_ids_parse(want, &uid, &gid) < 0) {
		snprintf(err, errlen, "--jail-uid %s: want UID or UID:GID, not 0", want);
		return -1;
	}
	if (ids->uid == 0)
		return jail_ids_lease(ids, &host, want, err, errlen);
	/* A user namespace maps only ourselves: there is no other uid to take. */
	if (want && (uid != ids->uid || gid != ids->gid)) {
		snprintf(err, errlen, "--jail-uid needs root (not root: the jail runs as you)");
		return -1;
	}
	return 0;
}

void jail_ids_release(struct jail_ids *ids)
{
	if (ids->netns_fd >= 0)
		close(ids->netns_fd);
	if (ids->lease_fd >= 0) {
		/* Removed while still locked: whoever opens it later finds another file at the
		 * path and takes the lease there (lease()). */
		if (ids->lease_path[0])
			unlink(ids->lease_path);
		close(ids->lease_fd);
	}
	ids->lease_path[0] = '\0';
	ids->netns_fd = ids->lease_fd = -1;
}

int jail_ids_give_dir(const struct jail_ids *ids, const char *dir)
{
	if (ids->uid == geteuid())
		return 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	int rc = fchown(dfd, ids->uid, ids->gid) < 0 ? -errno : 0;
	struct dirent *e;
	while (!rc && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    fchownat(dfd, e->d_name, ids->uid, ids->gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != ENOENT)
			rc = -errno;
	closedir(d);
	return rc;
}

bool jail_ids_can_open(const struct jail_ids *ids, const char *path, bool write)
{
	struct stat st;
	mode_t want = write ? S_IWOTH : S_IROTH;

	if (stat(path, &st) < 0)
		return false;
	if (st.st_uid == ids->uid)
		return st.st_mode & (want << 6);
	if (st.st_gid == ids->gid)
		return st.st_mode & (want << 3);
	return st.st_mode & want;
}
