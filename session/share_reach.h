/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_reach.h: whether a host file is within a guest's reach through a share.
 *
 * A path is not enough: the same directory may be mounted elsewhere (a bind mount of the
 * share, or of a directory inside it), a file may be bind-mounted into the share, or have a
 * hard link there. So files and shares are compared where they are in their file systems, as
 * the mount table (libmount, /proc/self/mountinfo) tells: a share reaches every place beneath
 * its own directory, and beneath each mount inside it, on the same file system. */
#ifndef BULKHEAD_SESSION_SHARE_REACH_H
#define BULKHEAD_SESSION_SHARE_REACH_H

#include <stddef.h>

/* The mount table, read once for all the questions of one plan. NULL with why in err. */
struct share_mounts;
struct share_mounts *share_mounts_read(char *err, size_t errlen);
void share_mounts_free(struct share_mounts *m);

/* 1 when the guest can reach PATH through the share of directory SHARE_DIR (as the mount
 * table M says): the file itself, or (when PATH does not exist yet) what would be made there;
 * also when PATH is a regular file with other names on a file system the share reaches (one
 * of them could be inside it). 0 when it cannot. -1 when it cannot be told, with why in err
 * (the caller refuses: no answer is not a no). */
int share_reaches(const struct share_mounts *m, const char *share_dir, const char *path, char *err,
		  size_t errlen);

#endif
