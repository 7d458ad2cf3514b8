/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_image.h: an image as the session's root — the cached image read-only under a
 * private write layer (overlayfs), served by a virtiofsd of its own as virtio-fs tag "image".
 *
 * The overlay is assembled with the new mount API in a short-lived mount namespace and never
 * attached to the host's tree: it exists only in virtiofsd's mount namespace, so it goes away
 * with virtiofsd however the session ends. The write layer is a tmpfs of --disk MiB that no
 * namespace of the host's holds (the session's writes are gone with it), or, with
 * --keep-changes DIR, DIR itself, left on the host afterwards (overlayfs's format: a deleted
 * file is a 0/0 character device). */
#ifndef BULKHEAD_SESSION_SHARE_IMAGE_H
#define BULKHEAD_SESSION_SHARE_IMAGE_H

#include "session/rundir.h"
#include "lib/boot_args.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SHARE_IMAGE_TAG	     BOOT_ARGS_IMAGE_TAG
#define SHARE_IMAGE_DISK_MIB 1024 /* --disk default: the write layer's size */

struct share_image {
	pid_t pid;	     /* virtiofsd, 0 if none */
	char sock[108];	     /* vhost-user socket the engine connects to */
	char mnt[PATH_MAX];  /* where virtiofsd sees the overlay (in its namespace only) */
	char keep[PATH_MAX]; /* with --keep-changes: DIR, resolved */
	char work[PATH_MAX]; /* ... and overlayfs's work directory beside it, */
	char work_parent[PATH_MAX], work_name[NAME_MAX + 1]; /* ... where it is, */
	dev_t work_dev;					     /* ... and what it is */
	ino_t work_ino;
	int keep_fd, work_fd; /* ... DIR and that directory, held while the overlay is made */
};

/* Serves ROOTFS with a private write layer (KEEP: that directory, created or empty; NULL: a
 * tmpfs of DISK_MIB). Returns 0, or -1 with a one-line reason in err. */
int share_image_start(struct share_image *si, const char *rootfs, const char *keep,
		      unsigned disk_mib, const struct rundir *rd, int diag_fd, char *err,
		      size_t errlen);
/* Serves ROOT itself (an OCI bundle's root, the caller's to keep: no write layer of ours),
 * read-only when RO. 0, or -1 with err. */
int share_root_start(struct share_image *si, const char *root, bool ro, const struct rundir *rd,
		     int diag_fd, char *err, size_t errlen);
/* Stops virtiofsd (the overlay and a tmpfs layer go with it); safe to call twice. */
void share_image_stop(struct share_image *si);

/* share_image_keep.c: --keep-changes DIR. Opens DIR (made, or empty; no symbolic link on its
 * path; mode 0700) and its work directory beside it into si. 0 or -1 with err. */
int share_keep_open(struct share_image *si, const char *keep, char *err, size_t errlen);
/* Whether PATH, reached with no symbolic link, is still the directory FD holds. */
bool share_keep_same(const char *path, int fd);
/* Closes the descriptors share_keep_open left open. */
void share_keep_close(struct share_image *si);
/* Once virtiofsd is gone: defuses what the guest left in DIR, removes the work directory. */
void share_keep_finish(struct share_image *si);

#endif
