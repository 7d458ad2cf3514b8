/* SPDX-License-Identifier: Apache-2.0 */
/* serve/files.c: PUT and GET files/{path} under a session's work directory, the start and end
 * of every upload (a tar stream is unpacked by serve/archive.c).
 *
 * The guest writes the work directory while we work in it, so nothing found there is trusted:
 * every path is resolved by the kernel beneath a descriptor of the work directory (openat2,
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS); a file is opened for reading only once its O_PATH
 * descriptor says it is regular (a FIFO or a device is never opened); what we write is made
 * under a fresh name (O_EXCL | O_NOFOLLOW) in an opened directory and renamed into place. */
#include "serve/files.h"
#include "serve/files_internal.h"
#include "lib/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

/* openat2 answers EAGAIN when a rename elsewhere could have fooled its ".." check; the guest
 * can cause that at will, so a few retries, then an error rather than a loop. */
#define FILES_AGAIN_MAX 16
/* How many taken temporary names we step over before giving up (the guest can take some). */
#define FILES_TMP_TRIES 64
/* How much of a guest-chosen name goes into an error message. */
#define FILES_WHY_NAME 160

struct serve_upload {
	bool archive;
	int dirfd; /* file: its directory; archive: the directory unpacked into (O_PATH) */
	int fd;	   /* file: the temporary file; archive: the spool */
	struct files_owner own;
	unsigned long long size;
	enum serve_err failed;	 /* a feed's failure: the upload is over */
	char name[NAME_MAX + 1]; /* file: its name in dirfd */
	char tmp[FILES_TMP_LEN]; /* file: the temporary name in dirfd ("" once renamed) */
	char rel[PATH_MAX];	 /* for messages */
};

enum serve_err files_fail(char *why, size_t whylen, enum serve_err status, const char *name,
			  const char *fmt, ...)
{
	/* The name is the client's or the guest's: made one printable ASCII line (JSON-safe). */
	char shown[FILES_WHY_NAME + 4];
	size_t n = 0;
	for (; name[n] && n < FILES_WHY_NAME; n++)
		shown[n] = (name[n] >= 0x20 && name[n] < 0x7f) ? name[n] : '?';
	strcpy(shown + n, name[n] ? "..." : "");
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(why, whylen, "%s: %s", n ? shown : "the work directory", msg);
	return status;
}

enum serve_err files_status(int err, const char *name, char *why, size_t whylen)
{
	switch (err) {
	case ENOENT:
		return files_fail(why, whylen, SERVE_E_NOT_FOUND, name,
				  "no such file or directory");
	case EXDEV:
	case ELOOP:
		return files_fail(why, whylen, SERVE_E_INVALID, name,
				  "leads outside the work directory (or through too many links)");
	case ENOTDIR:
		return files_fail(why, whylen, SERVE_E_CONFLICT, name, "not a directory");
	case EISDIR:
		return files_fail(why, whylen, SERVE_E_CONFLICT, name, "is a directory");
	case ENAMETOOLONG:
		return files_fail(why, whylen, SERVE_E_INVALID, name, "name too long");
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return files_fail(why, whylen, SERVE_E_TOO_LARGE, name, "%s", strerror(err));
	default:
		return files_fail(why, whylen, SERVE_E_INTERNAL, name, "%s", strerror(err));
	}
}

enum serve_err files_check(const char *rel, bool file, char *why, size_t whylen)
{
	if (strlen(rel) >= PATH_MAX)
		return files_fail(why, whylen, SERVE_E_INVALID, rel, "path longer than %d bytes",
				  PATH_MAX - 1);
	if (rel[0] == '/')
		return files_fail(why, whylen, SERVE_E_INVALID, rel,
				  "absolute path (paths are relative to the work directory)");
	const char *last = strrchr(rel, '/');
	last = last ? last + 1 : rel;
	if (file && (!*last || !strcmp(last, ".") || !strcmp(last, "..")))
		return files_fail(why, whylen, SERVE_E_INVALID, rel, "names no file");
	if (strlen(last) > NAME_MAX)
		return files_fail(why, whylen, SERVE_E_INVALID, rel, "name longer than %d bytes",
				  NAME_MAX);
	return 0;
}

int files_open_work(const char *work, struct files_owner *own, enum serve_err *status, char *why,
		    size_t whylen)
{
	struct stat st;
	int fd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		*status = files_fail(why, whylen, SERVE_E_INTERNAL, "", "%s: %s", work,
				     strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	own->uid = st.st_uid;
	own->gid = st.st_gid;
	own->chown = geteuid() == 0;
	return fd;
}

int files_beneath(int dirfd, const char *path, int flags)
{
	/* openat2 refuses O_PATH with any flag it would ignore (O_NOCTTY among them). */
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY)),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	for (int i = 0; i < FILES_AGAIN_MAX; i++) {
		long fd = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return -EAGAIN;
}

