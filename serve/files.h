/* SPDX-License-Identifier: Apache-2.0 */
/* serve/files.h: files and tar archives under a session's work directory (docs/API.md,
 * "Files"). Every path is resolved by the kernel beneath the work directory (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): no "..", absolute path or symbolic link leads
 * out of it, whatever the guest has made of the tree. What is written belongs to the work
 * directory's owner. Each failure is an enum serve_err with a one-line why. */
#ifndef BULKHEAD_SERVE_FILES_H
#define BULKHEAD_SERVE_FILES_H

#include "serve/body.h"
#include "serve/serve_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* An upload in progress (PUT files/{path} or archive/{dir}): started when its request's
 * headers arrive, fed each piece of the body, finished at its end. A failed upload leaves
 * nothing behind: a file is written under a temporary name and renamed at the end. */
struct serve_upload;

/* archive: false = a file at rel (mode: its permission bits, e.g. 0644), true = a tar
 * stream unpacked under the directory rel ("" = the work directory). state_dir is where
 * a tar stream is spooled. NULL with *err and why on failure. */
struct serve_upload *serve_upload_start(const char *work, const char *rel, bool archive,
					mode_t mode, const char *state_dir, enum serve_err *err,
					char *why, size_t whylen);
/* SERVE_OK, or why (the upload is then over: feed no more, call finish to free). */
enum serve_err serve_upload_feed(struct serve_upload *u, const char *data, size_t len, char *why,
				 size_t whylen);
/* Completes (commit true) or abandons it, and frees it. SERVE_OK, or why. On success
 * *size is the file's size, or the number of archive entries. */
enum serve_err serve_upload_finish(struct serve_upload *u, bool commit, unsigned long long *size,
				   char *why, size_t whylen);

/* GET files/{path}: the regular file's bytes; GET archive/{dir}: the directory as a tar
 * stream (links are stored as links, never followed), spooled in state_dir first. SERVE_OK
 * with *body (a file, closed with the answer), or why. */
enum serve_err serve_file_body(const char *work, const char *rel, struct serve_body *body,
			       char *why, size_t whylen);
enum serve_err serve_archive_body(const char *work, const char *rel, const char *state_dir,
				  struct serve_body *body, char *why, size_t whylen);

#endif
