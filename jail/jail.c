/* jail/jail.c: the jail step (see jail.h): namespaces, the empty root, then lock-down. */
#include "jail/jail.h"
#include "jail/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JAIL_NOFILE 4096 /* the back end's sockets, connections and guest memory regions */
#define JAIL_NPROC  256	 /* threads of the session's uid: QEMU's vCPUs, workers, RCU */
#define JAIL_FD_MAX 8	 /* descriptors handed over */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
	int e = errno;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -(e ? e : EIO);
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

/* A new root: a tmpfs holding the spec's mounts and links; the old root detached; the tmpfs
 * made read-only. Every source is opened (cloned) before anything covers it. */
static int make_root(const struct jail_spec *s)
{
	static const char top[] = "/tmp"; /* any directory will do: it is covered, not used */
	int trees[16];
	size_t i;

	if (s->nmounts > sizeof(trees) / sizeof(trees[0]))
		return -E2BIG;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	for (i = 0; i < s->nmounts; i++) {
		const struct jail_mount *m = &s->mounts[i];
		struct mount_attr a = {
			.attr_set = MOUNT_ATTR_NOSUID |
				    (m->flags & JAIL_MOUNT_RW ? 0 : MOUNT_ATTR_RDONLY) |
				    (m->flags & JAIL_MOUNT_DEV ? 0 : MOUNT_ATTR_NODEV),
		};

		trees[i] = open_tree(AT_FDCWD, m->src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (trees[i] < 0 && errno == ENOENT && (m->flags & JAIL_MOUNT_OPTIONAL))
			continue;
		if (trees[i] < 0)
			return -errno;
		if (mount_setattr(trees[i], "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
			return -errno;
	}
	if (mount("jail", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
		return -errno;
	for (i = 0; i < s->nmounts; i++) {
		const struct jail_mount *m = &s->mounts[i];
		struct stat st;
		char at[PATH_MAX + 8];
		int rc;

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
	for (i = 0; i + 1 < 2 * s->nlinks; i += 2) {
		char at[PATH_MAX + 8];

		snprintf(at, sizeof(at), "%s%s", top, s->links[i]);
		if (symlink(s->links[i + 1], at) < 0)
			return -errno;
	}
	if (mkdir("/tmp/.old", 0700) < 0 || syscall(SYS_pivot_root, top, "/tmp/.old") < 0 ||
	    chdir("/") < 0 || umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0 ||
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		    0)
		return -errno;
	return 0;
}

/* No way back to any privilege: rlimits, capabilities, ids, no_new_privs. */
static int lock_down(const struct jail_spec *s)
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
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	bool root = geteuid() == 0;
	size_t i;
	int c;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit r = { limits[i].lim, limits[i].lim };

		if (limits[i].res == RLIMIT_FSIZE && s->file_writes)
			continue;
		if (setrlimit(limits[i].res, &r) < 0)
			return -errno;
	}
	/* Root gets every capability back at exec unless told not to: lock that out, then
	 * empty the bounding, ambient and inheritable sets. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					     SECBIT_NO_SETUID_FIXUP_LOCKED |
					     SECBIT_KEEP_CAPS_LOCKED) < 0 &&
	    root)
		return -errno;
	for (c = 0; c <= CAP_LAST_CAP; c++)
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
	/* A change of uid clears the parent-death signal: the jail still dies with us. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	return 0;
}

/* Descriptors: S->fds become 3, 4, ... (through copies above them, so no handed-over
 * descriptor is overwritten by another's move); everything else is closed. */
static int hand_over_fds(const struct jail_spec *s)
{
	int tmp[JAIL_FD_MAX];
	size_t i;

	if (s->nfds > JAIL_FD_MAX)
		return -E2BIG;
	for (i = 0; i < s->nfds; i++)
		if ((tmp[i] = fcntl(s->fds[i], F_DUPFD_CLOEXEC, 3 + JAIL_FD_MAX)) < 0)
			return -errno;
	for (i = 0; i < s->nfds; i++)
		if (dup2(tmp[i], 3 + (int)i) < 0)
			return -errno;
	close_range(3 + (unsigned)s->nfds, ~0U, 0);
	return 0;
}

static _Noreturn void child(char *const argv[], const struct jail_spec *s)
{
	static char *const empty_env[] = { NULL };
	uid_t uid = geteuid();
	gid_t gid = getegid();
	const char *step = "user namespace";
	char map[64];
	int rc = 0, exe;

	if (uid) {
		/* Ourselves, and nobody else, inside: no root there either. */
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if (!(rc = write_file("/proc/self/setgroups", "deny")))
			rc = write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if (!rc)
			rc = write_file("/proc/self/gid_map", map);
	} else if (s->ids->netns_fd >= 0) {
		step = "the session's network namespace";
		rc = setns(s->ids->netns_fd, CLONE_NEWNET) < 0 ? -errno : 0;
	}
	sethostname("bulkhead-jail", 13);
	if (!rc && proc_child_setup(s->out_fd, s->diag_fd) < 0) {
		step = "set-up";
		rc = -(errno ? errno : EIO);
	}
	if (!rc) {
		step = "descriptors";
		rc = hand_over_fds(s);
	}
	/* The program, opened before the root goes away. */
	exe = open(argv[0], O_PATH | O_CLOEXEC);
	if (!rc && exe < 0) {
		step = argv[0];
		rc = -errno;
	}
	if (!rc && s->empty_root) {
		step = "empty root";
		rc = make_root(s);
	}
	if (!rc) {
		step = "lock-down";
		rc = lock_down(s);
	}
	if (!rc) {
		syscall(SYS_execveat, exe, "", argv, empty_env, AT_EMPTY_PATH);
		step = "exec";
		rc = -errno;
	}
	dprintf(2, "jail: %s: %s\n", step, strerror(-rc));
	_exit(126);
}

pid_t jail_spawn(char *const argv[], const struct jail_spec *s)
{
	bool root = geteuid() == 0;
	struct clone_args ca = {
		.flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			 (s->empty_root ? CLONE_NEWNS : 0) | (root ? 0 : CLONE_NEWUSER) |
			 (root && s->ids->netns_fd >= 0 ? 0 : CLONE_NEWNET),
		.exit_signal = SIGCHLD,
	};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	char ns[64];

	if (pid == 0)
		child(argv, s);
	if (pid < 0)
		return -errno;
	/* The next jailed process of this session joins this one's empty network namespace:
	 * making one costs most of the jail step. A user namespace's own is not ours to share. */
	if (root && s->ids->netns_fd < 0) {
		snprintf(ns, sizeof(ns), "/proc/%ld/ns/net", pid);
		s->ids->netns_fd = open(ns, O_RDONLY | O_CLOEXEC);
	}
	return (pid_t)pid;
}
