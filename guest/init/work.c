/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/work.c: the shares — the work share (bulkhead.work=rw|ro on the kernel command
 * line) at /work, and the binds (bulkhead.bindN=rw|ro:PATH, an OCI bundle's bind mounts) at
 * their paths; below the image's root when there is one. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define BINDS_MAX 2

/* DEST (LEN bytes, checked as the host did) below the commands' root into DIR, with the
 * parents the root lacks made. */
static int share_dir(const char *dest, size_t len, char *dir, size_t cap)
{
	const char *root = guest_root.dir ? guest_root.dir : "";
	if (len < 2 || len > BOOT_ARGS_BIND_DEST_MAX || dest[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)dest[i]) && !strchr("/._-+@", dest[i]))
			return -EINVAL;
	if (memmem(dest, len, "/..", 3) || memmem(dest, len, "//", 2))
		return -EINVAL;
	if ((size_t)snprintf(dir, cap, "%s%.*s", root, (int)len, dest) >= cap)
		return -ENAMETOOLONG;
	for (char *s = dir + strlen(root) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(dir, 0755); /* a parent the root lacks; an error shows below */
		*s = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Mounts virtio-fs TAG at DEST, read-only when MODE ("rw" or "ro", 2 bytes) says so. The
 * read-only flag only gives early, clear errors: the host enforces ro whatever the guest does
 * with its mounts. */
static int share_mount(const char *tag, const char *mode, const char *dest, size_t len)
{
	if (strncmp(mode, "rw", 2) != 0 && strncmp(mode, "ro", 2) != 0)
		return -EINVAL;
	char dir[BOOT_ARGS_BIND_DEST_MAX + 64];
	int rc = share_dir(dest, len, dir, sizeof(dir));
	if (rc < 0)
		return rc;
	unsigned long flags = MS_NOSUID | MS_NODEV | (mode[1] == 'o' ? MS_RDONLY : 0);
	return mount(tag, dir, "virtiofs", flags, NULL) < 0 ? -errno : 1;
}

int work_mount(void)
{
	const char *val;
	size_t len;
	int rc = cmdline_param(BOOT_ARGS_WORK, &val, &len);
	if (rc <= 0)
		return rc;
	if (len != 2)
		return -EINVAL;
	return share_mount(BOOT_ARGS_WORK_TAG, val, BOOT_ARGS_WORK_DIR, strlen(BOOT_ARGS_WORK_DIR));
}

int binds_mount(void)
{
	for (int i = 0; i < BINDS_MAX; i++) {
		char name[32], tag[16];
		const char *val;
		size_t len;
		snprintf(name, sizeof(name), "%s%d=", BOOT_ARGS_BIND, i);
		snprintf(tag, sizeof(tag), "%s%d", BOOT_ARGS_BIND_TAG, i);
		int rc = cmdline_param(name, &val, &len);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		if (len < 4 || val[2] != ':')
			return -EINVAL;
		if ((rc = share_mount(tag, val, val + 3, len - 3)) < 0)
			return rc;
	}
	return 0;
}
