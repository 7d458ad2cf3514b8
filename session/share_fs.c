/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_fs.c: start and stop the session's virtiofsd.
 *
 * virtiofsd starts through the jail (jail/jail.h, map_root): inside a fresh user namespace
 * whose only mapping is its root to the share's owner, so what the guest's root creates lands
 * on the host owned by that user (when bulkhead runs as root on a user's directory), and
 * virtiofsd has no real privilege over the rest of the host; and a fresh mount namespace in
 * which the share is bound over itself alone, read-only for ":ro", so read-only is the host
 * kernel's rule, not the guest's. virtiofsd then adds its own sandbox (-o sandbox=namespace:
 * pivot_root into the share, no network, own PID space), which the jail cannot do for it: its
 * root must be the share. */
#include "session/share_fs.h"
#include "session/share_rules.h"
#include "jail/jail.h"
#include "jail/proc.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define VIRTIOFSD	 "/usr/lib/qemu/virtiofsd"
#define VIRTIOFSD_NOFILE 65536

/* The first mount point strictly below dir (in buf), or NULL. mountinfo escapes space, tab,
 * newline and backslash as \ooo, so below a dir whose name holds one nothing matches here;
 * the child's non-recursive bind mount then refuses such a share instead. */
static const char *mount_below(const char *dir, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[PATH_MAX * 2];
	const char *hit = NULL;
	size_t n = strlen(dir);
	if (!f)
		return NULL;
	while (!hit && fgets(line, sizeof(line), f)) {
		char *p = line;
		for (int field = 0; field < 4 && p; field++)
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		if (!p)
			continue;
		p[strcspn(p, " ")] = '\0';
		if (strncmp(p, dir, n) == 0 && (n == 1 || p[n] == '/') && p[n == 1 ? 1 : n + 1]) {
			snprintf(buf, len, "%s", p);
			hit = buf;
		}
	}
	fclose(f);
	return hit;
}

int share_fs_link_error(const char *label, const char *path, const char *what, char *err,
			size_t errlen)
{
	char real[PATH_MAX];
	bool known = realpath(path, real) != NULL;
	snprintf(err, errlen,
		 "%s %s: the path goes through a symbolic link; name the %s itself%s%s", label,
		 path, what, known ? ": " : "", known ? real : "");
	return -1;
}

int share_fs_resolve(const char *dir, bool ro, const char *label, struct share_fs *fs, char *err,
		     size_t errlen)
{
	memset(fs, 0, sizeof(*fs));
	fs->ro = ro;
	/* No symbolic link on the way: what is shared is the directory named, not one a guest
	 * of an earlier session could have redirected by planting a link in its share. */
	int fd = jail_open_nofollow(dir, O_DIRECTORY);
	if (fd == -ELOOP)
		return share_fs_link_error(label, dir, "directory", err, errlen);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s: %s", label, dir,
			 fd == -ENOTDIR ? "not a directory" : strerror(-fd));
		return -1;
	}
	char self[32];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, fs->dir, sizeof(fs->dir) - 1);
	struct stat st;
	if (n <= 0 || (size_t)n >= sizeof(fs->dir) - 1 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s %s: cannot tell where it is", label, dir);
		close(fd);
		return -1;
	}
	fs->dir[n] = '\0';
	close(fd);
	fs->dev = st.st_dev;
	fs->ino = st.st_ino;
	/* As root, write as the directory's owner; otherwise we can only be ourselves. */
	fs->owner = geteuid() == 0 ? st.st_uid : geteuid();
	fs->owner_gid = geteuid() == 0 ? st.st_gid : getegid();
	return 0;
}

int share_fs_parse(const char *spec, struct share_fs *fs, char *err, size_t errlen)
{
	char path[PATH_MAX];
	size_t len = strlen(spec);
	bool ro = false;
	if (len >= sizeof(path)) {
		memset(fs, 0, sizeof(*fs));
		snprintf(err, errlen, "--work: path too long");
		return -1;
	}
	memcpy(path, spec, len + 1);
	if (len > 3 && (strcmp(path + len - 3, ":ro") == 0 || strcmp(path + len - 3, ":rw") == 0)) {
		ro = path[len - 2] == 'r' && path[len - 1] == 'o';
		path[len - 3] = '\0';
	}
	return share_fs_resolve(path, ro, "--work", fs, err, errlen);
}

