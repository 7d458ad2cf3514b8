/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail.c: jail_spawn (see jail.h): the namespaces, then in the child each step in turn:
 * set-up, ids, the root, descriptors, lock-down, the caller's filter, exec. */
#include "jail/jail_internal.h"
#include "jail/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct child_args {
	char *const *argv;
	const struct jail_spec *s;
	uid_t uid; /* ours, outside: what a user namespace made without privilege maps */
	gid_t gid;
	int go[2];     /* map_root: [0] readable once the launcher has written the maps, else -1 */
	int status_fd; /* jail_spawn_wait: where a failure is told (closed by exec), else -1 */
};

static _Noreturn void child_fail(int status_fd, const char *step, int rc)
{
	if (status_fd >= 0)
		dprintf(status_fd, "%s: %s", step, strerror(-rc));
	else
		dprintf(2, "jail: %s: %s\n", step, strerror(-rc));
	_exit(126);
}

/* Whom the child is, and its network: the namespace's root (map_root), ourselves mapped to
 * ourselves (not root), or the session's empty network namespace once there is one. */
static int enter_ids(const struct child_args *c, char *step, size_t steplen)
{
	const struct jail_spec *s = c->s;

	snprintf(step, steplen, "user namespace");
	if (s->map_root)
		return jail_become_ns_root();
	if (c->uid)
		/* Ourselves, and nobody else, inside: no root there either. */
		return jail_userns_map(0, c->uid, c->uid, c->gid, c->gid, 1, true);
	if (s->ids->netns_fd >= 0) {
		snprintf(step, steplen, "the session's network namespace");
		return setns(s->ids->netns_fd, CLONE_NEWNET) < 0 ? -errno : 0;
	}
	return 0;
}

static _Noreturn void child(struct child_args *c)
{
	static char *const empty_env[] = { NULL };
	const struct jail_spec *s = c->s;
	char step[PATH_MAX + 64] = "set-up";
	int rc = 0, exe = -1;
	char go;

	/* map_root: nothing before the maps are written (the launcher says so, or goes away). */
	if (c->go[0] >= 0) {
		close(c->go[1]);
		if (read(c->go[0], &go, 1) != 1)
			_exit(126); /* the launcher could not map us, and says why */
		close(c->go[0]);
	}
	/* Into the session's cgroups while still the launcher's ids, which may write there. */
	if (proc_child_setup(s->out_fd, s->diag_fd) < 0)
		rc = -(errno ? errno : EIO);
	if (!rc)
		rc = enter_ids(c, step, sizeof(step));
	sethostname("bulkhead-jail", 13);
	if (!rc) {
		snprintf(step, sizeof(step), "descriptors");
		rc = jail_hand_over_fds(s, &c->status_fd);
	}
	/* The program, opened before the root goes away. */
	if (!rc && (exe = open(c->argv[0], O_PATH | O_CLOEXEC)) < 0) {
		snprintf(step, sizeof(step), "%s", c->argv[0]);
		rc = -errno;
	}
	if (!rc)
		rc = jail_root_build(s, step, sizeof(step));
	if (!rc && s->prepare)
		rc = s->prepare(s->prepare_arg, step, sizeof(step));
	/* The caller's mounts locked: a nested user namespace (mapping our root alone) with a
	 * mount namespace of its own gets them MNT_LOCKED (the read-only ones
	 * MNT_LOCK_READONLY), so the program, even taken over, can neither unmount a cover nor
	 * remount a read-only path writable to reach what is under it. */
	if (!rc && s->lock_mounts) {
		/* Dumpable, or /proc/self's map files belong to the host's root, not to us: the
		 * uid change into map_root's namespace made us undumpable. */
		snprintf(step, sizeof(step), "a nested user namespace to lock its mounts");
		rc = prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0
			     ? -errno
			     : jail_userns_map(0, 0, 0, 0, 0, 1, true);
	}
	if (!rc) {
		snprintf(step, sizeof(step), "lock-down");
		rc = jail_lock_down(s);
	}
	if (!rc && s->seccomp) {
		snprintf(step, sizeof(step), "seccomp filter");
		rc = s->seccomp();
	}
	if (!rc) {
		syscall(SYS_execveat, exe, "", c->argv, empty_env, AT_EMPTY_PATH);
		snprintf(step, sizeof(step), "exec");
		rc = -errno;
	}
	child_fail(c->status_fd, step, rc);
}

