/* SPDX-License-Identifier: Apache-2.0 */
/* jail/cgroup.h: per-session resource limits. Every process of a session (the VM, virtiofsd,
 * bulkhead-vsock, a private broker) joins the session's cgroups before it execs: memory
 * (guest RAM plus a bounded overhead), pids and CPU time (the session's vCPUs plus one for its
 * back ends). cgroup v1 (one directory per controller) and v2 (one directory) alike, under
 * the launcher's own cgroup. Where the host gives no writable cgroup, the session runs
 * without limits and says so. */
#ifndef BULKHEAD_JAIL_CGROUP_H
#define BULKHEAD_JAIL_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define CGROUP_MAX_DIRS	    3
#define CGROUP_DEFAULT_PIDS 512
#define CGROUP_OVERHEAD_MIB 512 /* the VM process and back ends beyond guest RAM */

/* Where the hierarchies are mounted and where the kernel tells us our own cgroup: the host's
 * (CGROUP_FS_HOST), or a tree of plain directories standing in for them (tests). */
struct cgroup_fs {
	const char *root; /* v1: one directory per controller in it; v2: the hierarchy itself */
	const char *self; /* lines "N:controllers:/path", as /proc/self/cgroup */
};
#define CGROUP_FS_HOST                                                                             \
	{                                                                                          \
		.root = "/sys/fs/cgroup", .self = "/proc/self/cgroup"                              \
	}

struct session_cgroup {
	int version;			      /* 0: none, 1 or 2 */
	char dirs[CGROUP_MAX_DIRS][PATH_MAX]; /* v1: memory, pids, cpu; v2: the one */
	int n;				      /* how many of them exist (made here) */
	char memory_dir[PATH_MAX];	      /* where memory events are read */
};

struct cgroup_limits {
	unsigned long long mem_bytes;
	unsigned pids;
	unsigned cpus;
};

/* Creates the session's cgroups named bulkhead-ID with LIMITS. Returns 0, or -1 with why in
 * err and nothing made (the caller goes on without limits). */
int cgroup_create(struct session_cgroup *cg, const char *id, const struct cgroup_limits *l,
		  char *err, size_t errlen);
int cgroup_create_in(struct session_cgroup *cg, const struct cgroup_fs *fs, const char *id,
		     const struct cgroup_limits *l, char *err, size_t errlen);
/* The steps of cgroup_create_in: where the session's directories go (v1 when the memory
 * controller has a hierarchy of its own, else v2), without making them (cg->n stays 0); then
 * the limits written into directories that exist. 0, or -1 with why in err. */
int cgroup_plan(struct session_cgroup *cg, const struct cgroup_fs *fs, const char *id, char *err,
		size_t errlen);
int cgroup_set_limits(const struct session_cgroup *cg, const struct cgroup_limits *l, char *err,
		      size_t errlen);
/* In a child before exec: moves the calling process into the session's cgroups. */
int cgroup_join_self(const struct session_cgroup *cg);
/* How many times the kernel killed a process of the session for its memory limit. */
unsigned long cgroup_oom_kills(const struct session_cgroup *cg);
/* Kills every process in the cgroup directory DIR: at once through cgroup.kill (v2, Linux
 * 5.14 and later), else each one cgroup.procs lists (v1: again, for one that forked since). */
void cgroup_kill_all(const char *dir);
/* Removes what a killed launcher left of session ID's cgroups (empty ones only). */
void cgroup_remove_stale(const char *id);
void cgroup_remove_stale_in(const struct cgroup_fs *fs, const char *id);
/* Removes the session's cgroups once its processes are gone, killing any process still in
 * them (one that joined them after the session started it is the session's all the same). */
/* Returns how many of its directories are left (processes that would not end: frozen, or
 * joining again as fast as they are killed), with the first in LEFT. */
int cgroup_destroy(struct session_cgroup *cg, char *left, size_t leftlen);

#endif
