/* SPDX-License-Identifier: Apache-2.0 */
/* jail/jail_san.c: a dynamic program's root for the jail in a sanitizer build (see jail_san.h).
 * Only /usr and the loader's own paths, read-only: nothing secret, and never in a normal
 * build, whose jailed programs are static. */
#include "jail/jail_san.h"

#include <errno.h>
#include <string.h>

#ifdef BULKHEAD_SANITIZED
int jail_san_extend(struct jail_san *s, struct jail_spec *spec)
{
	size_t n = spec->nmounts;

	if (n + JAIL_LOADER_MOUNTS > JAIL_SAN_MOUNTS || spec->nlinks)
		return -E2BIG;
	memset(s, 0, sizeof(*s));
	if (n)
		memcpy(s->mounts, spec->mounts, n * sizeof(s->mounts[0]));
	if (jail_loader_add(&s->loader, s->mounts, &n, JAIL_SAN_MOUNTS) < 0)
		return -E2BIG;
	spec->mounts = s->mounts;
	spec->nmounts = n;
	spec->links = s->loader.links;
	spec->nlinks = s->loader.nlinks;
	return 0;
}
#else
int jail_san_extend(struct jail_san *s, struct jail_spec *spec)
{
	(void)s;
	(void)spec;
	return 0;
}
#endif
