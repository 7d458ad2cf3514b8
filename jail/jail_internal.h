/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_internal.h: inside the jail library: the steps of jail_spawn's child, each in the file
 * that holds its subsystem. Not for callers
 * outside jail/. */
#ifndef BULKHEAD_JAIL_JAIL_INTERNAL_H
#define BULKHEAD_JAIL_JAIL_INTERNAL_H

#include "jail/jail.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Maps IN_UID/IN_GID of PID's user namespace (0: our own) to OUT_UID/OUT_GID, nothing else;
 * DENY_SETGROUPS first, as a writer without privilege must. 0 or -errno. */
int jail_userns_map(pid_t pid, uid_t in_uid, uid_t out_uid, gid_t in_gid, gid_t out_gid,
		    unsigned count,
		    bool deny_setgroups);

/* jail_root.c: what the process sees of the host's files: an empty root holding the spec's
 * mounts and links, or the mounts bound over themselves. On failure, what failed in STEP.
 * 0 or -errno. */
int jail_root_build(const struct jail_spec *s, char *step, size_t steplen);

/* jail_lock.c: the ids, rlimits, capabilities and flags the program starts with (the spec's
 * uid without any capability, or with map_root the namespace's root). 0 or -errno. */
int jail_lock_down(const struct jail_spec *s);
/* With map_root: becomes the user namespace's root (capabilities inside it kept). */
int jail_become_ns_root(void);
/* The spec's descriptors become 3, 4, ...; every other one closes at exec. *KEEP, a
 * descriptor still needed until then, is moved out of their way. 0 or -errno. */
int jail_hand_over_fds(const struct jail_spec *s, int *keep);

#endif
