/* SPDX-License-Identifier: Apache-2.0 */
/* lib/mkdirs.c: `mkdir -p` (see mkdirs.h). */
#include "lib/mkdirs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int mkdirs(const char *path, mode_t mode)
{
	char d[PATH_MAX];
	if (snprintf(d, sizeof(d), "%s", path) >= (int)sizeof(d))
		return -ENAMETOOLONG;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(d, mode) < 0 && errno != EEXIST ? -errno : 0;
}
