/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_loader.c: a dynamic program's loader and libraries in an empty root (see
 * jail_loader.h), read from this host's own layout. */
#include "jail/jail_loader.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const tops[JAIL_LOADER_TOPS] = { "/lib",    "/lib64", "/lib32",
						    "/libx32", "/bin",	 "/sbin" };

int jail_loader_add(struct jail_loader *l, struct jail_mount *mounts, size_t *n, size_t cap)
{
	if (*n + JAIL_LOADER_MOUNTS > cap)
		return -E2BIG;
	memset(l, 0, sizeof(*l));
	mounts[(*n)++] = (struct jail_mount){ .src = "/usr" };
	mounts[(*n)++] =
		(struct jail_mount){ .src = "/etc/ld.so.cache", .flags = JAIL_MOUNT_OPTIONAL };
	for (size_t i = 0; i < JAIL_LOADER_TOPS; i++) {
		struct stat st;
		ssize_t len;

		if (lstat(tops[i], &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			mounts[(*n)++] = (struct jail_mount){ .src = tops[i] };
		} else if (S_ISLNK(st.st_mode) &&
			   (len = readlink(tops[i], l->targets[i], sizeof(l->targets[i]))) > 0 &&
			   (size_t)len < sizeof(l->targets[i])) {
			l->targets[i][len] = '\0';
			l->links[2 * l->nlinks] = tops[i];
			l->links[2 * l->nlinks + 1] = l->targets[i];
			l->nlinks++;
		}
	}
	return 0;
}
