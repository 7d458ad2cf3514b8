/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_ids.h: whom a session's jailed processes run as. Started as root, a uid/gid of the
 * session's own, leased with an flock so that two live sessions never share one (no shared
 * keyring, rlimit or file); not root, our own ids (a user namespace maps only them). */
#ifndef BULKHEAD_JAIL_JAIL_IDS_H
#define BULKHEAD_JAIL_JAIL_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <sys/types.h>

/* Leased from [JAIL_UID_FIRST, JAIL_UID_FIRST + JAIL_UID_COUNT) (unused by Debian and by
 * systemd's ranges); --jail-uid picks one explicitly. The lease is an flock on
 * <JAIL_LEASE_DIR>/<uid>, held by the launcher for the session's life. */
#define JAIL_UID_FIRST 2063597568u /* 0x7b000000 */
#define JAIL_UID_COUNT 65536u
#define JAIL_LEASE_DIR "/run/bulkhead-jail-uids"

struct jail_ids {
	uid_t uid;
	gid_t gid;
	int lease_fd;		   /* holds the uid for this session (-1: none, not root) */
	char lease_path[PATH_MAX]; /* its lock file, removed when the lease ends */
	int netns_fd; /* the session's empty network namespace once made (-1: not yet) */
};
#define JAIL_IDS_INIT                                                                              \
	{                                                                                          \
		.lease_fd = -1, .netns_fd = -1                                                     \
	}

/* Where leases are taken: a directory of lock files and the range a free uid comes from. */
struct jail_lease {
	const char *dir;
	unsigned first, count;
};
#define JAIL_LEASE_DEFAULT                                                                         \
	{                                                                                          \
		.dir = JAIL_LEASE_DIR, .first = JAIL_UID_FIRST, .count = JAIL_UID_COUNT            \
	}

/* "UID[:GID]" (--jail-uid): strict decimal, GID defaulting to UID, neither 0 nor the overflow
 * id 4294967295 nor beyond. 0, or -1 for anything else. */
int jail_ids_parse(const char *s, uid_t *uid, gid_t *gid);

/* Leases the session's ids: WANT is "UID[:GID]" (--jail-uid) or NULL for the next free one.
 * Not root: our own ids (the user namespace maps only them). 0, or -1 with why in err. */
int jail_ids_acquire(struct jail_ids *ids, const char *want, char *err, size_t errlen);
/* The lease itself, in L's directory (made if missing) and range, whoever we are. */
int jail_ids_lease(struct jail_ids *ids, const struct jail_lease *l, const char *want, char *err,
		   size_t errlen);
/* Frees the lease (the file stays: unlocked, it is free) and the network namespace. */
void jail_ids_release(struct jail_ids *ids);
/* Gives DIR and everything directly in it (sockets) to the jail's ids. 0 or -errno. */
int jail_ids_give_dir(const struct jail_ids *ids, const char *dir);
/* Whether the jail's ids may read (or, with WRITE, write) PATH by its own mode bits. */
bool jail_ids_can_open(const struct jail_ids *ids, const char *path, bool write);

#endif
