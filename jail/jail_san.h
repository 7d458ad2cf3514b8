/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_san.h: the jail of bulkhead-vmm and bulkhead-vsock in a sanitizer build (make
 * SAN=..., BULKHEAD_SANITIZED). Those programs are static and get an empty root; with ASan they
 * are dynamic (it has no static run time), so their root then also holds what the loader
 * needs (jail_loader.h), as QEMU's jail has. A normal build adds nothing: the same spec, as
 * strict. */
#ifndef BULKHEAD_JAIL_JAIL_SAN_H
#define BULKHEAD_JAIL_JAIL_SAN_H

#include "jail/jail_loader.h"

#define JAIL_SAN_MOUNTS (2 + JAIL_LOADER_MOUNTS) /* the spec's own (at most 2) plus the loader's   \
						  */

struct jail_san {
	struct jail_mount mounts[JAIL_SAN_MOUNTS];
	struct jail_loader loader;
};

/* In a sanitizer build, copies spec's mounts into s, adds the loader's mounts and links and
 * points spec at them (s must outlive jail_spawn). In a normal build it leaves spec alone.
 * Returns 0, or -E2BIG when the spec has too many mounts or links of its own. */
int jail_san_extend(struct jail_san *s, struct jail_spec *spec);

#endif
