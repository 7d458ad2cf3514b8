/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_fs.h: the work share — one virtiofsd per session, serving DIR to the
 * guest as virtio-fs tag "work", started through the jail in its own user and mount
 * namespaces. */
#ifndef BULKHEAD_SESSION_SHARE_FS_H
#define BULKHEAD_SESSION_SHARE_FS_H

#include "session/rundir.h"
#include "lib/boot_args.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SHARE_FS_TAG BOOT_ARGS_WORK_TAG /* the guest mounts this tag (lib/boot_args.h) */

struct share_fs {
	pid_t pid;	    /* virtiofsd (leader of its own process group), 0 if none */
	char sock[108];	    /* vhost-user socket the engine connects to */
	char dir[PATH_MAX]; /* the shared directory, resolved */
	bool ro;
	dev_t dev; /* the directory as share_fs_parse found it */
	ino_t ino;
	uid_t owner; /* host uid the guest's root writes as */
	gid_t owner_gid;
	/* Its rules (session/share_rules.h), resolved; NULL or none: the share's mode everywhere.
	 * The plan's: share_fs_stop() removes what they made, never frees them. */
	struct share_rules *rules;
};

/* "LABEL PATH: the path goes through a symbolic link; name the WHAT itself: REAL" into err;
 * returns -1. For every path that may not go through a link (a share, the scope). */
int share_fs_link_error(const char *label, const char *path, const char *what, char *err,
			size_t errlen);
/* Parses "DIR" or "DIR:ro" / "DIR:rw" (--work) into the directory and the mode, as
 * share_fs_resolve. Returns 0, or -1 with a one-line reason. */
int share_fs_parse(const char *spec, struct share_fs *fs, char *err, size_t errlen);
/* Opens directory DIR (which may not go through a symbolic link) and fills fs with where it
 * is, its identity and owner, and the mode RO. LABEL starts error messages ("--work").
 * Returns 0, or -1 with a one-line reason. */
int share_fs_resolve(const char *dir, bool ro, const char *label, struct share_fs *fs, char *err,
		     size_t errlen);

/* Starts virtiofsd for fs->dir with its socket NAME (e.g. "fs.sock") in rd. diag_fd receives
 * its stderr. Returns 0, or -1 with a one-line reason in err. */
int share_fs_start(struct share_fs *fs, const struct rundir *rd, const char *name, int diag_fd,
		   char *err, size_t errlen);

/* Starts virtiofsd serving DIR with cache mode CACHE ("auto", "always") over a socket it
 * listens on at SOCK, through the jail as SPEC says (its descriptors are set here). Returns its
 * pid, or -1 with a one-line reason in err (and no socket left). The work share and an image's
 * root (session/share_image.c) both start theirs here. */
struct jail_spec;
pid_t share_fs_virtiofsd(const char *dir, const char *cache, const char *sock,
			 struct jail_spec *spec, char *err, size_t errlen);

/* share_fs_modes.c: in virtiofsd's process before its exec, a seccomp filter that refuses
 * (EPERM) every mode with the set-user-ID or set-group-ID bit. 0 or -errno. */
int share_fs_forbid_setid(void);

/* Stops virtiofsd and everything it started, then removes what the rules made (empty
 * directories); safe to call twice. */
void share_fs_stop(struct share_fs *fs);

#endif
