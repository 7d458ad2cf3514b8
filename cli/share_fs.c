/* cli/share_fs.c: start and stop the session's virtiofsd.
 *
 * virtiofsd runs inside a fresh user namespace whose only mapping is its root to
 * the share's owner: what the guest's root creates lands on the host owned by
 * that user (when bulkhead runs as root on a user's directory), and virtiofsd has
 * no real privilege over the rest of the host. It also runs inside a fresh mount
 * namespace in which ":ro" shares are a read-only bind mount, so read-only is the
 * host kernel's rule, not the guest's. virtiofsd then adds its own sandbox
 * (-o sandbox=namespace: pivot_root into the share, no network, own PID space). */
#include "cli/share_fs.h"
#include "jail/proc.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define VIRTIOFSD "/usr/lib/qemu/virtiofsd"

/* The first mount point strictly below dir (in buf), or NULL. mountinfo escapes space, tab,
 * newline and backslash as \ooo, so below a dir whose name holds one nothing matches here;
 * the child's non-recursive bind mount then refuses such a share instead. */
static const char *mount_below(const char *dir, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[PATH_MAX * 2];
	const char *hit = NULL;
	size_t n = strlen(dir);
	if (!f)
		return NULL;
	while (!hit && fgets(line, sizeof(line), f)) {
		char *p = line;
		for (int field = 0; field < 4 && p; field++)
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		if (!p)
			continue;
		p[strcspn(p, " ")] = '\0';
		if (strncmp(p, dir, n) == 0 && (n == 1 || p[n] == '/') && p[n == 1 ? 1 : n + 1]) {
			snprintf(buf, len, "%s", p);
			hit = buf;
		}
	}
	fclose(f);
	return hit;
}

int share_fs_open(const char *path)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

int share_fs_parse(const char *spec, struct share_fs *fs, char *err, size_t errlen)
{
	memset(fs, 0, sizeof(*fs));
	char path[PATH_MAX];
	size_t len = strlen(spec);
	if (len >= sizeof(path)) {
		snprintf(err, errlen, "--work: path too long");
		return -1;
	}
	memcpy(path, spec, len + 1);
	if (len > 3 && (strcmp(path + len - 3, ":ro") == 0 || strcmp(path + len - 3, ":rw") == 0)) {
		fs->ro = path[len - 2] == 'r' && path[len - 1] == 'o';
		path[len - 3] = '\0';
	}
	/* No symbolic link on the way: what is shared is the directory named, not one a guest
	 * of an earlier session could have redirected by planting a link in its share. */
	int fd = share_fs_open(path);
	if (fd == -ELOOP) {
		char real[PATH_MAX];
		snprintf(err, errlen,
			 "--work %s: the path goes through a symbolic link; name the directory "
			 "itself%s%s",
			 path, realpath(path, real) ? ": " : "", realpath(path, real) ? real : "");
		return -1;
	}
	if (fd < 0) {
		snprintf(err, errlen, "--work %s: %s", path,
			 fd == -ENOTDIR ? "not a directory" : strerror(-fd));
		return -1;
	}
	char self[32];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, fs->dir, sizeof(fs->dir) - 1);
	struct stat st;
	if (n <= 0 || (size_t)n >= sizeof(fs->dir) - 1 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "--work %s: cannot tell where it is", path);
		close(fd);
		return -1;
	}
	fs->dir[n] = '\0';
	close(fd);
	fs->dev = st.st_dev;
	fs->ino = st.st_ino;
	/* As root, write as the directory's owner; otherwise we can only be ourselves. */
	fs->owner = geteuid() == 0 ? st.st_uid : geteuid();
	fs->owner_gid = geteuid() == 0 ? st.st_gid : getegid();
	return 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -e;
}

/* Maps the namespace's root to the share's owner. Run by the parent, which holds
 * the privilege in the outer namespace that the mapping needs. */
static int map_ids(pid_t pid, const struct share_fs *fs)
{
	char path[64], map[64];
	int rc;
	if (geteuid() != 0) {
		/* Unprivileged writers must give up setgroups(2) first. */
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		if ((rc = write_file(path, "deny")) < 0)
			return rc;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)fs->owner);
	if ((rc = write_file(path, map)) < 0)
		return rc;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)fs->owner_gid);
	return write_file(path, map);
}

/* Child: reports failures on the status pipe as an errno and a step name. */
static void child_fail(int status_fd, const char *step)
{
	int e = errno;
	char msg[PATH_MAX + 128];
	int n = snprintf(msg, sizeof(msg), "%s: %s", step, strerror(e));
	if (write(status_fd, msg, (size_t)n) < 0)
		_exit(127);
	_exit(127);
}

