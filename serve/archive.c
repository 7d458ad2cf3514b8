/* SPDX-License-Identifier: Apache-2.0 */
/* serve/archive.c: a tar stream into a session's work directory (PUT archive/{dir}),
 * unpacked entry by entry (directories, regular files and symbolic links only), never
 * following a link out of the tree; serve/archive_pack.c makes the streams out. Plain tar
 * only: libarchive's decompression filters may run outside programs. */
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
#include <unistd.h>

#define ARC_ENTRIES_MAX 100000
/* arc_put_file's answer when the archive itself fails (libarchive has the message). */
#define ARC_BAD (-4097)

/* The entry's name relative to the directory unpacked into: "." and empty components dropped
 * ("./a//b/" is "a/b"), "" for that directory itself. An absolute name or ".." anywhere is
 * refused, whatever it would resolve to. */
static enum serve_err arc_clean_name(const char *name, char *out, size_t outlen, char *why,
				     size_t whylen)
{
	if (name[0] == '/')
		return files_fail(why, whylen, SERVE_E_INVALID, name,
				  "archive entry with an absolute name");
	size_t n = 0;
	for (const char *p = name; *p;) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return files_fail(why, whylen, SERVE_E_INVALID, name,
					  "archive entry with \"..\"");
		if (len > NAME_MAX || n + 1 + len >= outlen)
			return files_fail(why, whylen, SERVE_E_INVALID, name,
					  "archive entry's name too long");
		if (len && !(len == 1 && p[0] == '.')) {
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = *end ? end + 1 : end;
	}
	out[n] = 0;
	return 0;
}

/* Makes the directory name in dirfd (or, with existing, takes the one there) and gives it to
 * the owner with perm. 0 or -errno (ENOTDIR or ELOOP: something else has that name). */
static int arc_mkdir(int dirfd, const char *name, mode_t perm, const struct files_owner *own,
		     bool existing)
{
	if (mkdirat(dirfd, name, 0700) < 0 && (errno != EEXIST || !existing))
		return -errno;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = 0;
	if ((own->chown && fchown(fd, own->uid, own->gid) < 0) || fchmod(fd, perm) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* The directory that holds path (its last component excluded), made as needed one component
 * at a time. Each prefix is resolved beneath base, so a link inside the tree is followed and
 * one leading out is refused (EXDEV); a missing component is made in its resolved parent.
 * An O_PATH descriptor, or -errno. */
static int arc_parent(int base, char *path, const struct files_owner *own)
{
	char *slash = strrchr(path, '/');
	if (!slash)
		return files_beneath(base, "", O_PATH | O_DIRECTORY);
	*slash = 0;
	int fd = files_beneath(base, path, O_PATH | O_DIRECTORY);
	if (fd == -ENOENT) {
		int cur = files_beneath(base, "", O_PATH | O_DIRECTORY);
		for (char *p = path; cur >= 0;) {
			char *end = strchrnul(p, '/');
			char was = *end;
			*end = 0;
			fd = files_beneath(base, path, O_PATH | O_DIRECTORY);
			if (fd == -ENOENT) {
				int r = arc_mkdir(cur, p, 0755, own, false);
				/* EEXIST: the guest made it meanwhile; resolved like any other */
				fd = r && r != -EEXIST
					     ? r
					     : files_beneath(base, path, O_PATH | O_DIRECTORY);
			}
			*end = was;
			close(cur);
			if (fd < 0 || !was)
				break;
			cur = fd;
			p = end + 1;
		}
		if (cur < 0)
			fd = cur;
	}
	*slash = '/';
	return fd;
}

/* A regular file's data from the archive, sparse holes kept as holes. 0, -errno or ARC_BAD. */
static int arc_copy_data(struct archive *a, int fd)
{
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if ((r != ARCHIVE_OK && r != ARCHIVE_WARN) || off < 0)
			return ARC_BAD;
		for (size_t done = 0; done < len;) {
			ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
					   (off_t)(off + (la_int64_t)done));
			if (n < 0 && errno != EINTR)
				return -errno;
			if (n == 0)
				return -EIO;
			done += n > 0 ? (size_t)n : 0;
		}
	}
}

/* A regular file: written under a temporary name, renamed over name once whole. */
static int arc_put_file(struct archive *a, struct archive_entry *e, int dirfd, const char *name,
			mode_t perm, const struct files_owner *own)
{
	char tmp[FILES_TMP_LEN];
	int fd = files_tmp_create(dirfd, tmp, perm, own);
	if (fd < 0)
		return fd;
	int r = arc_copy_data(a, fd);
	/* The size, for a sparse file that ends in a hole. */
	if (!r && archive_entry_size_is_set(e) && archive_entry_size(e) >= 0 &&
	    ftruncate(fd, (off_t)archive_entry_size(e)) < 0)
		r = -errno;
	if (!r) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
					  { archive_entry_mtime(e), archive_entry_mtime_nsec(e) } };
		futimens(fd, ts); /* a time is nice to have, not worth failing for */
	}
	close(fd);
	if (!r && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r)
		unlinkat(dirfd, tmp, 0);
	return r;
}

