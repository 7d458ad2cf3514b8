/* SPDX-License-Identifier: Apache-2.0 */
/* cli/share_image.c: the image root of a session (see share_image.h).
 *
 * virtiofsd starts through the jail as the work share's does (cli/share_fs.c), with two
 * differences. Its user namespace maps ids 0..65535 to themselves, so that the image's files
 * keep their owners in the guest (root's, a daemon's, a user's) and what the guest writes
 * lands in the write layer owned as the guest said; its capabilities still count in that
 * namespace only, so it cannot make device nodes, and the overlay is mounted without
 * set-user-ID and device nodes (with --keep-changes, whose files stay on the host, the
 * seccomp filter of share_fs_forbid_setid refuses set-ID and world-writable modes besides). And its
 * tree is the overlay, placed over an empty directory of the run directory in its own mount
 * namespace: the host's tree never holds it. */
#include "cli/share_image.h"
#include "cli/share_fs.h"
#include "jail/jail.h"
#include "jail/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
		snprintf(err, errlen, "%s: %s", what, msg + 2); /* "e overlayfs: ..." */
	} else {
		snprintf(err, errlen, "%s: %s", what, strerror(e));
	}
}

static int fs_set(int fsfd, const char *key, const char *val)
{
	return (int)syscall(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, key, val, 0);
}

/* A detached mount of FSFD's file system, at a descriptor number the jail leaves alone. */
static int fs_mount(int fsfd, const char *what, char *err, size_t errlen)
{
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		fs_error(fsfd, what, err, errlen);
		return -1;
	}
	int m = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
			     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0) {
		snprintf(err, errlen, "%s: %s", what, strerror(errno));
		return -1;
	}
	int high = fcntl(m, F_DUPFD_CLOEXEC, JAIL_TREE_FD_MIN);
	close(m);
	if (high < 0)
		snprintf(err, errlen, "%s: %s", what, strerror(errno));
	return high;
}

/* --keep-changes DIR: DIR (new, or an empty directory) is the upper layer; overlayfs's work
 * directory is DIR.bulkhead-work beside it (the same file system, as overlayfs wants). */