static void child(const struct share_fs *fs, int lfd, int diag_fd, int ready_w, int go_r,
		  int status_w)
{
	/* stdio first: every later failure goes to the status pipe anyway. */
	if (proc_child_setup(diag_fd, diag_fd) < 0)
		child_fail(status_w, "set up descriptors");
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		child_fail(status_w, "unshare(user, mount)");
	char c = 'u';
	if (write(ready_w, &c, 1) != 1 || read(go_r, &c, 1) != 1 || c != 'm')
		_exit(127); /* the parent failed and said so */
	/* Become the namespace's root (the share's owner outside), so virtiofsd keeps
	 * its capabilities inside the namespace across exec.
	 * Supplementary groups go too; where setgroups(2) is denied (namespaces made
	 * without privilege) they are only the caller's own. */
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		child_fail(status_w, "setgroups");
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		child_fail(status_w, "switch to the namespace's root");
	/* Say it plainly when a parent directory keeps the owner out (as root we
	 * could reach it; the owner cannot, and virtiofsd works as the owner). */
	if (access(fs->dir, R_OK | X_OK) < 0) {
		char step[PATH_MAX + 64];
		snprintf(step, sizeof(step), "the share's owner (uid %u) cannot open %s",
			 (unsigned)fs->owner, fs->dir);
		child_fail(status_w, step);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(status_w, "make mounts private");
	/* Still the directory the launcher checked (the policy judged it): nothing swapped a
	 * link in since. */
	int fd = share_fs_open(fs->dir);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != fs->dev || st.st_ino != fs->ino) {
		errno = fd == -ELOOP ? ELOOP : ESTALE;
		child_fail(status_w, "the share changed while the session started");
	}
	close(fd);
	/* Non-recursive: mounts below the share stay hidden, which is what we want (a mount
	 * of a path the policy forbids could otherwise sit inside a share it allows). */
	if (mount(fs->dir, fs->dir, NULL, MS_BIND, NULL) < 0)
		child_fail(status_w, "bind-mount the share");
	if (fs->ro && mount(NULL, fs->dir, NULL,
			    MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		child_fail(status_w, "make the share read-only");
	/* fd 3 is the listening socket (--fd=3); everything above closes on exec,
	 * the status pipe included, so its EOF tells the parent virtiofsd started.
	 * lfd is the lowest descriptor opened here and status_w is above it. */
	if ((lfd != 3 && dup2(lfd, 3) < 0) || fcntl(3, F_SETFD, 0) < 0)
		child_fail(status_w, "set up descriptors");
	close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
	/* Last: the guest may not leave set-user-ID programs on the host through the share. */
	errno = -share_fs_forbid_setid();
	if (errno)
		child_fail(status_w, "seccomp filter for file modes");
	char source[PATH_MAX + 16];
	snprintf(source, sizeof(source), "source=%s", fs->dir);
	/* cache=auto: the host side may change while the session runs (a developer
	 * editing the tree), and auto revalidates on open; see docs/ARCHITECTURE.md. */
	char *const argv[] = { VIRTIOFSD,
			       "--fd=3",
			       "-o",
			       source,
			       "-o",
			       "sandbox=namespace",
			       "-o",
			       "cache=auto",
			       "-o",
			       "log_level=warn",
			       "--rlimit-nofile=4096",
			       NULL };
	execv(VIRTIOFSD, argv);
	child_fail(status_w, "exec " VIRTIOFSD);
}

int share_fs_start(struct share_fs *fs, const struct rundir *rd, int diag_fd, char *err,
		   size_t errlen)
{
	if (access(VIRTIOFSD, X_OK) < 0) {
		snprintf(err, errlen, "%s not found: run 'make deps' (package qemu-system-common)",
			 VIRTIOFSD);
		return -1;
	}
	/* What is mounted below a share stays outside it (virtiofsd gets the directory alone,
	 * not the tree): refuse plainly rather than share less than asked. */
	char below[PATH_MAX];
	if (mount_below(fs->dir, below, sizeof(below))) {
		snprintf(err, errlen,
			 "--work %.200s: %.200s is a mount point inside it; share a directory with "
			 "nothing mounted below it",
			 fs->dir, below);
		return -1;
	}
	if (rundir_file(rd, "fs.sock", 1, fs->sock, sizeof(fs->sock)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		return -1;
	}
	/* Listening before virtiofsd exists: the engine can connect at once, no race. */
	int lfd = unix_listen(fs->sock, 1, false);
	if (lfd < 0) {
		snprintf(err, errlen, "virtio-fs socket %s: %s", fs->sock, strerror(-lfd));
		return -1;
	}
	int ready[2], go[2], status[2];
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(lfd);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0)
		child(fs, lfd, diag_fd, ready[1], go[0], status[1]);
	close(lfd);
	close(ready[1]);
	close(go[0]);
	close(status[1]);
	int rc = -1;
	char c;
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	fs->pid = pid;
	if (read(ready[0], &c, 1) != 1)
		goto child_failed;
	int mrc = map_ids(pid, fs);
	if (mrc < 0) {
		snprintf(err, errlen, "virtiofsd: cannot map uid %u into its user namespace: %s",
			 (unsigned)fs->owner, strerror(-mrc));
		goto out;
	}
	c = 'm';
	if (write(go[1], &c, 1) != 1)
		goto child_failed;
	close(go[1]);
	go[1] = -1;
child_failed:;
	/* The status pipe closes on exec (started) or carries the failing step. */
	char msg[PATH_MAX + 128];
	ssize_t n = read(status[0], msg, sizeof(msg) - 1);
	if (n > 0) {
		msg[n] = '\0';
		snprintf(err, errlen, "virtiofsd: %s", msg);
		goto out;
	}
	rc = 0;
out:
	close(ready[0]);
	if (go[1] >= 0)
		close(go[1]);
	close(status[0]);
	if (rc < 0)
		share_fs_stop(fs);
	return rc;
}

void share_fs_stop(struct share_fs *fs)
{
	/* virtiofsd forks into its own PID namespace; its process group holds both, and the
	 * sandboxed one is ours to reap once its parent is gone (proc_adopt_orphans). */
	proc_stop(&fs->pid);
	if (fs->sock[0]) {
		unlink(fs->sock);
		fs->sock[0] = '\0';
	}
}
