/* jail/jail_san.c: a dynamic program's root for the jail in a sanitizer build (see jail_san.h).
 * Only /usr and the loader's own paths, read-only: nothing secret, and never in a normal
 * build, whose jailed programs are static. */
#include "jail/jail_san.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef BULKHEAD_SANITIZED
static const char *const jail_san_tops[JAIL_SAN_TOPS] = { "/lib",    "/lib64", "/lib32",
							  "/libx32", "/bin",   "/sbin" };

int jail_san_extend(struct jail_san *s, struct jail_spec *spec)
{
	size_t n = spec->nmounts, nl = 0;

	/* /usr and the cache, and each top directory that is real rather than a link. */
	if (n + 2 + JAIL_SAN_TOPS > JAIL_SAN_MOUNTS || spec->nlinks)
		return -E2BIG;
	memset(s, 0, sizeof(*s));
	memcpy(s->mounts, spec->mounts, n * sizeof(s->mounts[0]));
	s->mounts[n++] = (struct jail_mount){ .src = "/usr" };
	s->mounts[n++] =
		(struct jail_mount){ .src = "/etc/ld.so.cache", .flags = JAIL_MOUNT_OPTIONAL };
	for (size_t i = 0; i < JAIL_SAN_TOPS; i++) {
		struct stat st;
		ssize_t len;
		if (lstat(jail_san_tops[i], &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			s->mounts[n++] = (struct jail_mount){ .src = jail_san_tops[i] };
		} else if (S_ISLNK(st.st_mode) && (len = readlink(jail_san_tops[i], s->targets[i],
								  sizeof(s->targets[i]) - 1)) > 0) {
			s->targets[i][len] = '\0';
			s->links[2 * nl] = jail_san_tops[i];
			s->links[2 * nl + 1] = s->targets[i];
			nl++;
		}
	}
	spec->mounts = s->mounts;
	spec->nmounts = n;
	spec->links = s->links;
	spec->nlinks = nl;
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