/* A symbolic link, its text as given: it stays a link inside the share, and our own
 * resolution (beneath the work directory) never follows it out. */
static int arc_put_link(const char *text, int dirfd, const char *name,
			const struct files_owner *own)
{
	char tmp[FILES_TMP_LEN];
	int r = -EEXIST;
	for (int i = 0; i < 64 && r == -EEXIST; i++) {
		files_tmp_name(tmp);
		r = symlinkat(text, dirfd, tmp) < 0 ? -errno : 0;
	}
	if (r)
		return r;
	if ((own->chown && fchownat(dirfd, tmp, own->uid, own->gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		r = -errno;
		unlinkat(dirfd, tmp, 0);
	}
	return r;
}

/* What of an entry is refused before anything is made for it. 0, or 400 with why. */
static enum serve_err arc_refuse(struct archive_entry *e, const char *raw, char *why, size_t whylen)
{
	const char *what = NULL;
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		what = archive_entry_hardlink(e) ? "a hard link" : NULL;
		break;
	case AE_IFDIR:
		break;
	case AE_IFLNK: {
		const char *text = archive_entry_symlink(e);
		if (!text || !*text || strlen(text) >= PATH_MAX)
			what = "a symbolic link without a usable target";
		break;
	}
	case AE_IFCHR:
	case AE_IFBLK:
		what = "a device";
		break;
	case AE_IFIFO:
		what = "a FIFO";
		break;
	case AE_IFSOCK:
		what = "a socket";
		break;
	default:
		what = archive_entry_hardlink(e) ? "a hard link" : "of an unknown type";
	}
	if (what)
		return files_fail(
			why, whylen, SERVE_E_INVALID, raw,
			"archive entry is %s (only directories, regular files and symbolic links)",
			what);
	return 0;
}

/* One entry, unpacked under base. 0, or a status with why naming the entry. */
static enum serve_err arc_unpack_entry(struct archive *a, struct archive_entry *e, int base,
				       const struct files_owner *own, char *why, size_t whylen)
{
	const char *raw = archive_entry_pathname(e);
	if (!raw)
		return files_fail(why, whylen, SERVE_E_INVALID, "?",
				  "archive entry without a readable name");
	char name[PATH_MAX];
	enum serve_err status = arc_clean_name(raw, name, sizeof(name), why, whylen);
	if (!status)
		status = arc_refuse(e, raw, why, whylen);
	if (status)
		return status;
	unsigned type = archive_entry_filetype(e);
	if (!name[0]) /* "./": the directory unpacked into, there already */
		return type == AE_IFDIR
			       ? 0
			       : files_fail(why, whylen, SERVE_E_INVALID, raw, "names no file");
	int dirfd = arc_parent(base, name, own);
	if (dirfd < 0)
		return files_status(-dirfd, raw, why, whylen);
	const char *leaf = strrchr(name, '/');
	leaf = leaf ? leaf + 1 : name;
	/* Set-ID and sticky bits are dropped: not what a share the host sees should hold. */
	mode_t perm = archive_entry_perm(e) & 0777;
	int r;
	if (type == AE_IFDIR) /* its owner's to enter and fill: later entries go there */
		r = arc_mkdir(dirfd, leaf, perm | 0700, own, true);
	else if (type == AE_IFREG)
		r = arc_put_file(a, e, dirfd, leaf, perm, own);
	else
		r = arc_put_link(archive_entry_symlink(e), dirfd, leaf, own);
	close(dirfd);
	if (r == ARC_BAD)
		return files_fail(why, whylen, SERVE_E_INVALID, raw, "damaged archive: %s",
				  archive_error_string(a));
	if (type == AE_IFDIR && (r == -ENOTDIR || r == -ELOOP))
		return files_fail(why, whylen, SERVE_E_CONFLICT, raw,
				  "exists and is not a directory");
	return r ? files_status(-r, raw, why, whylen) : 0;
}

enum serve_err serve_archive_unpack(int spool, int base, const struct files_owner *own,
				    unsigned long long *entries, char *why, size_t whylen)
{
	struct archive *a = archive_read_new();
	if (!a)
		return files_fail(why, whylen, SERVE_E_INTERNAL, "", "out of memory");
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a); /* an empty body: nothing to unpack */
	enum serve_err status = 0;
	unsigned long long n = 0;
	if (archive_read_open_fd(a, spool, ARC_BLOCK) != ARCHIVE_OK)
		status = files_fail(why, whylen, SERVE_E_INVALID, "", "not a tar stream: %s",
				    archive_error_string(a));
	/* Stops at the first refused entry: those unpacked before it stay (each one whole, as
	 * the client can see from the status naming the entry); the refused one is not made. */
	while (!status) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			status = files_fail(why, whylen, SERVE_E_INVALID, "",
					    "not a tar stream (after %llu entries): %s", n,
					    archive_error_string(a));
		else if (++n > ARC_ENTRIES_MAX)
			status = files_fail(why, whylen, SERVE_E_TOO_LARGE, "",
					    "more than %d archive entries", ARC_ENTRIES_MAX);
		else
			status = arc_unpack_entry(a, e, base, own, why, whylen);
	}
	archive_read_free(a);
	if (!status)
		*entries = n;
	return status;
}
