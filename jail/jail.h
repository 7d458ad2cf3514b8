/* jail/jail.h: the jail step for the processes that touch guest data (the VM process and
 * bulkhead-vsock). Each starts in fresh PID, IPC, UTS and mount namespaces and an empty network
 * namespace (the session's two jailed processes share one), in an empty read-only root that
 * holds only what it was given, as the session's own unprivileged uid/gid (a user namespace
 * mapping only ourselves when not started as root), with no capabilities (bounding set emptied,
 * root's exec-time caps refused by securebits), no_new_privs, an empty environment, only the
 * descriptors it is handed, and tight rlimits. The process then installs its own seccomp
 * allow-list once set up (vsock/seccomp.c, vmm/seccomp.c), before the guest's first byte. */
#ifndef BULKHEAD_JAIL_JAIL_H
#define BULKHEAD_JAIL_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Started as root, a session's jailed processes run as a uid/gid of their own, leased from
 * [JAIL_UID_FIRST, JAIL_UID_FIRST + JAIL_UID_COUNT) (unused by Debian and by systemd's
 * ranges) so no two sessions share one: no shared keyring, rlimit or file. --jail-uid picks
 * one explicitly. The lease is an flock on <JAIL_LEASE_DIR>/<uid>, held by the launcher. */
#define JAIL_UID_FIRST 2063597568u /* 0x7b000000 */
#define JAIL_UID_COUNT 65536u
#define JAIL_LEASE_DIR "/run/bulkhead-jail-uids"

struct jail_ids {
	uid_t uid;
	gid_t gid;
	int lease_fd; /* holds the uid for this session (-1: none, not root) */
	int netns_fd; /* the session's empty network namespace once made (-1: not yet) */
};
#define JAIL_IDS_INIT                                                                              \
	{                                                                                          \
		.lease_fd = -1, .netns_fd = -1                                                     \
	}

/* Leases the session's ids: WANT is "UID[:GID]" (--jail-uid) or NULL for the next free one.
 * Not root: our own ids (the user namespace maps only them). 0, or -1 with why in err. */
int jail_ids_acquire(struct jail_ids *ids, const char *want, char *err, size_t errlen);
void jail_ids_release(struct jail_ids *ids);
/* Gives DIR and everything directly in it (sockets) to the jail's ids. 0 or -errno. */
int jail_ids_give_dir(const struct jail_ids *ids, const char *dir);
/* Whether the jail's ids may read (or, with WRITE, write) PATH by its own mode bits. */
bool jail_ids_can_open(const struct jail_ids *ids, const char *path, bool write);

/* A path of the host placed in the jail's root. */
struct jail_mount {
	const char *src; /* on the host */
	const char *dst; /* inside (NULL: the same path) */
	unsigned flags;
};
#define JAIL_MOUNT_RW	    1u /* writable (else read-only) */
#define JAIL_MOUNT_DEV	    2u /* a device node: keep it usable */
#define JAIL_MOUNT_OPTIONAL 4u /* skip when the host has no such path */

struct jail_spec {
	struct jail_ids *ids;
	/* An empty root holding only MOUNTS and LINKS (pairs: path, target); without it the
	 * host's tree stays visible (used by nothing but tests). */
	bool empty_root;
	const struct jail_mount *mounts;
	size_t nmounts;
	const char *const *links;
	size_t nlinks;
	gid_t extra_gid;  /* a supplementary group to keep, e.g. /dev/kvm's ((gid_t)-1: none) */
	bool file_writes; /* files may grow (a VM process sizes its guest RAM's memfd) */
	const int *fds;	  /* handed over as descriptors 3, 4, ... in this order */
	size_t nfds;
	int out_fd, diag_fd; /* its stdout and stderr; stdin is /dev/null */
};

/* Starts ARGV[0] (opened before the root goes away, so a static program needs nothing inside;
 * a dynamic one needs its loader and libraries among the mounts) in the jail. Returns the pid
 * or -errno. Why a child failed before exec goes to diag_fd as "jail: ...", exit 126. */
pid_t jail_spawn(char *const argv[], const struct jail_spec *s);

#endif
