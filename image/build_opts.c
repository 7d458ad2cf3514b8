/* SPDX-License-Identifier: Apache-2.0 */
/* image/build_opts.c: what `bulkhead image build` is asked for, checked before anything runs —
 * the suite, the package list (sorted, without repeats: one recipe, one spelling), and the apt
 * sources (the host's own, or --mirror FILE), which must name the suite. */
#include "image/image_internal.h"
#include "lib/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int word_ok(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);
	if (n < 2 || n > max || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      strchr(extra, s[i])))
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int build_packages(struct build_opts *o, const char *list, char *err, size_t errlen)
{
	char *copy = strdup(list), *save = NULL;

	if (!copy)
		return errbuf_fail(err, errlen, -1, "out of memory");
	for (char *p = strtok_r(copy, ", \t\n", &save); p; p = strtok_r(NULL, ", \t\n", &save)) {
		if (!word_ok(p, BUILD_PKG_LEN, "+.-")) {
			errbuf_set(err, errlen, "'%s' is not a Debian package name", p);
			goto fail;
		}
		if (o->npkgs == BUILD_PKGS_MAX) {
			errbuf_set(err, errlen, "more than %d packages", BUILD_PKGS_MAX);
			goto fail;
		}
		if (!(o->pkgs[o->npkgs++] = strdup(p)))
			goto fail;
	}
	free(copy);
	qsort(o->pkgs, o->npkgs, sizeof(o->pkgs[0]), cmp_str);
	size_t k = 0;
	for (size_t i = 0; i < o->npkgs; i++) {
		if (k && strcmp(o->pkgs[k - 1], o->pkgs[i]) == 0)
			free(o->pkgs[i]);
		else
			o->pkgs[k++] = o->pkgs[i];
	}
	o->npkgs = k;
	return 0;
fail:
	free(copy);
	return -1;
}

int build_suite(struct build_opts *o, const char *suite, char *err, size_t errlen)
{
	if (!word_ok(suite, sizeof(o->suite) - 1, "-."))
		return errbuf_fail(err, errlen, -1,
				   "'%s' is not a suite name (bookworm, trixie, ...)", suite);
	snprintf(o->suite, sizeof(o->suite), "%s", suite);
	return 0;
}

static int add_source(struct build_opts *o, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
	    o->nsources == BUILD_SOURCES_MAX || !(o->sources[o->nsources] = strdup(path)))
		return -1;
	o->nsources++;
	return 0;
}

static int source_file_name(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return e->d_name[0] != '.' && ((n > 5 && strcmp(e->d_name + n - 5, ".list") == 0) ||
				       (n > 8 && strcmp(e->d_name + n - 8, ".sources") == 0));
}

/* Does FILE (deb822 or one-line format) name SUITE? */
static int names_suite(const char *file, const char *suite)
{
	FILE *f = fopen(file, "re");
	char line[4096], *save;
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *w = strtok_r(line, " \t\r\n", &save);
		if (!w)
			continue;
		if (strcasecmp(w, "Suites:") == 0) {
			while (!found && (w = strtok_r(NULL, " \t\r\n", &save)))
				found = strcmp(w, suite) == 0;
		} else if (strcmp(w, "deb") == 0) {
			w = strtok_r(NULL, " \t\r\n", &save);
			while (w && w[0] == '[' && !strchr(w, ']')) /* [opt=a opt=b] */
				w = strtok_r(NULL, " \t\r\n", &save);
			if (w && w[0] == '[')
				w = strtok_r(NULL, " \t\r\n", &save);
			w = w ? strtok_r(NULL, " \t\r\n", &save) : NULL; /* past the URI */
			found = w && strcmp(w, suite) == 0;
		}
	}
	if (f)
		fclose(f);
	return found;
}

int build_sources(struct build_opts *o, const char *mirror, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (mirror) {
		if (!realpath(mirror, path) || add_source(o, path) < 0)
			return errbuf_fail(err, errlen, -1,
					   "--mirror %s: not a readable, non-empty file", mirror);
	} else {
		struct dirent **list = NULL;
		add_source(o, "/etc/apt/sources.list");
		int n = scandir("/etc/apt/sources.list.d", &list, source_file_name, alphasort);
		for (int i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "/etc/apt/sources.list.d/%s", list[i]->d_name);
			add_source(o, path);
			free(list[i]);
		}
		free(list);
		if (o->nsources == 0)
			return errbuf_fail(err, errlen, -1,
					   "this host has no apt sources (/etc/apt/sources.list, "
					   "/etc/apt/sources.list.d/); give --mirror FILE");
	}
	for (size_t i = 0; i < o->nsources; i++)
		if (names_suite(o->sources[i], o->suite))
			return 0;
	return errbuf_fail(err, errlen, -1,
			   "the apt sources (%s%s) name no suite '%s'; give --mirror FILE with it",
			   o->sources[0], o->nsources > 1 ? ", ..." : "", o->suite);
}

void build_opts_free(struct build_opts *o)
{
	for (size_t i = 0; i < o->npkgs; i++)
		free(o->pkgs[i]);
	for (size_t i = 0; i < o->nsources; i++)
		free(o->sources[i]);
	memset(o, 0, sizeof(*o));
}
