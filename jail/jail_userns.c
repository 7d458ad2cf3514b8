/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_userns.c: user namespace maps, written by the jailed child itself (a launcher
 * without privilege maps only itself) or by the launcher for its child (map_root: the
 * namespace's root is another user, which only a privileged writer may map). */
#include "jail/jail_internal.h"

#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int jail_userns_map(pid_t pid, uid_t in_uid, uid_t out_uid, gid_t in_gid, gid_t out_gid,
		    unsigned count, bool deny_setgroups)
{
	char dir[32], path[64], map[64];
	int rc = 0;

	if (pid)
		snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	else
		snprintf(dir, sizeof(dir), "/proc/self");
	if (deny_setgroups) {
		snprintf(path, sizeof(path), "%s/setgroups", dir);
		rc = io_write_file_once(path, "deny");
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/uid_map", dir);
		snprintf(map, sizeof(map), "%u %u %u\n", (unsigned)in_uid, (unsigned)out_uid,
			 count ? count : 1);
		rc = io_write_file_once(path, map);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/gid_map", dir);
		snprintf(map, sizeof(map), "%u %u %u\n", (unsigned)in_gid, (unsigned)out_gid,
			 count ? count : 1);
		rc = io_write_file_once(path, map);
	}
	return rc;
}
