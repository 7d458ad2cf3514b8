/* SPDX-License-Identifier: Apache-2.0 */
/* lib/cache_dir.c: the cache's directories (lib/cache_dir.h). */
#include "lib/cache_dir.h"
#include "lib/errbuf.h"
#include "lib/mkdirs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the cache holds is ours alone (guest memory, among others): the directory must be one
 * (not a link), ours, with no permission for anyone else, in a parent that is ours or root's
 * and that no one else may change (or only with the sticky bit, as /tmp). */
int cache_dir_check(char *buf, const char *what, char *err, size_t errlen)
{
	struct stat st, pst;
	char *slash = strrchr(buf, '/');
	int bad = lstat(buf, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		  (st.st_mode & 077);
	if (!bad && slash && slash != buf) {
		*slash = '\0';
		bad = stat(buf, &pst) < 0 || !S_ISDIR(pst.st_mode) ||
		      (pst.st_uid != geteuid() && pst.st_uid != 0) ||
		      ((pst.st_mode & 022) && !(pst.st_mode & S_ISVTX));
		*slash = '/';
	}
	if (bad)
		return errbuf_fail(
			err, errlen, -1,
			"%s %s must be a directory of uid %u, mode 0700, in one that only "
			"its owner may change",
			what, buf, (unsigned)geteuid());
	return 0;
}

int cache_dir(char *buf, size_t len, const char *sub, const char *what, bool create, char *err,
	      size_t errlen)
{
	const char *cache = getenv("BULKHEAD_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	int n;

	if (cache && *cache) {
		if (*cache != '/')
			return errbuf_fail(err, errlen, -1,
					   "BULKHEAD_CACHE must be an absolute path, not '%s'",
					   cache);
		n = snprintf(buf, len, "%s/%s", cache, sub);
	} else if (xdg && *xdg == '/') {
		n = snprintf(buf, len, "%s/bulkhead/%s", xdg, sub);
	} else if (home && *home == '/') {
		n = snprintf(buf, len, "%s/.cache/bulkhead/%s", home, sub);
	} else {
		return errbuf_fail(err, errlen, -1,
				   "no %s: set BULKHEAD_CACHE, XDG_CACHE_HOME or HOME",
				   what + (strncmp(what, "the ", 4) ? 0 : 4));
	}
	if (n < 0 || (size_t)n >= len || (size_t)n >= PATH_MAX - 256)
		return errbuf_fail(err, errlen, -1, "%s's path is too long", what);
	int rc = create ? mkdirs(buf, 0700) : 0;
	if (rc < 0)
		return errbuf_fail(err, errlen, -1, "cannot create %s %s: %s", what, buf,
				   strerror(-rc));
	return create ? cache_dir_check(buf, what, err, errlen) : 0;
}
