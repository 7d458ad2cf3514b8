/* SPDX-License-Identifier: Apache-2.0 */
/* serve/files_internal.h: what serve/files.c (paths, files, uploads) and serve/archive.c (tar
 * streams) share: resolution beneath a directory, temporary names, one-line statuses. */
#ifndef BULKHEAD_SERVE_FILES_INTERNAL_H
#define BULKHEAD_SERVE_FILES_INTERNAL_H

#include "serve/serve_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* files_open_regular's answer for a path that is there but is no regular file. */
#define FILES_NOT_REGULAR (-4096)
/* Room for a temporary name (files_tmp_name). */
#define FILES_TMP_LEN 32

/* Whom what we create belongs to: the work directory's owner, when we may give it away. */
struct files_owner {
	uid_t uid;
	gid_t gid;
	bool chown; /* we are root */
};

/* "NAME: message" into why (NAME made printable and short), returning err. */
enum serve_err files_fail(char *why, size_t whylen, enum serve_err err, const char *name,
			  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The kind and why for a failed call's errno on name. */
enum serve_err files_status(int err, const char *name, char *why, size_t whylen);
/* SERVE_OK, or SERVE_E_INVALID: rel is relative, shorter than PATH_MAX and, for a file, names one
 * (its last component neither empty, "." nor ".."). */
enum serve_err files_check(const char *rel, bool file, char *why, size_t whylen);
/* The work directory as an O_PATH descriptor, with its owner; -1 with *err on failure. */
int files_open_work(const char *work, struct files_owner *own, enum serve_err *err, char *why,
		    size_t whylen);
/* openat2 of path ("" = dirfd itself) beneath dirfd. A descriptor, or -errno. */
int files_beneath(int dirfd, const char *path, int flags);
/* A regular file opened for reading, never any other kind (a FIFO or a device is not even
 * opened): path resolved beneath dirfd, or (beneath false) the single name in dirfd, not
 * followed if a link. A descriptor with *st, FILES_NOT_REGULAR, or -errno. */
int files_open_regular(int dirfd, const char *path, bool beneath, struct stat *st);
/* A fresh unguessable name (FILES_TMP_LEN bytes) for something made then renamed. */
void files_tmp_name(char *tmp);
/* A new file under a temporary name in dirfd (written to tmp), owned by own, with perm. A
 * descriptor open for writing, or -errno. */
int files_tmp_create(int dirfd, char *tmp, mode_t perm, const struct files_owner *own);
/* A nameless read-write file in dir (O_TMPFILE, else made and unlinked). Or -errno. */
int files_spool(const char *dir);

#define ARC_DEPTH_MAX 64    /* levels a tar stream out may have */
#define ARC_BLOCK     65536 /* libarchive's block, in and out */
/* A tar stream out is spooled whole before it is sent: at most this much file data. */
#define ARC_SPOOL_MAX_GIB 4

/* Unpacks the tar stream in spool (read from its start) under base (an O_PATH directory).
 * SERVE_OK with *entries, or why. */
enum serve_err serve_archive_unpack(int spool, int base, const struct files_owner *own,
				    unsigned long long *entries, char *why, size_t whylen);
/* Writes the directory dfd (consumed) as a pax tar stream to out. SERVE_OK, or why. */
enum serve_err serve_archive_pack(int dfd, int out, char *why, size_t whylen);

#endif
