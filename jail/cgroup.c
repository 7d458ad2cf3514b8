/* jail/cgroup.c: the session's cgroups (see cgroup.h). */
#include "jail/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int put(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX + 64];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The launcher's own cgroup path for CONTROLLER (v1), or the unified one ("" name). */
static int own_path(const char *controller, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
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

static int make_dir(struct session_cgroup *cg, const char *base, const char *own, const char *id,
		    char *err, size_t errlen)
{
	char *d = cg->dirs[cg->n];

	if (snprintf(d, PATH_MAX, "%s%s/bulkhead-%s", base, strcmp(own, "/") ? own : "", id) >=
	    PATH_MAX)
		return -1;
	if (mkdir(d, 0755) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", d, strerror(errno));
		return -1;
	}
	cg->n++;
	return 0;
}

static int create_v1(struct session_cgroup *cg, const char *id, const struct cgroup_limits *l,
		     char *err, size_t errlen)
{
	static const char *const ctls[] = { "memory", "pids", "cpu" };
	char own[PATH_MAX], base[64], v[64];

	for (size_t i = 0; i < 3; i++) {
		snprintf(base, sizeof(base), "/sys/fs/cgroup/%s", ctls[i]);
		if (own_path(ctls[i], own, sizeof(own)) < 0 || access(base, W_OK) < 0 ||
		    make_dir(cg, base, own, id, err, errlen) < 0)
			return -1;
	}
	snprintf(cg->memory_dir, sizeof(cg->memory_dir), "%s", cg->dirs[0]);
	snprintf(v, sizeof(v), "%llu", l->mem_bytes);
	if (put(cg->dirs[0], "memory.limit_in_bytes", v) < 0)
		goto fail;
	snprintf(v, sizeof(v), "%u", l->pids);
	if (put(cg->dirs[1], "pids.max", v) < 0)
		goto fail;
	snprintf(v, sizeof(v), "%u", (l->cpus + 1) * 100000);
	if (put(cg->dirs[2], "cpu.cfs_period_us", "100000") < 0 ||
	    put(cg->dirs[2], "cpu.cfs_quota_us", v) < 0)
		goto fail;
	cg->version = 1;
	return 0;
fail:
	snprintf(err, errlen, "cannot set the session's limits: %s", strerror(errno));
	return -1;
}

static int create_v2(struct session_cgroup *cg, const char *id, const struct cgroup_limits *l,
		     char *err, size_t errlen)
{
	char own[PATH_MAX], parent[PATH_MAX + 32], v[64];

	if (own_path("", own, sizeof(own)) < 0)
		return -1;
	snprintf(parent, sizeof(parent), "/sys/fs/cgroup%s", strcmp(own, "/") ? own : "");
	/* The controllers must be on for children; a parent that has them already is fine. */
	put(parent, "cgroup.subtree_control", "+memory +pids +cpu");
	if (make_dir(cg, "/sys/fs/cgroup", own, id, err, errlen) < 0)
		return -1;
	snprintf(cg->memory_dir, sizeof(cg->memory_dir), "%s", cg->dirs[0]);
	snprintf(v, sizeof(v), "%llu", l->mem_bytes);
	if (put(cg->dirs[0], "memory.max", v) < 0)
		goto fail;
	snprintf(v, sizeof(v), "%u", l->pids);
	if (put(cg->dirs[0], "pids.max", v) < 0)
		goto fail;
	snprintf(v, sizeof(v), "%u 100000", (l->cpus + 1) * 100000);
	if (put(cg->dirs[0], "cpu.max", v) < 0)
		goto fail;
	cg->version = 2;
	return 0;
fail:
	snprintf(err, errlen, "cannot set the session's limits in %s (controllers not delegated?)",
		 cg->dirs[0]);
	return -1;
}

int cgroup_create(struct session_cgroup *cg, const char *id, const struct cgroup_limits *l,
		  char *err, size_t errlen)
{
	struct stat st;

	memset(cg, 0, sizeof(*cg));
	snprintf(err, errlen, "no writable cgroup hierarchy");
	/* v1 when the memory controller has its own hierarchy, else the unified one. */
	if (stat("/sys/fs/cgroup/memory", &st) == 0 && S_ISDIR(st.st_mode)
		    ? create_v1(cg, id, l, err, errlen)
		    : create_v2(cg, id, l, err, errlen)) {
		cgroup_destroy(cg);
		return -1;
	}
	return 0;
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

void cgroup_remove_stale(const char *id)
{
	static const char *const ctls[] = { "memory", "pids", "cpu" };
	char own[PATH_MAX], d[PATH_MAX + 96];

	for (size_t i = 0; i < 3; i++)
		if (own_path(ctls[i], own, sizeof(own)) == 0 &&
		    snprintf(d, sizeof(d), "/sys/fs/cgroup/%s%s/bulkhead-%s", ctls[i],
			     strcmp(own, "/") ? own : "", id) < (int)sizeof(d))
			rmdir(d);
	if (own_path("", own, sizeof(own)) == 0 &&
	    snprintf(d, sizeof(d), "/sys/fs/cgroup%s/bulkhead-%s", strcmp(own, "/") ? own : "",
		     id) < (int)sizeof(d))
		rmdir(d);
}

void cgroup_destroy(struct session_cgroup *cg)
{
	for (int i = cg->n - 1; i >= 0; i--) {
		/* The processes are reaped, but the kernel may take a moment to let go. */
		for (int tries = 0; rmdir(cg->dirs[i]) < 0 && errno == EBUSY && tries < 50; tries++)
			usleep(10000);
	}
	cg->n = 0;
	cg->version = 0;
}