static int keep_dirs(struct share_image *si, const char *keep, char *err, size_t errlen)
{
	if (mkdir(keep, 0755) < 0) {
		int e = errno;
		DIR *d = e == EEXIST ? opendir(keep) : NULL; /* an empty directory will do */
		struct dirent *ent;
		while (d && (ent = readdir(d)) &&
		       (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")))
			;
		bool empty = d && !ent;
		if (d)
			closedir(d);
		if (!empty) {
			snprintf(err, errlen, "--keep-changes %s: %s", keep,
				 e == EEXIST ? "not an empty directory: name a new or empty one"
					     : strerror(e));
			return -1;
		}
	}
	if (snprintf(si->work, sizeof(si->work), "%s.bulkhead-work", keep) >=
		    (int)sizeof(si->work) ||
	    mkdir(si->work, 0700) < 0) {
		snprintf(err, errlen, "--keep-changes: cannot make %s: %s", si->work,
			 errno == EEXIST ? "it exists (left by a session that was killed?)"
					 : strerror(errno));
		si->work[0] = '\0';
		return -1;
	}
	return 0;
}

/* The overlay: ROOTFS below, the write layer above. Its descriptor, or -1 with err. */
static int overlay(struct share_image *si, const char *rootfs, const char *keep, unsigned disk_mib,
		   char *err, size_t errlen)
{
	char upper[PATH_MAX], work[PATH_MAX], size[32];
	int layer = -1, fsfd = -1, m = -1;
	if (keep) {
		if (keep_dirs(si, keep, err, errlen) < 0)
			return -1;
		snprintf(upper, sizeof(upper), "%s", keep);
		snprintf(work, sizeof(work), "%s", si->work);
	} else {
		/* A tmpfs nobody else can reach; its pages count against the session's cgroup. */
		snprintf(size, sizeof(size), "%um", disk_mib);
		fsfd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
		if (fsfd < 0 || fs_set(fsfd, "size", size) < 0 ||
		    fs_set(fsfd, "mode", "0755") < 0) {
			snprintf(err, errlen, "the write layer (tmpfs): %s", strerror(errno));
			goto out;
		}
		if ((layer = fs_mount(fsfd, "the write layer (tmpfs)", err, errlen)) < 0)
			goto out;
		close(fsfd);
		fsfd = -1;
		if (mkdirat(layer, "upper", 0755) < 0 || mkdirat(layer, "work", 0700) < 0) {
			snprintf(err, errlen, "the write layer: %s", strerror(errno));
			goto out;
		}
		snprintf(upper, sizeof(upper), "/proc/self/fd/%d/upper", layer);
		snprintf(work, sizeof(work), "/proc/self/fd/%d/work", layer);
	}
	fsfd = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fsfd < 0) {
		snprintf(err, errlen, "overlayfs: %s", strerror(errno));
		goto out;
	}
	if (fs_set(fsfd, "lowerdir", rootfs) < 0 || fs_set(fsfd, "upperdir", upper) < 0 ||
	    fs_set(fsfd, "workdir", work) < 0) {
		fs_error(fsfd, "overlayfs", err, errlen);
		goto out;
	}
	m = fs_mount(fsfd, "overlayfs", err, errlen);
out:
	if (fsfd >= 0)
		close(fsfd);
	if (layer >= 0)
		close(layer); /* the overlay holds it now */
	return m;
}

int share_image_start(struct share_image *si, const char *rootfs, const char *keep,
		      unsigned disk_mib, const struct rundir *rd, int diag_fd, char *err,
		      size_t errlen)
{
	memset(si, 0, sizeof(*si));
	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "--image needs bulkhead to run as root here (it mounts the image with a "
			 "private write layer for the session)");
		return -1;
	}
	if (rootfs[strcspn(rootfs, OVERLAY_SPECS)] ||
	    (keep && keep[strcspn(keep, OVERLAY_SPECS)])) {
		snprintf(err, errlen,
			 "--image: the paths of the image and of --keep-changes may not "
			 "hold ':', ',' or '\\'");
		return -1;
	}
	if (rundir_file(rd, "image", 0, si->mnt, sizeof(si->mnt)) < 0 ||
	    rundir_file(rd, "image.sock", 1, si->sock, sizeof(si->sock)) < 0) {
		snprintf(err, errlen, "run directory path too long");
		return -1;
	}
	if (mkdir(si->mnt, 0755) < 0) {
		snprintf(err, errlen, "%s: %s", si->mnt, strerror(errno));
		return -1;
	}
	int tree = overlay(si, rootfs, keep, disk_mib, err, errlen);
	if (tree < 0) {
		share_image_stop(si);
		return -1;
	}
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
		/* A write layer on the host (--keep-changes) takes no set-ID or world-writable
		 * mode, as the work share; the tmpfs layer, which nothing on the host can reach,
		 * takes what the image's tools make (dpkg installing sudo, a 1777 directory). */
		.seccomp = keep ? share_fs_forbid_setid : NULL,
	};
	/* cache=always: nothing but this guest changes the tree while the session runs. */
	pid_t pid = share_fs_virtiofsd(si->mnt, "always", si->sock, &spec, err, errlen);
	close(tree); /* virtiofsd's namespace holds the overlay now */
	if (pid < 0) {
		si->sock[0] = '\0';
		share_image_stop(si);
		return -1;
	}
	si->pid = pid;
	return 0;
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
	/* overlayfs's work directory: its "work" holds overlayfs's own leftovers (a spare
	 * whiteout it keeps for reuse), nothing of the guest's. */
	if (si->work[0]) {
		char sub[PATH_MAX + 8];
		snprintf(sub, sizeof(sub), "%s/work", si->work);
		DIR *d = opendir(sub);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    unlinkat(dirfd(d), e->d_name, 0) < 0)
				unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		if (d)
			closedir(d);
		rmdir(sub);
		if (rmdir(si->work) < 0 && errno != ENOENT)
			fprintf(stderr, "bulkhead: cannot remove %s: %s\n", si->work,
				strerror(errno));
		si->work[0] = '\0';
	}
}
