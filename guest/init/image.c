/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/image.c: an image as the commands' root (bulkhead.image=UID:GID[:G1,...]). The
 * host serves the image, read-only below the session's write layer, as virtio-fs tag
 * BOOT_ARGS_IMAGE_TAG; init mounts it at BOOT_ARGS_IMAGE_DIR with the kernel's file systems
 * inside, and every command is chrooted there and runs as the image's user (exec.c). init
 * itself stays in the initramfs: it is PID 1 and the agent whatever the image holds. The
 * initramfs's GUEST_RUNTIME_DIR (what makes runtimes use the session's proxy, e.g.
 * guest/runtime/node-proxy.js) appears read-only in the image at GUEST_RUNTIME_IN_IMAGE. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

struct guest_root guest_root; /* zero: the initramfs, as root */

/* A decimal id below (uid_t)-1, from *p up to one of STOPS (or the end); *p moves past it. */
static int parse_id(const char **p, const char *end, const char *stops, unsigned *out)
{
	unsigned long long v = 0;
	const char *s = *p;
	while (s < end && !strchr(stops, *s)) {
		if (*s < '0' || *s > '9' || s - *p >= 10)
			return -EINVAL;
		v = v * 10 + (unsigned)(*s++ - '0');
	}
	if (s == *p || v >= 0xffffffffull)
		return -EINVAL;
	*out = (unsigned)v;
	*p = s;
	return 0;
}

/* "UID:GID[:G1,G2,...]" (LEN bytes, not NUL-terminated) into guest_root. */
static int parse_user(const char *val, size_t len)
{
	const char *p = val, *end = val + len;
	unsigned uid, gid;
	if (parse_id(&p, end, ":", &uid) < 0 || p == end || *p++ != ':' ||
	    parse_id(&p, end, ":", &gid) < 0)
		return -EINVAL;
	guest_root.uid = uid;
	guest_root.gid = gid;
	if (p == end)
		return 0;
	if (*p++ != ':')
		return -EINVAL;
	while (p < end) {
		unsigned g;
		if (guest_root.ngids == GUEST_ROOT_GIDS_MAX || parse_id(&p, end, ",", &g) < 0)
			return -EINVAL;
		guest_root.gids[guest_root.ngids++] = g;
		if (p < end && *p++ != ',')
			return -EINVAL;
		if (p == end && p[-1] == ',')
			return -EINVAL;
	}
	return 0;
}

/* Mounts one of the kernel's file systems (or a bind of ours) at DIR below the image root,
 * making the directory when the image lacks it. */
static int mount_in(const char *src, const char *dir, const char *type, unsigned long flags)
{
	char at[64];
	snprintf(at, sizeof(at), "%s%s", BOOT_ARGS_IMAGE_DIR, dir);
	for (char *s = at + strlen(BOOT_ARGS_IMAGE_DIR) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(at, 0755); /* a parent the image lacks; an error shows below */
		*s = '/';
	}
	if (mkdir(at, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount(src, at, type, flags, NULL) < 0)
		return -errno;
	/* A bind mount takes read-only in a second step. */
	if ((flags & MS_BIND) && (flags & MS_RDONLY) &&
	    mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return -errno;
	return 0;
}

int image_mount(void)
{
	const char *val;
	size_t len;
	int rc = cmdline_param(BOOT_ARGS_IMAGE, &val, &len);
	if (rc <= 0)
		return rc;
	if (parse_user(val, len) < 0) {
		console_error("bulkhead-init: bad %s parameter", BOOT_ARGS_IMAGE);
		return -EINVAL;
	}
	if (mkdir(BOOT_ARGS_IMAGE_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount(BOOT_ARGS_IMAGE_TAG, BOOT_ARGS_IMAGE_DIR, "virtiofs", 0, NULL) < 0)
		return -errno;
	/* /dev as init sees it (devtmpfs, its ptys and /dev/shm); /run a tmpfs, as on a booted
	 * system (and so our runtime files never land in the write layer); /tmp the image's. */
	if ((rc = mount_in("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)) < 0 ||
	    (rc = mount_in("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC)) < 0 ||
	    (rc = mount_in("/dev", "/dev", NULL, MS_BIND | MS_REC)) < 0 ||
	    (rc = mount_in("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV)) < 0 ||
	    (rc = mkdir(BOOT_ARGS_IMAGE_DIR "/run/lock", 0) < 0 ? -errno : 0) < 0 ||
	    (rc = chmod(BOOT_ARGS_IMAGE_DIR "/run/lock", 01777) < 0 ? -errno : 0) < 0 ||
	    (rc = mount_in(GUEST_RUNTIME_DIR, GUEST_RUNTIME_IN_IMAGE, NULL, MS_BIND | MS_RDONLY)) <
		    0)
		return rc;
	guest_root.dir = BOOT_ARGS_IMAGE_DIR;
	return 1;
}
