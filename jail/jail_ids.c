/* jail/jail_ids.c: whom a session's jailed processes run as (see jail.h): a uid/gid of the
 * session's own, leased with an flock so two live sessions never share one. */
#include "jail/jail.h"

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

/* Takes the lease on UID: 0, -EBUSY when another session holds it, or -errno. */
static int lease(struct jail_ids *ids, unsigned long uid)
{
	char path[64];

	snprintf(path, sizeof(path), "%s/%lu", JAIL_LEASE_DIR, uid);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno == EWOULDBLOCK ? EBUSY : errno;
		close(fd);
		return -e;
	}
	ids->lease_fd = fd;
	return 0;
}

/* "UID[:GID]", strict decimal, neither 0 nor the overflow id. */
static int parse_ids(const char *s, unsigned long *uid, unsigned long *gid)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*uid = strtoul(s, &end, 10);
	*gid = *uid;
	if (!errno && *end == ':' && end[1] >= '0' && end[1] <= '9')
		*gid = strtoul(end + 1, &end, 10);
	if (errno || *end || !*uid || !*gid || *uid >= 0xffffffffUL || *gid >= 0xffffffffUL)
		return -1;
	return 0;
}

int jail_ids_acquire(struct jail_ids *ids, const char *want, char *err, size_t errlen)
{
	unsigned long uid, gid;
	int rc = -EBUSY;

	ids->lease_fd = -1;
	ids->netns_fd = -1;
	ids->uid = geteuid();
	ids->gid = getegid();
	if (want && parse_ids(want, &uid, &gid) < 0) {
		snprintf(err, errlen, "--jail-uid %s: want UID or UID:GID, not 0", want);
		return -1;
	}
	if (ids->uid != 0) {
		/* A user namespace maps only ourselves: there is no other uid to take. */
		if (want && (uid != ids->uid || gid != ids->gid)) {
			snprintf(err, errlen,
				 "--jail-uid needs root (not root: the jail runs as you)");
			return -1;
		}
		return 0;
	}
	if (mkdir(JAIL_LEASE_DIR, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", JAIL_LEASE_DIR, strerror(errno));
		return -1;
	}
	if (want) {
		rc = lease(ids, uid);
		if (rc == -EBUSY)
			snprintf(err, errlen, "--jail-uid %lu: another session runs as that uid",
				 uid);
	} else {
		/* From a random start, so concurrent launchers rarely contend for one file. */
		unsigned start = 0;

		if (getrandom(&start, sizeof(start), 0) != (ssize_t)sizeof(start))
			start = (unsigned)getpid();
		for (unsigned i = 0; i < JAIL_UID_COUNT && rc == -EBUSY; i++) {
			uid = gid = JAIL_UID_FIRST + (start + i) % JAIL_UID_COUNT;
			rc = lease(ids, uid);
		}
		if (rc == -EBUSY)
			snprintf(err, errlen, "every jail uid from %u is in use (%u sessions)",
				 JAIL_UID_FIRST, JAIL_UID_COUNT);
	}
	if (rc < 0) {
		if (rc != -EBUSY)
			snprintf(err, errlen, "jail uid lease in %s: %s", JAIL_LEASE_DIR,
				 strerror(-rc));
		return -1;
	}
	ids->uid = (uid_t)uid;
	ids->gid = (gid_t)gid;
	return 0;
}

void jail_ids_release(struct jail_ids *ids)
{
	if (ids->netns_fd >= 0)
		close(ids->netns_fd);
	if (ids->lease_fd >= 0)
		close(ids->lease_fd); /* the file stays: unlocked, it is free */
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
