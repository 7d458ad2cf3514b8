/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/work.c: the work share — whether the host gave one (bulkhead.work=
 * on the kernel command line), and mounting it at /work. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

int work_mount(void)
{
	const char *val;
	size_t len;
	int rc = cmdline_param(BOOT_ARGS_WORK, &val, &len);
	if (rc <= 0)
		return rc;
	if (len != 2 || (strncmp(val, "rw", 2) != 0 && strncmp(val, "ro", 2) != 0))
		return -EINVAL;
	char dir[64];
	snprintf(dir, sizeof(dir), "%s%s", guest_root.dir ? guest_root.dir : "",
		 BOOT_ARGS_WORK_DIR);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* The read-only flag here only gives early, clear errors; the host enforces :ro
	 * whatever the guest does with its mounts. */
	unsigned long flags = MS_NOSUID | MS_NODEV | (val[1] == 'o' ? MS_RDONLY : 0);
	if (mount(BOOT_ARGS_WORK_TAG, dir, "virtiofs", flags, NULL) < 0)
		return -errno;
	return 1;
}
