/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_reap.h: cleaning up after a session whose supervisor was KILLed. */
#ifndef BULKHEAD_SESSION_SESSION_REAP_H
#define BULKHEAD_SESSION_SESSION_REAP_H

#include "session/rundir.h"

#include <stdbool.h>
#include <sys/types.h>

/* Calls fn for each of the session's cgroup directories (its run directory's "cgroup"), those
 * cgroup_create makes only. Thread-safe. */
void session_cgroups_each(const struct rundir *rd, void (*fn)(const char *dir, void *arg),
			  void *arg);

/* The session's cgroup directories (its run directory's "cgroup"): each process in them is
 * killed (cgroup.kill, or one by one on cgroup v1), then each is removed when REMOVE. */
void session_reap_cgroups(const struct rundir *rd, bool remove);

#endif
