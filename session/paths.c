/* SPDX-License-Identifier: Apache-2.0 */
/* session/paths.c: locate sibling programs and guest artefacts relative to our binary. */
#include "session/paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char bindir[PATH_MAX];
static char libdir[PATH_MAX];

const char *paths_bindir(void)
{
	if (bindir[0])
		return bindir;
	ssize_t n = readlink("/proc/self/exe", bindir, sizeof(bindir) - 1);
	if (n <= 0) {
		strcpy(bindir, ".");
		return bindir;
	}
	bindir[n] = '\0';
	char *slash = strrchr(bindir, '/');
	if (slash)
		*slash = '\0';
	return bindir;
}

const char *paths_libdir(void)
{
	if (libdir[0])
		return libdir;
	const char *env = getenv("BULKHEAD_LIBDIR");
	if (env && *env)
		snprintf(libdir, sizeof(libdir), "%s", env);
	else
		snprintf(libdir, sizeof(libdir), "%s/../lib/bulkhead", paths_bindir());
	return libdir;
}

int paths_join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