pid_t share_fs_virtiofsd(const char *dir, const char *cache, const char *sock,
			 struct jail_spec *spec, char *err, size_t errlen)
{
	if (access(VIRTIOFSD, X_OK) < 0) {
		snprintf(err, errlen, "%s not found: run 'make deps' (package qemu-system-common)",
			 VIRTIOFSD);
		return -1;
	}
	/* Listening before virtiofsd exists: the engine can connect at once, no race. */
	int lfd = unix_listen(sock, 1, false);
	if (lfd < 0) {
		snprintf(err, errlen, "virtio-fs socket %s: %s", sock, strerror(-lfd));
		return -1;
	}
	spec->fds = &lfd; /* its --fd=3 */
	spec->nfds = 1;
	char source[PATH_MAX + 16], cache_opt[32], nofile[48], why[PATH_MAX + 128];
	snprintf(source, sizeof(source), "source=%s", dir);
	/* virtiofsd holds a descriptor for every inode the guest has looked up: a pip or npm
	 * install makes tens of thousands. Within our own hard limit (it cannot raise that); the
	 * kernel memory they pin counts against the session's cgroup. */
	struct rlimit rl = { .rlim_max = VIRTIOFSD_NOFILE };
	getrlimit(RLIMIT_NOFILE, &rl);
	snprintf(nofile, sizeof(nofile), "--rlimit-nofile=%llu",
		 (unsigned long long)(rl.rlim_max < VIRTIOFSD_NOFILE ? rl.rlim_max
								     : VIRTIOFSD_NOFILE));
	snprintf(cache_opt, sizeof(cache_opt), "cache=%s", cache);
	char *const argv[] = {
		VIRTIOFSD, "--fd=3",  "-o", source,	      "-o",   "sandbox=namespace",
		"-o",	   cache_opt, "-o", "log_level=warn", nofile, NULL
	};
	pid_t pid = jail_spawn_wait(argv, spec, why, sizeof(why));
	close(lfd);
	spec->fds = NULL;
	spec->nfds = 0;
	if (pid < 0) {
		snprintf(err, errlen, "virtiofsd: %s", why);
		unlink(sock);
	}
	return pid;
}

int share_fs_start(struct share_fs *fs, const struct rundir *rd, const char *name, int diag_fd,
		   char *err, size_t errlen)
{
	/* What is mounted below a share stays outside it (virtiofsd gets the directory alone,
	 * not the tree): refuse plainly rather than share less than asked. */
	char below[PATH_MAX];
	if (mount_below(fs->dir, below, sizeof(below))) {
		snprintf(err, errlen,
			 "share %.200s: %.200s is a mount point inside it; share a directory with "
			 "nothing mounted below it",
			 fs->dir, below);
		return -1;
	}
	if (rundir_file(rd, name, 1, fs->sock, sizeof(fs->sock)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		return -1;
	}
	if (fs->rules && share_rules_make(fs->rules, fs->owner, fs->owner_gid, err, errlen) < 0)
		return -1;
	/* The share's owner is the namespace's root. */
	const struct jail_userns owner = { .uid = fs->owner, .gid = fs->owner_gid };
	const struct jail_mount share = {
		.src = fs->dir,
		.flags = JAIL_MOUNT_SAME | (fs->ro ? 0 : JAIL_MOUNT_RW),
		.dev = fs->dev, /* the directory the policy judged, checked again in the child */
		.ino = fs->ino,
	};
	struct jail_spec spec = {
		.map_root = &owner,
		.mounts = &share,
		.nmounts = 1,
		.out_fd = diag_fd,
		.diag_fd = diag_fd,
		/* Read-only, read-write and hidden paths inside it, and all of it locked. */
		.prepare = fs->rules && fs->rules->n ? share_rules_apply : NULL,
		.prepare_arg = fs->rules,
		.lock_mounts = true,
		/* The guest may not leave set-user-ID programs on the host through the share. */
		.seccomp = share_fs_forbid_setid,
	};
	/* cache=auto: the host side may change while the session runs (a developer
	 * editing the tree), and auto revalidates on open; see docs/ARCHITECTURE.md. */
	pid_t pid = share_fs_virtiofsd(fs->dir, "auto", fs->sock, &spec, err, errlen);
	if (pid < 0) {
		fs->sock[0] = '\0';
		return -1;
	}
	fs->pid = pid;
	return 0;
}

void share_fs_stop(struct share_fs *fs)
{
	/* virtiofsd forks into its own PID namespace; its process group holds both, and the
	 * sandboxed one is ours to reap once its parent is gone (proc_adopt_orphans). */
	proc_stop(&fs->pid);
	if (fs->sock[0]) {
		unlink(fs->sock);
		fs->sock[0] = '\0';
	}
	if (fs->rules)
		share_rules_cleanup(fs->rules);
}
