/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_reap.c: what a session's supervisor leaves when it cannot clean up after itself
 * (it was KILLed): its processes and cgroups, found through its run directory. bulkhead-oci's
 * kill and delete and bulkhead serve's recovery use it. */
#include "session/session_reap.h"
#include "jail/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The session's cgroup directories (its run directory's "cgroup"): each process in them is
 * killed (cgroup.kill, or one by one on cgroup v1), then each is removed when REMOVE. */
void session_cgroups_each(const struct rundir *rd, void (*fn)(const char *dir, void *arg),
			  void *arg)
{
	char list[4 * PATH_MAX];
	if (rundir_get(rd, "cgroup", list, sizeof(list)) < 0)
		return;
	for (char *save = NULL, *dir = strtok_r(list, "\n", &save); dir;
	     dir = strtok_r(NULL, "\n", &save))
		if (strncmp(dir, "/sys/fs/cgroup/", 15) == 0 && !strstr(dir, "/../"))
			fn(dir, arg); /* only what cgroup_create makes */
}

static void reap_one(const char *dir, void *arg)
{
	bool remove = *(bool *)arg;
	cgroup_kill_all(dir);
	for (int tries = 0; remove && rmdir(dir) < 0 && errno == EBUSY && tries < 100; tries++) {
		if (tries % 10 == 9)
			cgroup_kill_all(dir); /* v1: what forked meanwhile */
		usleep(20000);
	}
}

void session_reap_cgroups(const struct rundir *rd, bool remove)
{
	session_cgroups_each(rd, reap_one, &remove);
}
