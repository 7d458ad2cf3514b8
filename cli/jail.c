/* cli/jail.c: the jail step (see jail.h). */
#include "cli/jail.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Descriptors: the back end's sockets, the connections and memory regions it serves. */
#define JAIL_NOFILE 4096

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
	int e = errno;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -(e ? e : EIO);
}

/* The program, opened before the root went away (-1: exec by path). */
static int exe_fd = -1;

/* mkdir -p PATH (absolute) inside the current root. */
static int mkdirs(const char *path)
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
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* A new root: a tmpfs with DIR bound at its own path; the old root detached; read-only. */
int jail_root(const char *dir, const char *exe)
{
	static const char top[] = "/tmp"; /* any directory will do: it is covered, not used */
	char where[PATH_MAX + 8];

	int tree;

	/* The program and a copy of DIR's mount, taken before anything covers them. */
	exe_fd = open(exe, O_PATH | O_CLOEXEC);
	if (exe_fd < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	tree = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0 ||
	    mount("jail", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755") < 0)
		return -errno;
	snprintf(where, sizeof(where), "%s%s", top, dir);
	if (mkdirs(where) < 0 || mkdir("/tmp/.old", 0700) < 0 ||
	    move_mount(tree, "", AT_FDCWD, where, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
	    syscall(SYS_pivot_root, top, "/tmp/.old") < 0 || chdir("/") < 0 ||
	    umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0 ||
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		    0)
		return -errno;
	return 0;
}

pid_t jail_fork(bool mount_ns)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	struct clone_args ca = {
		.flags = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
			 (uid ? CLONE_NEWUSER : 0) | (mount_ns ? CLONE_NEWNS : 0),
		.exit_signal = SIGCHLD,
	};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	char map[64];

	if (pid != 0)
		return pid < 0 ? -errno : (pid_t)pid;
	if (uid) {
		/* Ourselves, and nobody else, inside: no root there either. */
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if (write_file("/proc/self/setgroups", "deny") ||
		    write_file("/proc/self/uid_map", map))
			_exit(126);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if (write_file("/proc/self/gid_map", map))
			_exit(126);
	}
	sethostname("bulkhead-jail", 13);
	return 0;
}

int jail_lock(bool file_writes)
{
	static const struct {
		int res;
		rlim_t lim;
	} limits[] = {
		{ RLIMIT_CORE, 0 },  /* guest memory never lands in a core file */
		{ RLIMIT_FSIZE, 0 }, /* no file grows */
		{ RLIMIT_NOFILE, JAIL_NOFILE },
		{ RLIMIT_MEMLOCK, 0 },
	};
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	size_t i;
	int c;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit r = { limits[i].lim, limits[i].lim };

		if (limits[i].res == RLIMIT_FSIZE && file_writes)
			continue;
		if (setrlimit(limits[i].res, &r) < 0)
			return -errno;
	}
	/* Root gets every capability back at exec unless told not to: lock that out, then
	 * empty the bounding, ambient and inheritable sets. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					     SECBIT_NO_SETUID_FIXUP_LOCKED |
					     SECBIT_KEEP_CAPS_LOCKED) < 0 &&
	    geteuid() == 0)
		return -errno;
	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

void jail_exec(char *const argv[])
{
	static char *const empty[] = { NULL };

	if (exe_fd >= 0)
		syscall(SYS_execveat, exe_fd, "", argv, empty, AT_EMPTY_PATH);
	else
		execve(argv[0], argv, empty);
}
