/* SPDX-License-Identifier: Apache-2.0 */
/* serve/archive_pack.c: a directory of a session's work directory as a pax tar stream (GET
 * archive/{dir}), spooled whole before it is sent, so a failure is a status, not a cut
 * stream: directories, regular files and symbolic links (stored as links, never followed),
 * on the top's own file system only, at most ARC_DEPTH_MAX levels and ARC_SPOOL_MAX_GIB of
 * file data. */
#include "serve/files.h"
#include "serve/files_internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* serve_archive_pack's walk: the path of the entry at hand, relative to the top. */
struct arc_pack {
	struct archive *a;
	struct archive_entry *e;
	uint64_t budget; /* bytes of file data the spool may still take */
	dev_t dev;
	uint64_t mnt;
	char *why;
	size_t whylen;
	char path[(ARC_DEPTH_MAX + 1) * (NAME_MAX + 1) + 1];
	char link[PATH_MAX];
	char buf[ARC_BLOCK];
};

/* The mount fd is on (0 when the kernel does not say), so that packing stays on the top's. */
static uint64_t arc_mnt(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

static enum serve_err arc_header(struct arc_pack *p, const struct stat *st, const char *link)
{
	archive_entry_clear(p->e);
	archive_entry_copy_pathname(p->e, p->path);
	archive_entry_set_filetype(p->e, st->st_mode & S_IFMT);
	archive_entry_set_perm(p->e, st->st_mode & 07777);
	archive_entry_set_uid(p->e, st->st_uid);
	archive_entry_set_gid(p->e, st->st_gid);
	archive_entry_set_mtime(p->e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	archive_entry_set_size(p->e, S_ISREG(st->st_mode) ? st->st_size : 0);
	if (link)
		archive_entry_copy_symlink(p->e, link);
	int r = archive_write_header(p->a, p->e);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return files_fail(p->why, p->whylen, SERVE_E_INTERNAL, p->path, "tar: %s",
				  archive_error_string(p->a));
	return 0;
}

/* A regular file's bytes as its header says: one that shrinks meanwhile is padded (by
 * libarchive), one that grows is cut at the size announced. */
static enum serve_err arc_pack_file(struct arc_pack *p, int dfd, const char *name)
{
	struct stat st;
	int fd = files_open_regular(dfd, name, false, &st);
	if (fd == FILES_NOT_REGULAR || fd == -ENOENT)
		return 0; /* swapped or gone meanwhile */
	if (fd < 0)
		return files_status(-fd, p->path, p->why, p->whylen);
	/* A sparse file of the guest's is small on its disk and as large as it says in a tar. */
	if ((uint64_t)st.st_size > p->budget) {
		close(fd);
		return files_fail(
			p->why, p->whylen, SERVE_E_TOO_LARGE, p->path,
			"the archive would be larger than the daemon may spool (its limit "
			"is the smaller of %d GiB and half the free space)",
			ARC_SPOOL_MAX_GIB);
	}
	p->budget -= (uint64_t)st.st_size;
	enum serve_err status = arc_header(p, &st, NULL);
	for (off_t left = st.st_size; !status && left > 0;) {
		size_t want = (size_t)left < sizeof(p->buf) ? (size_t)left : sizeof(p->buf);
		ssize_t n = read(fd, p->buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			status = files_status(errno, p->path, p->why, p->whylen);
		else if (n == 0)
			break;
		else if (archive_write_data(p->a, p->buf, (size_t)n) < 0)
			status = files_fail(p->why, p->whylen, SERVE_E_INTERNAL, p->path, "tar: %s",
					    archive_error_string(p->a));
		else
			left -= n;
	}
	close(fd);
	return status;
}

static enum serve_err arc_pack_dir(struct arc_pack *p, int dfd, size_t plen, int depth);

/* The entry name in dfd, p->path naming it: files, links and directories (FIFOs, sockets and
 * devices have no place in what we hand out); never across a mount point. */
static enum serve_err arc_pack_one(struct arc_pack *p, int dfd, const char *name, size_t plen,
				   int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : files_status(errno, p->path, p->why, p->whylen);
	if (S_ISREG(st.st_mode))
		return arc_pack_file(p, dfd, name);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dfd, name, p->link, sizeof(p->link) - 1);
		if (n < 0)
			return 0; /* swapped or gone meanwhile */
		p->link[n] = 0;
		return arc_header(p, &st, p->link);
	}
	if (!S_ISDIR(st.st_mode) || st.st_dev != p->dev)
		return 0;
	if (depth >= ARC_DEPTH_MAX)
		return files_fail(p->why, p->whylen, SERVE_E_TOO_LARGE, p->path,
				  "more than %d levels deep", ARC_DEPTH_MAX);
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP
			       ? 0
			       : files_status(errno, p->path, p->why, p->whylen);
	if (fstat(fd, &st) < 0 || st.st_dev != p->dev || arc_mnt(fd) != p->mnt) {
		close(fd); /* a mount point (a bind mount keeps st_dev: the mount's id tells) */
		return 0;
	}
	enum serve_err status = arc_header(p, &st, NULL);
	if (status) {
		close(fd);
		return status;
	}
	return arc_pack_dir(p, fd, plen, depth + 1);
}

/* The entries of the directory dfd (consumed), whose path is p->path[0..plen). */
static enum serve_err arc_pack_dir(struct arc_pack *p, int dfd, size_t plen, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return files_status(errno, p->path, p->why, p->whylen);
	}
	enum serve_err status = 0;
	struct dirent *de;
	while (!status && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* Fits: each level adds at most NAME_MAX + 1 bytes, and levels are bounded. */
		size_t at = plen ? plen + 1 : 0;
		size_t len = strlen(de->d_name);
		if (plen)
			p->path[plen] = '/';
		memcpy(p->path + at, de->d_name, len + 1);
		status = arc_pack_one(p, dirfd(d), de->d_name, at + len, depth);
		p->path[plen] = 0;
	}
	closedir(d);
	return status;
}

