/* SPDX-License-Identifier: Apache-2.0 */
/* jail/cgroup.c: the session's cgroups (see cgroup.h). */
#include "jail/cgroup.h"
#include "lib/io.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* v1's controllers, in the order of session_cgroup.dirs. */
static const char *const ctls[] = { "memory", "pids", "cpu" };

static int put(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX + 64];

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return io_write_file_once(path, text);
}

/* Our own cgroup path for CONTROLLER (v1), or the unified one ("" name), as SELF tells. */
static int own_path(const char *self, const char *controller, char *out, size_t len)
{
	FILE *f = fopen(self, "re");
	char line[PATH_MAX + 64];
	int found = -1;

	while (f && found < 0 && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		ctl++;
		for (char *t = strtok(ctl, ","); t; t = strtok(NULL, ","))
			if (!strcmp(t, controller)) {
				snprintf(out, len, "%s", path);
				found = 0;
			}
		if (!*controller && !*ctl) {
			snprintf(out, len, "%s", path);
			found = 0;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int ndirs(const struct session_cgroup *cg)
{
	return cg->version == 1 ? 3 : cg->version == 2 ? 1 : 0;
}

int cgroup_plan(struct session_cgroup *cg, const struct cgroup_fs *fs, const char *id, char *err,
		size_t errlen)
{
	char own[PATH_MAX], base[PATH_MAX];
	struct stat st;

	memset(cg, 0, sizeof(*cg));
	snprintf(err, errlen, "no writable cgroup hierarchy");
	snprintf(base, sizeof(base), "%s/memory", fs->root);
	cg->version = stat(base, &st) == 0 && S_ISDIR(st.st_mode) ? 1 : 2;
	for (int i = 0; i < ndirs(cg); i++) {
		if (cg->version == 1)
			snprintf(base, sizeof(base), "%s/%s", fs->root, ctls[i]);
		else
			snprintf(base, sizeof(base), "%s", fs->root);
		if (own_path(fs->self, cg->version == 1 ? ctls[i] : "", own, sizeof(own)) < 0) {
			cg->version = 0;
			return -1;
		}
		if (snprintf(cg->dirs[i], PATH_MAX, "%s%s/bulkhead-%s", base,
			     strcmp(own, "/") ? own : "", id) >= PATH_MAX) {
			snprintf(err, errlen, "cgroup path too long");
			cg->version = 0;
			return -1;
		}
	}
	snprintf(cg->memory_dir, sizeof(cg->memory_dir), "%s", cg->dirs[0]);
	return 0;
}

static int set_v1(const struct session_cgroup *cg, const struct cgroup_limits *l)
{
	char v[64];
	int rc;

	snprintf(v, sizeof(v), "%llu", l->mem_bytes);
	if ((rc = put(cg->dirs[0], "memory.limit_in_bytes", v)) < 0)
		return rc;
	snprintf(v, sizeof(v), "%u", l->pids);
	if ((rc = put(cg->dirs[1], "pids.max", v)) < 0)
		return rc;
	snprintf(v, sizeof(v), "%u", (l->cpus + 1) * 100000);
	if ((rc = put(cg->dirs[2], "cpu.cfs_period_us", "100000")) < 0)
		return rc;
	return put(cg->dirs[2], "cpu.cfs_quota_us", v);
}

static int set_v2(const struct session_cgroup *cg, const struct cgroup_limits *l)
{
	char v[64];
	int rc;

	snprintf(v, sizeof(v), "%llu", l->mem_bytes);
	if ((rc = put(cg->dirs[0], "memory.max", v)) < 0)
		return rc;
	snprintf(v, sizeof(v), "%u", l->pids);
	if ((rc = put(cg->dirs[0], "pids.max", v)) < 0)
		return rc;
	snprintf(v, sizeof(v), "%u 100000", (l->cpus + 1) * 100000);
	return put(cg->dirs[0], "cpu.max", v);
}

int cgroup_set_limits(const struct session_cgroup *cg, const struct cgroup_limits *l, char *err,
		      size_t errlen)
{
	int rc = cg->version == 1 ? set_v1(cg, l) : cg->version == 2 ? set_v2(cg, l) : -EINVAL;

	if (rc < 0 && cg->version == 2)
		snprintf(err, errlen,
			 "cannot set the session's limits in %s (controllers not delegated?)",
			 cg->dirs[0]);
	else if (rc < 0)
		snprintf(err, errlen, "cannot set the session's limits: %s", strerror(-rc));
	return rc < 0 ? -1 : 0;
}

/* v1: every controller's hierarchy must be ours to write; v2: the controllers on for the
 * children of our own cgroup (a parent that has them already is fine). */
static int prepare(const struct session_cgroup *cg, const struct cgroup_fs *fs)
{
	char path[PATH_MAX + 16];

	if (cg->version == 2) {
		snprintf(path, sizeof(path), "%s", cg->dirs[0]);
		*strrchr(path, '/') = '\0';
		put(path, "cgroup.subtree_control", "+memory +pids +cpu");
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", fs->root, ctls[i]);
		if (access(path, W_OK) < 0)
			return -1;
	}
	return 0;
}

int cgroup_create_in(struct session_cgroup *cg, const struct cgroup_fs *fs, const char *id,
		     const struct cgroup_limits *l, char *err, size_t errlen)
{
	if (cgroup_plan(cg, fs, id, err, errlen) < 0 || prepare(cg, fs) < 0)
		goto fail;
	for (int i = 0; i < ndirs(cg); i++) {
		if (mkdir(cg->dirs[i], 0755) < 0) {
			snprintf(err, errlen, "cannot create %s: %s", cg->dirs[i], strerror(errno));
			goto fail;
		}
		cg->n++;
	}
	if (cgroup_set_limits(cg, l, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	cgroup_destroy(cg, NULL, 0);
	return -1;
}

int cgroup_create(struct session_cgroup *cg, const char *id, const struct cgroup_limits *l,
		  char *err, size_t errlen)
{
	static const struct cgroup_fs host = CGROUP_FS_HOST;

	return cgroup_create_in(cg, &host, id, l, err, errlen);
}

int cgroup_join_self(const struct session_cgroup *cg)
{
	char pid[24];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = 0; cg && i < cg->n; i++)
		if (put(cg->dirs[i], "cgroup.procs", pid) < 0)
			return -1;
	return 0;
}

unsigned long cgroup_oom_kills(const struct session_cgroup *cg)
{
	char path[PATH_MAX + 32], line[128];
	unsigned long n = 0;
	FILE *f;

	if (!cg || !cg->version)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", cg->memory_dir,
		 cg->version == 1 ? "memory.oom_control" : "memory.events");
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %lu", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

void cgroup_remove_stale_in(const struct cgroup_fs *fs, const char *id)
{
	char own[PATH_MAX], d[PATH_MAX + 96];

	for (size_t i = 0; i < 3; i++)
		if (own_path(fs->self, ctls[i], own, sizeof(own)) == 0 &&
		    snprintf(d, sizeof(d), "%s/%s%s/bulkhead-%s", fs->root, ctls[i],
			     strcmp(own, "/") ? own : "", id) < (int)sizeof(d))
			rmdir(d);
	if (own_path(fs->self, "", own, sizeof(own)) == 0 &&
	    snprintf(d, sizeof(d), "%s%s/bulkhead-%s", fs->root, strcmp(own, "/") ? own : "", id) <
		    (int)sizeof(d))
		rmdir(d);
}

void cgroup_remove_stale(const char *id)
{
	static const struct cgroup_fs host = CGROUP_FS_HOST;

	cgroup_remove_stale_in(&host, id);
}

void cgroup_kill_all(const char *dir)
{
	char path[PATH_MAX + 32];
	long pid;

	if (put(dir, "cgroup.kill", "1") == 0)
		return;
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return;
	FILE *f = fopen(path, "re");
	while (f && fscanf(f, "%ld", &pid) == 1)
		if (pid > 1 && pid != (long)getpid())
			kill((pid_t)pid, SIGKILL);
	if (f)
		fclose(f);
}

int cgroup_destroy(struct session_cgroup *cg, char *left, size_t leftlen)
{
	int kept = 0;

	if (left && leftlen)
		left[0] = '\0';
	for (int i = cg->n - 1; i >= 0; i--) {
		/* The session's own processes are reaped, but the kernel may take a moment to let
		 * go, and a process may have joined that is none of ours: it is ended (again every
		 * 100 ms, in case it forked meanwhile), for at most 5 s in all. */
		int tries = 0;
		while (rmdir(cg->dirs[i]) < 0 && errno == EBUSY && tries++ < 500) {
			if (tries % 10 == 1)
				cgroup_kill_all(cg->dirs[i]);
			usleep(10000);
		}
		if (access(cg->dirs[i], F_OK) == 0 && kept++ == 0 && left && leftlen)
			snprintf(left, leftlen, "%s", cg->dirs[i]);
	}
	cg->n = 0;
	cg->version = 0;
	return kept;
}
