/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_image.c: the image root of a session (see share_image.h).
 *
 * virtiofsd starts through the jail as the work share's does (session/share_fs.c), with two
 * differences. Its user namespace maps ids 0..65535 to themselves, so that the image's files
 * keep their owners in the guest (root's, a daemon's, a user's) and what the guest writes
 * lands in the write layer owned as the guest said; its capabilities still count in that
 * namespace only, so it cannot make device nodes, and the overlay is mounted without
 * set-user-ID and device nodes (with --keep-changes, whose files stay on the host, the
 * seccomp filter of share_fs_forbid_setid refuses set-ID and world-writable modes besides). And its
 * tree is the overlay, placed over an empty directory of the run directory in its own mount
 * namespace: the host's tree never holds it. */
#include "session/share_image.h"
#include "session/share_fs.h"
#include "jail/jail.h"
#include "jail/proc.h"
#include "lib/errbuf.h"
#include "lib/fd_send.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IMAGE_IDS     65536  /* ids the image's files may have, mapped to themselves */
#define OVERLAY_SPECS ":,\\" /* overlayfs's separators: refused in a path */

/* The kernel's own words for a failed fsconfig (the context's message queue), or errno's. */
static void fs_error(int fsfd, const char *what, char *err, size_t errlen)
{
	int e = errno;
	char msg[512];
	ssize_t n = read(fsfd, msg, sizeof(msg) - 1);
	if (n > 2) {
		msg[n] = '\0';
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(err, errlen, "%s: %.300s", what, msg + 2); /* "e overlayfs: ..." */
	} else {
		snprintf(err, errlen, "%s: %s", what, strerror(e));
	}
}

static int fs_set(int fsfd, const char *key, const char *val)
{
	return (int)syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, key, val, 0);
}

/* A detached mount of FSFD's file system (the parent moves it clear of the jail's range). */
static int fs_mount(int fsfd, const char *what, char *err, size_t errlen)
{
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		fs_error(fsfd, what, err, errlen);
		return -1;
	}
	int m = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
			     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0)
		snprintf(err, errlen, "%s: %s", what, strerror(errno));
	return m;
}

/* In a mount namespace of its own: the overlay of ROOTFS under UPPER (NULL: a tmpfs of
 * DISK_MIB mounted at MNT here) as a detached mount. Its descriptor, or -1 with err. */
static int overlay_build(const char *rootfs, const char *upper_dir, const char *work_dir,
			 const char *mnt, unsigned disk_mib, char *err, size_t errlen)
{
	char upper[PATH_MAX], work[PATH_MAX], size[32];
	if (upper_dir) {
		snprintf(upper, sizeof(upper), "%s", upper_dir);
		snprintf(work, sizeof(work), "%s", work_dir);
	} else {
		/* A tmpfs that only this namespace ever holds; its pages count against the
		 * session's cgroup. overlayfs takes its upper layer from a mount of the caller's
		 * own namespace (before Linux 6.15, not from a detached one): so it is mounted
		 * here, and goes with the overlay. */
		snprintf(size, sizeof(size), "size=%um,mode=0755", disk_mib);
		if (snprintf(upper, sizeof(upper), "%s/upper", mnt) >= (int)sizeof(upper) ||
		    snprintf(work, sizeof(work), "%s/work", mnt) >= (int)sizeof(work)) {
			snprintf(err, errlen, "the write layer: path too long");
			return -1;
		}
		if (mount("bulkhead-layer", mnt, "tmpfs", MS_NOSUID | MS_NODEV, size) < 0 ||
		    mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0) {
			snprintf(err, errlen, "the write layer (tmpfs): %s", strerror(errno));
			return -1;
		}
	}
	int fsfd = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fsfd < 0) {
		snprintf(err, errlen, "overlayfs: %s", strerror(errno));
		return -1;
	}
	int m = -1;
	if (fs_set(fsfd, "lowerdir", rootfs) < 0 || fs_set(fsfd, "upperdir", upper) < 0 ||
	    fs_set(fsfd, "workdir", work) < 0)
		fs_error(fsfd, "overlayfs", err, errlen);
	else
		m = fs_mount(fsfd, "overlayfs", err, errlen);
	close(fsfd);
	return m;
}

/* The overlay, assembled by a child in a mount namespace of its own (nothing of it ever
 * touches ours) and handed back over a socket. Its descriptor, or -1 with err. */
static int overlay(struct share_image *si, const char *rootfs, const char *keep, unsigned disk_mib,
		   char *err, size_t errlen)
{
	if (keep && share_keep_open(si, keep, err, errlen) < 0)
		return -1;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char why[512] = "";
		int m = -1;
		close(sp[0]);
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			snprintf(why, sizeof(why), "a mount namespace: %s", strerror(errno));
		else if (keep && (!share_keep_same(si->keep, si->keep_fd) ||
				  !share_keep_same(si->work, si->work_fd)))
			snprintf(why, sizeof(why), "--keep-changes %s changed after it was checked",
				 keep);
		else
			m = overlay_build(rootfs, keep ? si->keep : NULL, si->work, si->mnt,
					  disk_mib, why, sizeof(why));
		_exit(fd_send(sp[1], why, strlen(why) + 1, m) < 0 ? 1 : 0);
	}
	close(sp[1]);
	if (pid < 0) {
		close(sp[0]);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	char why[512] = "";
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = why, .iov_len = sizeof(why) - 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = c.buf,
			      .msg_controllen = sizeof(c.buf) };
	ssize_t n = recvmsg(sp[0], &msg, MSG_CMSG_CLOEXEC);
	close(sp[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	share_keep_close(si);
	struct cmsghdr *h = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (h && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int))) {
		int m;
		memcpy(&m, CMSG_DATA(h), sizeof(int));
		int high = fcntl(m, F_DUPFD_CLOEXEC, JAIL_TREE_FD_MIN);
		close(m);
		if (high < 0)
			snprintf(err, errlen, "overlayfs: %s", strerror(errno));
		return high;
	}
	snprintf(err, errlen, "%s", n > 0 && why[0] ? why : "the overlay's builder failed");
	return -1;
}

