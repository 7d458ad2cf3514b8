/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_image_keep.c: --keep-changes DIR, the write layer left on the host. DIR is taken
 * with no symbolic link on its path and made 0700; after the session what the guest left there
 * loses set-ID bits, write permission for others and file capabilities (an image's set-user-ID
 * program lands there whole when the guest merely touches it: overlayfs copies it up, mode and
 * all, past virtiofsd's filter); and overlayfs's work directory beside DIR is removed only
 * through descriptors, as the directory this session made (a guest that can reach it, from a
 * work share around DIR, could otherwise point its removal elsewhere). */
#include "session/share_image.h"
#include "jail/jail.h"
#include "lib/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define KEEP_DEPTH_MAX 256 /* directories below DIR the clean-up walks into */

void share_keep_close(struct share_image *si)
{
	if (si->keep_fd >= 0)
		close(si->keep_fd);
	if (si->work_fd >= 0)
		close(si->work_fd);
	si->keep_fd = si->work_fd = -1;
}

static int fd_path(int fd, char *buf, size_t len)
{
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Whether PATH, reached with no symbolic link, is still the directory FD holds. */
bool share_keep_same(const char *path, int fd)
{
	struct stat a, b;
	int at = jail_open_nofollow(path, O_DIRECTORY);
	bool same = at >= 0 && fstat(at, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino;
	if (at >= 0)
		close(at);
	return same;
}

/* An empty directory DIRFD names; EEXIST-style failures leave errno set. */
static bool dir_empty(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *ent;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while ((ent = readdir(d)) && (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")))
		;
	bool empty = !ent;
	closedir(d);
	return empty;
}

/* --keep-changes DIR: DIR (new, or an empty directory) is the upper layer; overlayfs's work
 * directory is DIR.bulkhead-work beside it (the same file system, as overlayfs wants). Neither
 * may be reached through a symbolic link (as with --work: a link a guest planted in a share
 * cannot redirect a later session's writes), and both are held open, so the overlay gets
 * exactly the directories judged here. DIR gets mode 0700: what the guest leaves there may
 * carry modes, owners and file capabilities meant for the guest (a touch copies an image's
 * set-user-ID program up, with its mode), so no other user of the host may reach it. */
int share_keep_open(struct share_image *si, const char *keep, char *err, size_t errlen)
{
	char path[PATH_MAX], parent[PATH_MAX], name[NAME_MAX + 16];
	size_t len = strlen(keep);
	while (len > 1 && keep[len - 1] == '/')
		len--; /* "DIR/", as shells complete it */
	if (len == 0 || len >= sizeof(path))
		return errbuf_fail(err, errlen, -1, "--keep-changes: name a directory");
	memcpy(path, keep, len);
	path[len] = '\0';
	char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	snprintf(parent, sizeof(parent), "%.*s",
		 slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
	if (!strcmp(base, ".") || !strcmp(base, "..") || strlen(base) > NAME_MAX - 16)
		return errbuf_fail(err, errlen, -1,
				   "--keep-changes %s: name the directory itself (not . or ..)",
				   keep);
	int pfd = jail_open_nofollow(parent, O_DIRECTORY);
	if (pfd < 0)
		return errbuf_fail(err, errlen, -1, "--keep-changes %s: %s", keep,
				   pfd == -ELOOP
					   ? "the path goes through a symbolic link; name the "
					     "directory itself"
					   : strerror(-pfd));
	int rc = -1;
	if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST) {
		errbuf_fail(err, errlen, -1, "--keep-changes %s: %s", keep, strerror(errno));
		goto out;
	}
	si->keep_fd = openat(pfd, base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (si->keep_fd < 0 || !dir_empty(si->keep_fd) || fchmodat(pfd, base, 0700, 0) < 0) {
		errbuf_fail(err, errlen, -1, "--keep-changes %s: %s", keep,
			    si->keep_fd < 0 && (errno == ELOOP || errno == ENOTDIR)
				    ? "not a directory (a symbolic link or a file)"
			    : si->keep_fd < 0 ? strerror(errno)
					      : "not an empty directory: name a new or empty one");
		goto out;
	}
	snprintf(name, sizeof(name), "%s.bulkhead-work", base);
	if (mkdirat(pfd, name, 0700) < 0 ||
	    (si->work_fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		errbuf_fail(err, errlen, -1, "--keep-changes: cannot make %s/%s: %s", parent, name,
			    errno == EEXIST ? "it exists (left by a session that was killed?)"
					    : strerror(errno));
		goto out;
	}
	/* Where both are, as the kernel names them: overlayfs looks them up in the builder's own
	 * mount namespace, which holds copies of ours, not the mounts our descriptors are on. The
	 * work directory's parent, name and identity, for its removal (share_keep_finish). */
	struct stat st;
	if (fd_path(si->keep_fd, si->keep, sizeof(si->keep)) < 0 ||
	    fd_path(si->work_fd, si->work, sizeof(si->work)) < 0 ||
	    fd_path(pfd, si->work_parent, sizeof(si->work_parent)) < 0 ||
	    fstat(si->work_fd, &st) < 0) {
		errbuf_fail(err, errlen, -1, "--keep-changes %s: cannot tell where it is", keep);
		goto out;
	}
	snprintf(si->work_name, sizeof(si->work_name), "%.*s", NAME_MAX, name);
	si->work_dev = st.st_dev;
	si->work_ino = st.st_ino;
	rc = 0;
out:
	close(pfd);
	return rc;
}

/* Takes from one entry of DIRFD what would make it dangerous on the host; a directory is
 * walked in turn. Counts what changed; *deep when something lay below KEEP_DEPTH_MAX. */
static void defuse(int fd, unsigned depth, unsigned *changed, bool *deep);

static void defuse_entry(int dirfd, const char *name, unsigned depth, unsigned *changed, bool *deep)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return; /* links, whiteouts (0/0 devices), FIFOs, sockets: nothing runs from them */
	int fd = openat(dirfd, name,
			(S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK) |
				O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	mode_t bad = S_ISUID | S_ISGID | S_IWOTH;
	if ((st.st_mode & bad) && fchmod(fd, st.st_mode & 07777 & ~bad) == 0)
		(*changed)++;
	if (S_ISREG(st.st_mode) && fremovexattr(fd, "security.capability") == 0)
		(*changed)++;
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
	} else if (depth >= KEEP_DEPTH_MAX) {
		*deep = true;
		close(fd);
	} else {
		defuse(fd, depth + 1, changed, deep);
	}
}

static void defuse(int fd, unsigned depth, unsigned *changed, bool *deep)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			defuse_entry(dirfd(d), e->d_name, depth, changed, deep);
	closedir(d);
}

/* overlayfs's work directory, by descriptors from its parent, if it is still the one made. */
static void work_remove(struct share_image *si)
{
	int pfd = jail_open_nofollow(si->work_parent, O_DIRECTORY);
	int wfd = pfd >= 0 ? openat(pfd, si->work_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			   : -1;
	struct stat st;
	if (wfd < 0 || fstat(wfd, &st) < 0 || st.st_dev != si->work_dev ||
	    st.st_ino != si->work_ino) {
		fprintf(stderr,
			"bulkhead: %s/%s is not the directory this session made: left alone\n",
			si->work_parent, si->work_name);
	} else {
		/* Its "work" holds overlayfs's own leftovers (a spare whiteout). */
		int sub = openat(wfd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    unlinkat(dirfd(d), e->d_name, 0) < 0)
				unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		if (d)
			closedir(d);
		else if (sub >= 0)
			close(sub);
		unlinkat(wfd, "work", AT_REMOVEDIR);
		if (unlinkat(pfd, si->work_name, AT_REMOVEDIR) < 0)
			fprintf(stderr, "bulkhead: cannot remove %s/%s: %s\n", si->work_parent,
				si->work_name, strerror(errno));
	}
	if (wfd >= 0)
		close(wfd);
	if (pfd >= 0)
		close(pfd);
}

void share_keep_finish(struct share_image *si)
{
	if (si->keep[0] && si->pid == 0) {
		unsigned changed = 0;
		bool deep = false;
		int fd = jail_open_nofollow(si->keep, O_DIRECTORY);
		int dir = fd >= 0 ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		if (dir >= 0)
			defuse(dir, 0, &changed, &deep);
		if (fd >= 0)
			close(fd);
		if (deep)
			fprintf(stderr,
				"bulkhead: --keep-changes %s: deeper than %d directories; below "
				"that, "
				"set-ID bits and capabilities were not removed (it stays 0700)\n",
				si->keep, KEEP_DEPTH_MAX);
		si->keep[0] = '\0';
	}
	share_keep_close(si);
	if (si->work_name[0]) {
		work_remove(si);
		si->work_name[0] = '\0';
	}
}
