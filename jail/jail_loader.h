/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_loader.h: what a dynamically linked program needs in an empty root to start: /usr
 * read-only (programs and libraries, nothing secret), the loader's cache, and the host's
 * top-level paths a loader may start from (PT_INTERP is /lib64/...): on a merged-/usr host
 * these are links into /usr, made again inside; a real directory is mounted read-only. For
 * QEMU (session/engine_qemu.c) and, in a sanitizer build, our own programs (jail_san.h). */
#ifndef BULKHEAD_JAIL_JAIL_LOADER_H
#define BULKHEAD_JAIL_JAIL_LOADER_H

#include "jail/jail.h"

#define JAIL_LOADER_TOPS   6 /* /lib, /lib64, /lib32, /libx32, /bin, /sbin */
#define JAIL_LOADER_MOUNTS (2 + JAIL_LOADER_TOPS)

struct jail_loader {
	char targets[JAIL_LOADER_TOPS][256];
	const char *links[2 * JAIL_LOADER_TOPS]; /* pairs for jail_spec.links */
	size_t nlinks;
};

/* Appends the loader's mounts to MOUNTS (*N used of CAP) and fills L's links. L must outlive
 * the spec that points at them. 0, or -E2BIG when the mounts do not fit. */
int jail_loader_add(struct jail_loader *l, struct jail_mount *mounts, size_t *n, size_t cap);

#endif
