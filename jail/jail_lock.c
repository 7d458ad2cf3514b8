/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_lock.c: the last steps before a jailed program starts (see jail.h): its
 * descriptors, then no way back to any privilege: rlimits, capabilities, ids, no_new_privs. */
#include "jail/jail_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/securebits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JAIL_NOFILE 4096 /* the back end's sockets, connections and guest memory regions */
#define JAIL_NPROC  256	 /* threads of the session's uid: QEMU's vCPUs, workers, RCU */

int jail_hand_over_fds(const struct jail_spec *s, int *keep)
{
	int tmp[JAIL_FDS_MAX];
	size_t i;

	if (s->nfds > JAIL_FDS_MAX)
		return -E2BIG;
	/* Through copies above them, so no handed-over descriptor is overwritten by another's
	 * move, and none lands on the one still needed. */
	if (*keep >= 0 && (*keep = fcntl(*keep, F_DUPFD_CLOEXEC, 3 + JAIL_FDS_MAX)) < 0)
		return -errno;
	for (i = 0; i < s->nfds; i++)
		if ((tmp[i] = fcntl(s->fds[i], F_DUPFD_CLOEXEC, 3 + JAIL_FDS_MAX)) < 0)
			return -errno;
	for (i = 0; i < s->nfds; i++)
		if (dup2(tmp[i], 3 + (int)i) < 0)
			return -errno;
	/* Everything else closes at exec (what the steps until then still use, too). */
	if (close_range(3 + (unsigned)s->nfds, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	return 0;
}

int jail_become_ns_root(void)
{
	/* Supplementary groups go too; where setgroups(2) is denied (a namespace made without
	 * privilege) they are only the caller's own. */
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		return -errno;
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return -errno;
	return 0;
}

static int set_limits(const struct jail_spec *s)
{
	static const struct {
		int res;
		rlim_t lim;
	} limits[] = {
		{ RLIMIT_CORE, 0 },  /* guest memory never lands in a core file */
		{ RLIMIT_FSIZE, 0 }, /* no file grows */
		{ RLIMIT_NOFILE, JAIL_NOFILE },
		{ RLIMIT_MEMLOCK, 0 },
		{ RLIMIT_NPROC, JAIL_NPROC },
	};

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit r = { limits[i].lim, limits[i].lim };

		if (limits[i].res == RLIMIT_FSIZE && s->file_writes)
			continue;
		/* With map_root the program works on files as another user, who may run other
		 * processes: only the core dump goes. */
		if (s->map_root && limits[i].res != RLIMIT_CORE)
			continue;
		if (setrlimit(limits[i].res, &r) < 0)
			return -errno;
	}
	return 0;
}

/* Root gets every capability back at exec unless told not to: lock that out, then empty the
 * bounding, ambient, inheritable, permitted and effective sets, as the session's ids. */
static int drop_privileges(const struct jail_spec *s)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	bool root = geteuid() == 0;

	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					     SECBIT_NO_SETUID_FIXUP_LOCKED |
					     SECBIT_KEEP_CAPS_LOCKED) < 0 &&
	    root)
		return -errno;
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (root) {
		gid_t extra = s->extra_gid;

		if (setgroups(extra == (gid_t)-1 ? 0 : 1, &extra) < 0 ||
		    setresgid(s->ids->gid, s->ids->gid, s->ids->gid) < 0 ||
		    setresuid(s->ids->uid, s->ids->uid, s->ids->uid) < 0)
			return -errno;
	}
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

int jail_lock_down(const struct jail_spec *s)
{
	int rc = set_limits(s);

	/* map_root keeps its capabilities: they count in its own user namespace only, and the
	 * program needs them to sandbox itself. */
	if (!rc && !s->map_root)
		rc = drop_privileges(s);
	if (rc)
		return rc;
	/* A change of uid clears the parent-death signal: the jail still dies with us. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	return 0;
}