enum serve_err serve_archive_pack(int dfd, int out, char *why, size_t whylen)
{
	struct stat st;
	struct arc_pack *p = calloc(1, sizeof(*p));
	if (!p || fstat(dfd, &st) < 0) {
		enum serve_err status = files_fail(why, whylen, SERVE_E_INTERNAL, "", "%s",
						   strerror(p ? errno : ENOMEM));
		free(p);
		close(dfd);
		return status;
	}
	p->dev = st.st_dev;
	p->mnt = arc_mnt(dfd);
	struct statvfs vfs;
	p->budget = (uint64_t)ARC_SPOOL_MAX_GIB << 30;
	if (fstatvfs(out, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize / 2 < p->budget)
		p->budget = (uint64_t)vfs.f_bavail * vfs.f_frsize / 2;
	p->why = why;
	p->whylen = whylen;
	p->a = archive_write_new();
	p->e = archive_entry_new();
	enum serve_err status = 0;
	if (!p->a || !p->e || archive_write_set_format_pax_restricted(p->a) != ARCHIVE_OK ||
	    archive_write_open_fd(p->a, out) != ARCHIVE_OK) {
		status = files_fail(why, whylen, SERVE_E_INTERNAL, "", "tar: %s",
				    p->a ? archive_error_string(p->a) : "out of memory");
		close(dfd);
	} else {
		status = arc_pack_dir(p, dfd, 0, 0);
	}
	if (!status && archive_write_close(p->a) != ARCHIVE_OK)
		status = files_fail(why, whylen, SERVE_E_INTERNAL, "", "tar: %s",
				    archive_error_string(p->a));
	if (p->a)
		archive_write_free(p->a);
	if (p->e)
		archive_entry_free(p->e);
	free(p);
	return status;
}

enum serve_err serve_archive_body(const char *work, const char *rel, const char *state_dir,
				  struct serve_body *body, char *why, size_t whylen)
{
	struct files_owner own;
	enum serve_err err = files_check(rel, false, why, whylen);
	if (err)
		return err;
	int wfd = files_open_work(work, &own, &err, why, whylen);
	if (wfd < 0)
		return err;
	int dfd = files_beneath(wfd, rel, O_RDONLY | O_DIRECTORY);
	close(wfd);
	if (dfd < 0)
		return files_status(-dfd, rel, why, whylen);
	/* Written whole before the answer starts, so a failure is a status, not a cut stream. */
	int out = files_spool(state_dir);
	if (out < 0) {
		close(dfd);
		return files_fail(why, whylen, SERVE_E_INTERNAL, rel, "spooling in %s: %s",
				  state_dir, strerror(-out));
	}
	struct stat st;
	err = serve_archive_pack(dfd, out, why, whylen);
	if (!err && fstat(out, &st) < 0)
		err = files_status(errno, rel, why, whylen);
	if (err) {
		close(out);
		return err;
	}
	*body = (struct serve_body){ .fd = out, .size = (unsigned long long)st.st_size };
	return SERVE_OK;
}