/* The launcher's side of map_root: the child's maps, then the word to go on. */
static int map_child(pid_t pid, const struct jail_spec *s, int go_fd, char *err, size_t errlen)
{
	int rc = jail_userns_map(pid, 0, s->map_root->uid, 0, s->map_root->gid, s->map_root->count,
				 geteuid() != 0);

	if (rc < 0)
		snprintf(err, errlen, "cannot map uid %u into its user namespace: %s",
			 (unsigned)s->map_root->uid, strerror(-rc));
	else if (send(go_fd, "g", 1, MSG_NOSIGNAL) != 1)
		rc = -EPIPE; /* the child is gone: killed, its end is the caller's to see */
	close(go_fd);
	return rc;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Starts the child; STATUS_FD as in struct child_args. The pid or -errno (why in err). */
static pid_t spawn(char *const argv[], const struct jail_spec *s, int status_fd, char *err,
		   size_t errlen)
{
	struct child_args c = { .argv = argv,
				.s = s,
				.uid = geteuid(),
				.gid = getegid(),
				.go = { -1, -1 },
				.status_fd = status_fd };
	int rc = jail_spec_check(s, err, errlen);

	if (rc < 0)
		return rc;
	bool userns = c.uid != 0 || s->map_root;
	bool mountns = s->empty_root || s->nmounts || s->prepare || s->lock_mounts;
	bool own_net = userns || s->ids->netns_fd < 0; /* a user namespace's own is not ours */
	struct clone_args ca = {
		.flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (mountns ? CLONE_NEWNS : 0) |
			 (userns ? CLONE_NEWUSER : 0) | (own_net ? CLONE_NEWNET : 0),
		.exit_signal = SIGCHLD,
	};
	/* A socket, not a pipe: telling a child that died meanwhile raises no SIGPIPE here. */
	if (s->map_root && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c.go) < 0)
		return -errno;
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		child(&c);
	rc = pid < 0 ? -errno : 0;
	if (s->map_root) {
		close(c.go[0]);
		if (rc < 0)
			close(c.go[1]);
		else
			rc = map_child((pid_t)pid, s, c.go[1], err, errlen);
		if (rc == -EPIPE)
			rc = 0;
		else if (rc < 0)
			stop_child((pid_t)pid);
	}
	if (rc < 0)
		return rc;
	/* The next jailed process of this session joins this one's empty network namespace:
	 * making one costs most of the jail step. */
	if (!userns && s->ids->netns_fd < 0) {
		char ns[64];

		snprintf(ns, sizeof(ns), "/proc/%ld/ns/net", pid);
		s->ids->netns_fd = open(ns, O_RDONLY | O_CLOEXEC);
	}
	return (pid_t)pid;
}

pid_t jail_spawn(char *const argv[], const struct jail_spec *s)
{
	char err[256];

	return spawn(argv, s, -1, err, sizeof(err));
}

pid_t jail_spawn_wait(char *const argv[], const struct jail_spec *s, char *err, size_t errlen)
{
	int status[2];
	char msg[PATH_MAX + 128];

	if (pipe2(status, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	err[0] = '\0';
	pid_t pid = spawn(argv, s, status[1], err, errlen);
	close(status[1]);
	if (pid < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror((int)-pid));
		close(status[0]);
		return -1;
	}
	/* Closed by exec (it runs), or it carries the failing step. */
	ssize_t n;
	while ((n = read(status[0], msg, sizeof(msg) - 1)) < 0 && errno == EINTR)
		;
	close(status[0]);
	if (n == 0)
		return pid;
	msg[n > 0 ? n : 0] = '\0';
	snprintf(err, errlen, "%s", n > 0 ? msg : strerror(errno));
	stop_child(pid);
	return -1;
}
