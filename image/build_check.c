/* SPDX-License-Identifier: Apache-2.0 */
/* image/build_check.c: the packages of a build resolved by apt against the build's own sources
 * before mmdebstrap runs. mmdebstrap looks at --include only after it has made the essential
 * set (minutes here), so a misspelt or uninstallable package would fail late; apt-get with a
 * private state in the work directory answers in seconds, and touches nothing of the host's. */
#include "image/image_internal.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* deb822 or one-line? apt takes a file in its parts directory by its extension. */
static const char *source_ext(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	const char *ext = ".list";

	while (f && fgets(line, sizeof(line), f))
		if (strncasecmp(line, "Types:", 6) == 0 || strncasecmp(line, "URIs:", 5) == 0) {
			ext = ".sources";
			break;
		}
	if (f)
		fclose(f);
	return ext;
}

static int apt_dirs(struct image_work *w, const struct build_opts *o, char *err, size_t errlen)
{
	static const char *const dirs[] = { "apt",
					    "apt/parts",
					    "apt/lists",
					    "apt/lists/partial",
					    "apt/cache",
					    "apt/cache/archives",
					    "apt/cache/archives/partial" };
	char link[64];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdirat(w->fd, dirs[i], 0755) < 0)
			return errbuf_fail(err, errlen, -1, "%s/%s: %s", w->dir, dirs[i],
					   strerror(errno));
	for (size_t i = 0; i < o->nsources; i++) {
		snprintf(link, sizeof(link), "apt/parts/%02zu%s", i, source_ext(o->sources[i]));
		if (symlinkat(o->sources[i], w->fd, link) < 0)
			return errbuf_fail(err, errlen, -1, "%s/%s: %s", w->dir, link,
					   strerror(errno));
	}
	return 0;
}

int build_check_packages(struct image_work *w, const struct build_opts *o, char *err, size_t errlen)
{
	char parts[PATH_MAX + 64], lists[PATH_MAX + 64], cache[PATH_MAX + 64];
	const char *argv[32 + BUILD_PKGS_MAX] = { "apt-get", "-q" };
	size_t n = 2, common;

	if (o->npkgs == 0)
		return 0;
	if (apt_dirs(w, o, err, errlen) < 0)
		return -1;
	snprintf(parts, sizeof(parts), "Dir::Etc::SourceParts=%s/apt/parts", w->dir);
	snprintf(lists, sizeof(lists), "Dir::State::Lists=%s/apt/lists", w->dir);
	snprintf(cache, sizeof(cache), "Dir::Cache=%s/apt/cache", w->dir);
	const char *opts[] = { "Dir::Etc::SourceList=/dev/null", parts, lists, cache,
			       /* an empty system: every package and dependency is resolved */
			       "Dir::State::status=/dev/null", "APT::Sandbox::User=root",
			       "Debug::NoLocking=1" };
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		argv[n++] = "-o";
		argv[n++] = opts[i];
	}
	common = n;
	argv[n++] = "update";
	argv[n] = NULL;
	struct image_tool t = { .argv = argv, .out_fd = -1 };
	if (image_tool_run(&t, err, errlen) < 0)
		return -1;
	n = common;
	argv[n++] = "--simulate";
	argv[n++] = "install";
	argv[n++] = "--";
	for (size_t i = 0; i < o->npkgs; i++)
		argv[n++] = o->pkgs[i];
	argv[n] = NULL;
	t.out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC); /* its plan, one line a package */
	char why[512];
	int rc = image_tool_run(&t, why, sizeof(why));
	if (t.out_fd >= 0)
		close(t.out_fd);
	if (rc < 0)
		errbuf_set(err, errlen, "the packages cannot be installed from the apt sources: %s",
			   why);
	return rc;
}
