/* SPDX-License-Identifier: Apache-2.0 */
/* session/rundir.c: per-session private directories, and clean-up of ones whose
 * bulkhead was killed before it could remove them. */
#include "session/rundir.h"
#include "jail/cgroup.h"
#include "jail/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

int rundir_base(char *buf, size_t len)
{
	const char *env = getenv("BULKHEAD_RUNDIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/bulkhead");
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/bulkhead", xdg);
	else
		n = snprintf(buf, len, "/tmp/bulkhead-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void remove_tree(const char *path, int depth)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	int dfd = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    unlinkat(dfd, e->d_name, 0) < 0 && errno == EISDIR) {
			char sub[PATH_MAX];
			/* One level down at most: the vsock directory (rundir.h). */
			if (depth > 0 &&
			    snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) < (int)sizeof(sub))
				remove_tree(sub, depth - 1);
		}
	closedir(d);
	rmdir(path);
}

static void remove_dir_files(const char *path)
{
	remove_tree(path, 1);
}

/* The pid file: "PID START\n", START the process's start time (jail/proc.h), so that a later
 * process that reused the pid is never taken for the supervisor. 0, or -1 if malformed. */
static int parse_pid(const char *text, pid_t *pid, unsigned long long *start)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return -1;
	errno = 0;
	unsigned long p = strtoul(text, &end, 10);
	if (errno || *end != ' ' || p < 2 || p > INT_MAX || !isdigit((unsigned char)end[1]))
		return -1;
	unsigned long long st = strtoull(end + 1, &end, 10);
	if (errno || strcmp(end, "\n") || st == 0)
		return -1;
	*pid = (pid_t)p;
	*start = st;
	return 0;
}

/* The process the pid file names, if it is still the one that wrote it. */
static bool pid_file_live(const char *path)
{
	char text[64];
	pid_t pid;
	unsigned long long start;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	return parse_pid(text, &pid, &start) == 0 && proc_start_time(pid) == start;
}

/* A session directory whose pid file names a process that no longer exists. */
static void prune_stale(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16)
			continue;
		char pidfile[PATH_MAX], sub[PATH_MAX];
		int n1 = snprintf(sub, sizeof(sub), "%s/%s", base, e->d_name);
		int n2 = snprintf(pidfile, sizeof(pidfile), "%s/pid", sub);
		if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof(pidfile))
			continue;
		if (pid_file_live(pidfile))
			continue;
		remove_dir_files(sub);
		cgroup_remove_stale(e->d_name); /* its cgroups, empty since its processes died */
	}
	closedir(d);
}

int rundir_create(struct rundir *rd, char *err, size_t errlen)
{
	char base[sizeof(rd->path) - 20];
	if (rundir_base(base, sizeof(base)) < 0) {
		snprintf(err, errlen, "run directory path too long");
		return -1;
	}
	if (mkdir(base, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", base, strerror(errno));
		return -1;
	}
	/* The base must be ours and private: sockets below it are session capabilities. */
	struct stat st;
	if (lstat(base, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		snprintf(err, errlen, "%s must be a directory owned by uid %u with mode 0700", base,
			 (unsigned)geteuid());
		return -1;
	}
	prune_stale(base);

	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(rd->id + 2 * i, 3, "%02x", rnd[i]);
	/* Built under a hidden name and renamed when whole: a concurrent start never sees
	 * (and never prunes) a session directory without its pid file. */
	char tmp[PATH_MAX], pidfile[PATH_MAX + 8], vsock_dir[PATH_MAX + 8];
	snprintf(rd->path, sizeof(rd->path), "%s/%s", base, rd->id);
	snprintf(tmp, sizeof(tmp), "%s/.%s", base, rd->id);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", tmp);
	snprintf(vsock_dir, sizeof(vsock_dir), "%s/%s", tmp, RUNDIR_VSOCK);
	if (mkdir(tmp, 0700) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	int fd = open(pidfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || dprintf(fd, "%ld %llu\n", (long)getpid(), proc_start_time(getpid())) < 0 ||
	    mkdir(vsock_dir, 0700) < 0 ||
	    rename(tmp, rd->path) < 0) {
		snprintf(err, errlen, "cannot set up %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		remove_dir_files(tmp);
		rd->path[0] = '\0';
		return -1;
	}
	close(fd);
	return 0;
}

int rundir_file(const struct rundir *rd, const char *name, int sock, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", rd->path, name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (sock && (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -1;
	return 0;
}

int rundir_open(struct rundir *rd, const char *id, char *err, size_t errlen)
{
	char base[sizeof(rd->path) - 20];
	if (strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
		snprintf(err, errlen,
			 "'%.40s' is not a session id (16 hex digits from bulkhead start)", id);
		return -1;
	}
	if (rundir_base(base, sizeof(base)) < 0) {
		snprintf(err, errlen, "run directory path too long");
		return -1;
	}
	memcpy(rd->id, id, 17);
	snprintf(rd->path, sizeof(rd->path), "%s/%s", base, id);
	struct stat st;
	if (lstat(rd->path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "no session %s here (see bulkhead start)", id);
		return -1;
	}
	/* Ours and private, as rundir_create made it (and its base): anything else could have
	 * been put there by someone else. */
	struct stat bst;
	if (st.st_uid != geteuid() || (st.st_mode & 077) || lstat(base, &bst) < 0 ||
	    !S_ISDIR(bst.st_mode) || bst.st_uid != geteuid() || (bst.st_mode & 077)) {
		snprintf(err, errlen, "%s is not a session directory of ours (uid %u, mode 0700)",
			 rd->path, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

int rundir_supervisor(const struct rundir *rd, char *err, size_t errlen)
{
	char text[64];
	pid_t pid;
	unsigned long long start;
	if (rundir_get(rd, "pid", text, sizeof(text)) < 0 || parse_pid(text, &pid, &start) < 0) {
		snprintf(err, errlen, "session %s: no valid pid file", rd->id);
		return -1;
	}
	/* Pinned first, then checked: if the process ends and its pid is reused after this,
	 * the descriptor still names the old one and a signal through it goes nowhere. */
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 || proc_start_time(pid) != start) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "session %s: no running supervisor", rd->id);
		return -1;
	}
	return fd;
}

int rundir_put(const struct rundir *rd, const char *name, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	if (rundir_file(rd, name, 0, path, sizeof(path)) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	if (n != (ssize_t)strlen(text) || rename(tmp, path) < 0) {
		unlink(tmp);
		errno = n < 0 ? e : errno;
		return -1;
	}
	return 0;
}

int rundir_get(const struct rundir *rd, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	if (rundir_file(rd, name, 0, path, sizeof(path)) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

void rundir_remove(struct rundir *rd)
{
	if (rd->path[0])
		remove_dir_files(rd->path);
	rd->path[0] = '\0';
}
