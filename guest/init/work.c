/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/work.c: the work share — whether the host gave one (bulkhead.work=
 * on the kernel command line), and mounting it at /work. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the share goes: bulkhead.workdir=PATH (checked as the host did), else /work; below
 * the image's root when there is one, with the parents the image lacks made. */
static int work_dir(char *dir, size_t cap)
{
	const char *val;
	size_t len;
	const char *root = guest_root.dir ? guest_root.dir : "";
	int rc = cmdline_param(BOOT_ARGS_WORKDIR, &val, &len);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		val = BOOT_ARGS_WORK_DIR;
		len = strlen(val);
	}
	if (len < 2 || len > BOOT_ARGS_WORKDIR_MAX || val[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)val[i]) && !strchr("/._-+@", val[i]))
			return -EINVAL;
	if (memmem(val, len, "/..", 3) || memmem(val, len, "//", 2))
		return -EINVAL;
	if ((size_t)snprintf(dir, cap, "%s%.*s", root, (int)len, val) >= cap)
		return -ENAMETOOLONG;
	for (char *s = dir + strlen(root) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(dir, 0755); /* a parent the image lacks; an error shows below */
		*s = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int work_mount(void)
{
	const char *val;
	size_t len;
	int rc = cmdline_param(BOOT_ARGS_WORK, &val, &len);
	if (rc <= 0)
		return rc;
	if (len != 2 || (strncmp(val, "rw", 2) != 0 && strncmp(val, "ro", 2) != 0))
		return -EINVAL;
	char dir[BOOT_ARGS_WORKDIR_MAX + 64];
	if ((rc = work_dir(dir, sizeof(dir))) < 0)
		return rc;
	/* The read-only flag here only gives early, clear errors; the host enforces :ro
	 * whatever the guest does with its mounts. */
	unsigned long flags = MS_NOSUID | MS_NODEV | (val[1] == 'o' ? MS_RDONLY : 0);
	if (mount(BOOT_ARGS_WORK_TAG, dir, "virtiofs", flags, NULL) < 0)
		return -errno;
	return 1;
}
