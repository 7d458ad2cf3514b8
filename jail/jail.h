/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail.h: the jail step, one function that starts every confined process of a session.
 *
 * The processes that touch guest data (the VM process and bulkhead-vsock) start in fresh PID,
 * IPC, UTS and mount namespaces and an empty network namespace (the session's two jailed
 * processes share one), in an empty read-only root that holds only what it was given, as the
 * session's own unprivileged uid/gid (a user namespace mapping only ourselves when not started
 * as root), with no capabilities (bounding set emptied, root's exec-time caps refused by
 * securebits), no_new_privs, an empty environment, only the descriptors it is handed, and tight
 * rlimits. The process then installs its own seccomp allow-list once set up (vsock/seccomp.c,
 * vmm/seccomp.c), before the guest's first byte.
 *
 * virtiofsd sandboxes itself (pivot_root into the share, its own namespaces and seccomp) and
 * needs capabilities for that, so its spec asks for the other shape (map_root): the same fresh
 * namespaces inside a user namespace whose only mapping is its root to the share's owner, the
 * share bound over itself there, a filter of the caller's on top, and its capabilities kept
 * inside that namespace only. */
#ifndef BULKHEAD_JAIL_JAIL_H
#define BULKHEAD_JAIL_JAIL_H

#include "jail/jail_ids.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JAIL_MOUNTS_MAX 16 /* mounts in one spec */
#define JAIL_LINKS_MAX	16 /* links in one spec */
#define JAIL_FDS_MAX	8  /* descriptors handed over */

/* A path of the host the process sees. With an empty root: placed at DST (NULL: the same path)
 * in it. Without: bound over itself in the process's own mount namespace (DST must be NULL).
 * Either way alone (mounts below it stay out), never set-user-ID, and read-only unless RW. */
struct jail_mount {
	const char *src; /* on the host, absolute */
	const char *dst; /* inside, absolute (NULL: the same path) */
	unsigned flags;
	dev_t dev; /* with JAIL_MOUNT_SAME: what the launcher judged */
	ino_t ino;
	/* With JAIL_MOUNT_TREE: a detached mount of the launcher's (fsmount(2), e.g. an overlay
	 * it assembled) placed at SRC instead of a copy of what is there; its attributes are
	 * the launcher's, set-user-ID and device nodes off all the same. */
	int tree_fd;
};
#define JAIL_MOUNT_RW	    1u /* writable (else read-only) */
#define JAIL_MOUNT_DEV	    2u /* a device node: keep it usable */
#define JAIL_MOUNT_OPTIONAL 4u /* skip when the host has no such path */
#define JAIL_MOUNT_SAME	    8u /* still dev/ino, with no symbolic link on its path */
#define JAIL_MOUNT_TREE	    16u /* tree_fd, not a copy of SRC, goes at SRC */
#define JAIL_TREE_FD_MIN    (3 + JAIL_FDS_MAX) /* tree_fd: clear of the handed-over ones */

/* A user namespace whose only mapping is its root to UID/GID outside; the process becomes
 * that root and keeps its capabilities, which count inside that namespace only. With COUNT
 * above 1 (a privileged launcher only), ids 0..COUNT-1 inside map to UID.. and GID.. outside:
 * an image's own owners (root, daemon, a user 1000) stay themselves through virtiofsd. */
struct jail_userns {
	uid_t uid;
	gid_t gid;
	unsigned count; /* 0 or 1: root alone */
};

struct jail_spec {
	/* Whom it runs as, and the session's network namespace. Unused with map_root. */
	struct jail_ids *ids;
	const struct jail_userns *map_root;
	/* An empty root holding only MOUNTS and LINKS (pairs: path, target); without it the
	 * host's tree stays visible, with MOUNTS bound over themselves. */
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
	/* After the mounts, before the lock-down: the caller's own changes to its mount namespace
	 * (a share's rules: session/share_rules.h), with ARG. Runs in the child: no allocation. 0, or
	 * -errno with the failing step in STEP. */
	int (*prepare)(const void *arg, char *step, size_t steplen);
	const void *prepare_arg;
	/* Then (map_root with one id only) the program runs in a nested user and mount namespace
	 * (its root mapped to ours alone), where every mount made so far is locked: none can be
	 * unmounted to show what it covers, nor a read-only one made writable, even by the
	 * program taken over. */
	bool lock_mounts;
	/* Last, just before exec: an extra seccomp filter of the caller's. 0 or -errno. */
	int (*seccomp)(void);
};

/* Whether S is a spec jail_spawn can follow: 0, or -EINVAL/-E2BIG with why in err. */
int jail_spec_check(const struct jail_spec *s, char *err, size_t errlen);

/* Starts ARGV[0] (opened before the root goes away, so a static program needs nothing inside;
 * a dynamic one needs its loader and libraries among the mounts) in the jail. Returns the pid
 * or -errno. Why a child failed before exec goes to diag_fd as "jail: ...", exit 126. */
pid_t jail_spawn(char *const argv[], const struct jail_spec *s);

/* jail_spawn, then waits until the program runs: its pid, or -1 with why ("STEP: REASON") in
 * err and nothing left of the child. */
pid_t jail_spawn_wait(char *const argv[], const struct jail_spec *s, char *err, size_t errlen);

/* Opens PATH (O_PATH, plus FLAGS such as O_DIRECTORY) if no component of it is a symbolic
 * link: the descriptor, -ELOOP when one is, or -errno. */
int jail_open_nofollow(const char *path, int flags);

#endif