/* The run directory's paths for SI, and the empty directory virtiofsd serves the tree at. */
static int paths(struct share_image *si, const struct rundir *rd, char *err, size_t errlen)
{
	if (rundir_file(rd, "image", 0, si->mnt, sizeof(si->mnt)) < 0 ||
	    rundir_file(rd, "image.sock", 1, si->sock, sizeof(si->sock)) < 0) {
		snprintf(err, errlen, "run directory path too long");
		return -1;
	}
	if (mkdir(si->mnt, 0755) < 0) {
		snprintf(err, errlen, "%s: %s", si->mnt, strerror(errno));
		si->mnt[0] = '\0';
		return -1;
	}
	return 0;
}

/* virtiofsd on TREE (a detached mount, closed here), its ids mapped to themselves.
 * FORBID_SETID: the tree's writes stay on the host, where no set-ID or world-writable mode
 * may land. */
static int serve(struct share_image *si, int tree, bool forbid_setid, int diag_fd, char *err,
		 size_t errlen)
{
	const struct jail_userns ids = { .uid = 0, .gid = 0, .count = IMAGE_IDS };
	const struct jail_mount root = { .src = si->mnt,
					 .flags = JAIL_MOUNT_RW | JAIL_MOUNT_TREE,
					 .tree_fd = tree };
	struct jail_spec spec = {
		.map_root = &ids,
		.mounts = &root,
		.nmounts = 1,
		.out_fd = diag_fd,
		.diag_fd = diag_fd,
		.seccomp = forbid_setid ? share_fs_forbid_setid : NULL,
	};
	/* cache=always: nothing but this guest changes the tree while the session runs. */
	pid_t pid = share_fs_virtiofsd(si->mnt, "always", si->sock, &spec, err, errlen);
	close(tree); /* virtiofsd's namespace holds it now */
	if (pid < 0) {
		si->sock[0] = '\0';
		share_image_stop(si);
		return -1;
	}
	si->pid = pid;
	return 0;
}

int share_image_start(struct share_image *si, const char *rootfs, const char *keep,
		      unsigned disk_mib, const struct rundir *rd, int diag_fd, char *err,
		      size_t errlen)
{
	memset(si, 0, sizeof(*si));
	si->keep_fd = si->work_fd = -1;
	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "--image needs bulkhead to run as root here (it mounts the image with a "
			 "private write layer for the session)");
		return -1;
	}
	if (rootfs[strcspn(rootfs, OVERLAY_SPECS)]) {
		snprintf(err, errlen,
			 "--image: the image's path (the store's) may not hold ':', ',' or '\\'");
		return -1;
	}
	if (paths(si, rd, err, errlen) < 0)
		return -1;
	int tree = overlay(si, rootfs, keep, disk_mib, err, errlen);
	if (tree < 0) {
		share_image_stop(si);
		return -1;
	}
	/* A write layer on the host (--keep-changes) takes no set-ID or world-writable mode, as
	 * the work share; the tmpfs layer, which nothing on the host can reach, takes what the
	 * image's tools make (dpkg installing sudo, a 1777 directory). */
	return serve(si, tree, keep != NULL, diag_fd, err, errlen);
}

int share_root_start(struct share_image *si, const char *root, bool ro, const struct rundir *rd,
		     int diag_fd, char *err, size_t errlen)
{
	memset(si, 0, sizeof(*si));
	si->keep_fd = si->work_fd = -1;
	if (geteuid() != 0) {
		snprintf(err, errlen, "a container's root needs bulkhead to run as root here");
		return -1;
	}
	if (paths(si, rd, err, errlen) < 0)
		return -1;
	/* A copy of the mount that holds ROOT, its submounts included, never attached here;
	 * no set-user-ID or device file of it means anything on the host. */
	int m = (int)syscall(SYS_open_tree, AT_FDCWD, root,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
				     AT_SYMLINK_NOFOLLOW);
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0),
	};
	if (m < 0 || syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
			     sizeof(attr)) < 0) {
		snprintf(err, errlen, "root %s: %s", root, strerror(errno));
		if (m >= 0)
			close(m);
		share_image_stop(si);
		return -1;
	}
	int tree = fcntl(m, F_DUPFD_CLOEXEC, JAIL_TREE_FD_MIN);
	close(m);
	if (tree < 0) {
		snprintf(err, errlen, "root %s: %s", root, strerror(errno));
		share_image_stop(si);
		return -1;
	}
	/* The caller's root stays on the host after the session: as a kept write layer. */
	return serve(si, tree, !ro, diag_fd, err, errlen);
}

void share_image_stop(struct share_image *si)
{
	proc_stop(&si->pid);
	if (si->sock[0]) {
		unlink(si->sock);
		si->sock[0] = '\0';
	}
	if (si->mnt[0]) {
		rmdir(si->mnt);
		si->mnt[0] = '\0';
	}
	share_keep_finish(si);
}