int files_open_regular(int dirfd, const char *path, bool beneath, struct stat *st)
{
	int pfd = beneath ? files_beneath(dirfd, path, O_PATH)
			  : openat(dirfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return beneath ? pfd : -errno;
	int err = fstat(pfd, st) < 0 ? -errno : S_ISREG(st->st_mode) ? 0 : FILES_NOT_REGULAR;
	if (err) {
		close(pfd);
		return err;
	}
	/* Reopened through its O_PATH descriptor: the very inode just checked, where a second
	 * lookup of the name could meet a FIFO or a device the guest swapped in. */
	char proc[40];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	int fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	return fd < 0 ? err : fd;
}

void files_tmp_name(char *tmp)
{
	/* Unguessable, so the guest cannot keep taking our next name; a counter if the kernel
	 * has no randomness to give (O_EXCL keeps a guessed name harmless anyway). */
	static atomic_ullong counter;
	unsigned long long r;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = atomic_fetch_add(&counter, 1) ^ ((unsigned long long)getpid() << 32);
	snprintf(tmp, FILES_TMP_LEN, ".bulkhead-%016llx", r);
}

int files_tmp_create(int dirfd, char *tmp, mode_t perm, const struct files_owner *own)
{
	for (int i = 0; i < FILES_TMP_TRIES; i++) {
		files_tmp_name(tmp);
		int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		if (fd < 0 && (errno == EEXIST || errno == EINTR))
			continue;
		if (fd < 0)
			return -errno;
		/* Mode after owner: an ownership change may clear mode bits. */
		if ((own->chown && fchown(fd, own->uid, own->gid) < 0) || fchmod(fd, perm) < 0) {
			int err = errno;
			close(fd);
			unlinkat(dirfd, tmp, 0);
			return -err;
		}
		return fd;
	}
	return -EEXIST;
}

int files_spool(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	/* A file system without O_TMPFILE: a name for the moment it takes to unlink it. */
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/spool-XXXXXX", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

/* PUT files/{rel}: its directory opened now (so a bad path fails before any body), the file
 * made under a temporary name there. */
static enum serve_err upload_start_file(struct serve_upload *u, int wfd, mode_t mode, char *why,
					size_t whylen)
{
	if (mode & ~(mode_t)07777)
		return files_fail(why, whylen, SERVE_E_INVALID, u->rel,
				  "mode %o is not permission bits", (unsigned)mode);
	/* A set-ID file on a share the host sees is a way up for whoever can run it there. */
	if (mode & (S_ISUID | S_ISGID))
		return files_fail(why, whylen, SERVE_E_INVALID, u->rel,
				  "set-user-ID and set-group-ID files are not accepted");
	char dir[PATH_MAX];
	const char *slash = strrchr(u->rel, '/');
	size_t dlen = slash ? (size_t)(slash - u->rel) : 0;
	memcpy(dir, u->rel, dlen);
	dir[dlen] = 0;
	strcpy(u->name, slash ? slash + 1 : u->rel); /* files_check bounded it by NAME_MAX */
	u->dirfd = files_beneath(wfd, dir, O_PATH | O_DIRECTORY);
	if (u->dirfd == -ENOENT)
		return files_fail(why, whylen, SERVE_E_NOT_FOUND, u->rel,
				  "its directory does not exist");
	if (u->dirfd < 0)
		return files_status(-u->dirfd, u->rel, why, whylen);
	/* Checked again by the rename (EISDIR), should a directory appear meanwhile. */
	struct stat st;
	if (fstatat(u->dirfd, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return files_fail(why, whylen, SERVE_E_CONFLICT, u->rel, "is a directory");
	u->fd = files_tmp_create(u->dirfd, u->tmp, mode & 0777, &u->own);
	if (u->fd < 0) {
		u->tmp[0] = 0;
		return files_status(-u->fd, u->rel, why, whylen);
	}
	return 0;
}

/* PUT archive/{rel}: the directory opened now, the body spooled until it is whole (a tar
 * stream is unpacked only once all of it is known to be there). */
static enum serve_err upload_start_archive(struct serve_upload *u, int wfd, const char *state_dir,
					   char *why, size_t whylen)
{
	u->dirfd = files_beneath(wfd, u->rel, O_PATH | O_DIRECTORY);
	if (u->dirfd < 0)
		return files_status(-u->dirfd, u->rel, why, whylen);
	u->fd = files_spool(state_dir);
	if (u->fd < 0)
		return files_fail(why, whylen, SERVE_E_INTERNAL, u->rel, "spooling in %s: %s",
				  state_dir, strerror(-u->fd));
	return 0;
}

static void upload_free(struct serve_upload *u)
{
	if (u->tmp[0] && u->dirfd >= 0)
		unlinkat(u->dirfd, u->tmp, 0);
	if (u->fd >= 0)
		close(u->fd);
	if (u->dirfd >= 0)
		close(u->dirfd);
	free(u);
}

struct serve_upload *serve_upload_start(const char *work, const char *rel, bool archive,
					mode_t mode, const char *state_dir, enum serve_err *status,
					char *why, size_t whylen)
{
	*status = files_check(rel, !archive, why, whylen);
	if (*status)
		return NULL;
	struct serve_upload *u = calloc(1, sizeof(*u));
	if (!u) {
		*status = files_fail(why, whylen, SERVE_E_INTERNAL, rel, "out of memory");
		return NULL;
	}
	u->archive = archive;
	u->dirfd = u->fd = -1;
	strcpy(u->rel, rel); /* files_check bounded it by PATH_MAX */
	int wfd = files_open_work(work, &u->own, status, why, whylen);
	if (wfd >= 0) {
		*status = archive ? upload_start_archive(u, wfd, state_dir, why, whylen)
				  : upload_start_file(u, wfd, mode, why, whylen);
		close(wfd);
	}
	if (*status) {
		upload_free(u);
		return NULL;
	}
	return u;
}

enum serve_err serve_upload_feed(struct serve_upload *u, const char *data, size_t len, char *why,
				 size_t whylen)
{
	if (u->failed)
		return files_fail(why, whylen, u->failed, u->rel, "the upload has failed");
	int r = io_write_full(u->fd, data, len);
	if (r < 0)
		return u->failed = files_status(-r, u->rel, why, whylen);
	u->size += len;
	return 0;
}

/* A file that already exists is rewritten in place once the whole body has arrived (a failed
 * upload never touches it): a guest that has it cached by name sees the new bytes at its next
 * open, where a rename would leave it on the old inode for virtiofsd's entry timeout. Only a
 * regular file with one link, reached without following a link and reopened through its
 * O_PATH descriptor; anything else is replaced by the rename. 0 done, -1 not done. */
static int rewrite_in_place(struct serve_upload *u)
{
	struct stat st, tst;
	char proc[64];
	int p = openat(u->dirfd, u->name, O_PATH | O_NOFOLLOW | O_CLOEXEC), t = -1, rc = -1;
	/* The temporary file was made for writing: read it through a descriptor of its own. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", u->fd);
	int src = open(proc, O_RDONLY | O_CLOEXEC);
	if (p < 0 || src < 0 || fstat(p, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    fstat(src, &tst) < 0)
		goto out;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	t = open(proc, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (t < 0 || ftruncate(t, 0) < 0)
		goto out;
	for (off_t left = tst.st_size; left > 0;) {
		ssize_t n = copy_file_range(src, NULL, t, NULL, (size_t)left, 0);
		if (n <= 0)
			goto out;
		left -= n;
	}
	if ((u->own.chown && fchown(t, u->own.uid, u->own.gid) < 0) ||
	    fchmod(t, tst.st_mode & 0777) < 0)
		goto out;
	rc = 0;
out:
	if (t >= 0)
		close(t);
	if (p >= 0)
		close(p);
	if (src >= 0)
		close(src);
	return rc;
}

enum serve_err serve_upload_finish(struct serve_upload *u, bool commit, unsigned long long *size,
				   char *why, size_t whylen)
{
	enum serve_err status = 0;
	if (!commit) {
		/* abandoned: upload_free removes the temporary file */
	} else if (u->failed) {
		status = files_fail(why, whylen, u->failed, u->rel, "the upload has failed");
	} else if (u->archive) {
		if (lseek(u->fd, 0, SEEK_SET) < 0)
			status = files_status(errno, u->rel, why, whylen);
		else
			status = serve_archive_unpack(u->fd, u->dirfd, &u->own, &u->size, why,
						      whylen);
	} else if (rewrite_in_place(u) == 0) {
		/* upload_free removes the temporary file */
	} else if (renameat(u->dirfd, u->tmp, u->dirfd, u->name) < 0) {
		status = files_status(errno, u->rel, why, whylen);
	} else {
		u->tmp[0] = 0;
	}
	if (commit && !status && size)
		*size = u->size;
	upload_free(u);
	return status;
}

enum serve_err serve_file_body(const char *work, const char *rel, struct serve_body *out,
			       char *why, size_t whylen)
{
	struct files_owner own;
	enum serve_err err = files_check(rel, true, why, whylen);
	if (err)
		return err;
	int wfd = files_open_work(work, &own, &err, why, whylen);
	if (wfd < 0)
		return err;
	struct stat st;
	int fd = files_open_regular(wfd, rel, true, &st);
	close(wfd);
	if (fd == FILES_NOT_REGULAR)
		return files_fail(why, whylen, SERVE_E_CONFLICT, rel, "not a regular file");
	if (fd < 0)
		return files_status(-fd, rel, why, whylen);
	*out = (struct serve_body){ .fd = fd, .size = (unsigned long long)st.st_size };
	return SERVE_OK;
}
