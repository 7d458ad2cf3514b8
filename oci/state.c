/* SPDX-License-Identifier: Apache-2.0 */
/* oci/state.c: a container's state directory and its status (see state.h). */
#include "jail/proc.h"
#include "session/session_reap.h"
#include "oci/state.h"
#include "oci/bundle.h"
#include "session/rundir.h"
#include "lib/mkdirs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const files[] = { "state.json", "start", "started", "scope.json", NULL };

const char *oci_status_name(enum oci_status s)
{
	static const char *const names[] = { "creating", "created", "running", "stopped" };
	return names[s];
}

int oci_container_file(const struct oci_container *c, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", c->dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The status as the supervisor's life says. */
static void read_status(struct oci_container *c)
{
	char path[PATH_MAX + 16];
	json_error_t je;
	c->status = OCI_STOPPED;
	if (oci_container_file(c, "state.json", path, sizeof(path)) < 0)
		return;
	c->state = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!c->state)
		return; /* create died half-way (it holds the lock while it works) */
	json_int_t pid = json_integer_value(json_object_get(c->state, "pid"));
	json_int_t start = json_integer_value(json_object_get(c->state, "pid_start"));
	c->session = json_string_value(json_object_get(c->state, "session"));
	if (pid <= 1 || pid > 0x7fffffff)
		return;
	c->pid = (pid_t)pid;
	if (proc_start_time(c->pid) != (unsigned long long)start)
		return;
	c->status = OCI_CREATED;
	if (oci_container_file(c, "started", path, sizeof(path)) == 0 && access(path, F_OK) == 0)
		c->status = OCI_RUNNING;
}

int oci_container_open(const struct oci_globals *g, const char *id, bool create,
		       struct oci_container *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
	if (!oci_id_valid(id)) {
		snprintf(err, errlen, "invalid container id '%.140s'", id);
		errno = EINVAL;
		return -1;
	}
	snprintf(c->id, sizeof(c->id), "%s", id);
	const char *root = g->root ? g->root : OCI_ROOT_DEFAULT;
	if (snprintf(c->dir, sizeof(c->dir), "%s/%s", root, id) >= (int)sizeof(c->dir)) {
		snprintf(err, errlen, "--root %s: path too long", root);
		errno = ENAMETOOLONG;
		return -1;
	}
	int rc = create ? mkdirs(root, 0700) : 0; /* --root and its parents, as runc makes them */
	if (rc < 0) {
		snprintf(err, errlen, "--root %s: %s", root, strerror(-rc));
		errno = -rc;
		return -1;
	}
	if (create && mkdir(c->dir, 0700) < 0) {
		int e = errno;
		snprintf(err, errlen,
			 e == EEXIST ? "container with id %s already exists" : "%s: %s",
			 e == EEXIST ? id : c->dir, strerror(e));
		errno = e;
		return -1;
	}
	c->lock_fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct stat held, now;
	if (c->lock_fd < 0 || flock(c->lock_fd, LOCK_EX) < 0 || fstat(c->lock_fd, &held) < 0 ||
	    stat(c->dir, &now) < 0 || held.st_ino != now.st_ino || held.st_nlink == 0) {
		/* Gone, or removed while we waited for its lock. */
		int e = c->lock_fd < 0 && errno != ENOENT ? errno : ENOENT;
		snprintf(err, errlen, e == ENOENT ? "container %s does not exist" : "%s: %s",
			 e == ENOENT ? id : c->dir, strerror(e));
		oci_container_close(c);
		errno = e;
		return -1;
	}
	if (create)
		c->status = OCI_CREATING;
	else
		read_status(c);
	return 0;
}

int oci_container_save(struct oci_container *c, const char *bundle, pid_t pid, const char *session,
		       json_t *annotations, json_t *process, char *err, size_t errlen)
{
	/* Where the session's run directory is, as this environment says now: a later command
	 * (delete after KILL) may run with another BULKHEAD_RUNDIR. */
	char base[PATH_MAX], rundir[PATH_MAX + 32];
	if (rundir_base(base, sizeof(base)) < 0 ||
	    snprintf(rundir, sizeof(rundir), "%s/%s", base, session) >= (int)sizeof(rundir)) {
		snprintf(err, errlen, "run directory path too long");
		return -1;
	}
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16], created[40];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(created + n, sizeof(created) - n, ".%09ldZ", ts.tv_nsec);
	json_t *s = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:s, s:O, s:O}", "id", c->id,
			      "bundle", bundle, "pid", (json_int_t)pid, "pid_start",
			      (json_int_t)proc_start_time(pid), "session", session, "rundir",
			      rundir, "created", created, "annotations",
			      annotations ? annotations : json_object(), "process", process);
	if (!s || oci_container_file(c, "state.json", path, sizeof(path)) < 0 ||
	    oci_container_file(c, "state.json.tmp", tmp, sizeof(tmp)) < 0 ||
	    json_dump_file(s, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
		snprintf(err, errlen, "%s: cannot write its state: %s", c->dir, strerror(errno));
		json_decref(s);
		return -1;
	}
	json_decref(c->state);
	c->state = s;
	c->pid = pid;
	c->session = json_string_value(json_object_get(s, "session"));
	c->status = OCI_CREATED;
	return 0;
}

int oci_container_rundir(const struct oci_container *c, struct rundir *rd)
{
	const char *path = json_string_value(json_object_get(c->state, "rundir"));
	size_t n = path ? strlen(path) : 0, idlen = c->session ? strlen(c->session) : 0;
	/* Written by create; still, only "<absolute base>/<the session's id>" is taken. */
	if (!path || path[0] != '/' || idlen != sizeof(rd->id) - 1 || n <= idlen + 1 ||
	    n >= sizeof(rd->path) || path[n - idlen - 1] != '/' ||
	    strcmp(path + n - idlen, c->session) != 0 || strstr(path, "/.."))
		return -1;
	memcpy(rd->path, path, n + 1);
	memcpy(rd->id, c->session, idlen + 1);
	struct stat st;
	return lstat(rd->path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

void oci_container_remove(struct oci_container *c)
{
	char path[PATH_MAX + 16];
	for (size_t i = 0; files[i]; i++)
		if (oci_container_file(c, files[i], path, sizeof(path)) == 0)
			unlink(path);
	if (oci_container_file(c, "state.json.tmp", path, sizeof(path)) == 0)
		unlink(path);
	rmdir(c->dir);
}

void oci_container_close(struct oci_container *c)
{
	json_decref(c->state);
	c->state = NULL;
	c->session = NULL;
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	c->lock_fd = -1;
}
