/* SPDX-License-Identifier: Apache-2.0 */
/* session/paths.c: locate sibling programs and guest artefacts relative to our binary. */
#include "session/paths.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char bindir[PATH_MAX];
static char libdir[PATH_MAX];
/* Found once, whichever thread asks first (the session API asks from many). */
static pthread_once_t found = PTHREAD_ONCE_INIT;

static void find_dirs(void)
{
	ssize_t n = readlink("/proc/self/exe", bindir, sizeof(bindir) - 1);
	if (n <= 0) {
		strcpy(bindir, ".");
	} else {
		bindir[n] = '\0';
		char *slash = strrchr(bindir, '/');
		if (slash)
			*slash = '\0';
	}
	const char *env = getenv("BULKHEAD_LIBDIR");
	if (env && *env)
		snprintf(libdir, sizeof(libdir), "%s", env);
	else
		snprintf(libdir, sizeof(libdir), "%s/../lib/bulkhead", bindir);
}

const char *paths_bindir(void)
{
	pthread_once(&found, find_dirs);
	return bindir;
}

const char *paths_libdir(void)
{
	pthread_once(&found, find_dirs);
	return libdir;
}

int paths_join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
