/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_rules.c: a share's rules (share_rules.h) collected, checked against the share as
 * it is before the session, and what was made for them removed after. share_rules_apply.c
 * puts them in place in virtiofsd's mount namespace. */
#include "session/share_rules.h"
#include "session/share_scan.h"
#include "lib/relpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LINKS_WALK_MAX 100000 /* entries looked at under ro and hidden directories */

static const char *const mode_names[] = { "rw", "ro", "hidden" };

const char *share_mode_name(enum share_mode m)
{
	return mode_names[m];
}

int share_mode_parse(const char *s, enum share_mode *m)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, mode_names[i])) {
			*m = (enum share_mode)i;
			return 0;
		}
	return -1;
}

int share_rules_add(struct share_rules *rs, const char *path, size_t n, enum share_mode mode,
		    const char *origin, char *err, size_t errlen)
{
	const char *why;
	char q[160];

	if (relpath_check(path, n, &why) < 0) {
		char raw[PATH_MAX];

		snprintf(raw, sizeof(raw), "%.*s", (int)(n < sizeof(raw) - 1 ? n : sizeof(raw) - 1),
			 path);
		share_scan_quote(raw, q, sizeof(q));
		snprintf(err, errlen, "%s \"%s\": %s", origin, q, why);
		return -1;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (strlen(rs->r[i].path) == n && !memcmp(rs->r[i].path, path, n)) {
			if (mode > rs->r[i].mode) {
				rs->r[i].mode = mode;
				rs->r[i].origin = origin;
			}
			return 0;
		}
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct share_rule *r = realloc(rs->r, cap * sizeof(*r));

		if (!r) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		rs->r = r;
		rs->cap = cap;
	}
	rs->r[rs->n] = (struct share_rule){ .mode = mode, .origin = origin };
	if (!(rs->r[rs->n].path = strndup(path, n))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rs->n++;
	return 0;
}

int share_rules_add_spec(struct share_rules *rs, const char *spec, const char *origin, char *err,
			 size_t errlen)
{
	const char *colon = strrchr(spec, ':');
	enum share_mode m;

	if (!colon || share_mode_parse(colon + 1, &m) < 0) {
		snprintf(err, errlen, "%s %.200s: say PATH:rw, PATH:ro or PATH:hidden", origin, spec);
		return -1;
	}
	return share_rules_add(rs, spec, (size_t)(colon - spec), m, origin, err, errlen);
}

enum share_mode share_rules_mode(const struct share_rules *rs, const char *path,
				 enum share_mode def)
{
	size_t best = 0;
	enum share_mode m = def;

	for (size_t i = 0; i < rs->n; i++) {
		size_t l = strlen(rs->r[i].path);

		if (l >= best && relpath_under(path, rs->r[i].path)) {
			best = l;
			m = rs->r[i].mode;
		}
	}
	return m;
}

static int depth(const char *p)
{
	int d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int by_depth(const void *a, const void *b)
{
	const struct share_rule *x = a, *y = b;
	int d = depth(x->path) - depth(y->path);

	return d ? d : strcmp(x->path, y->path);
}

/* REL beneath the share DIRFD, no symbolic link and no mount on the way: a descriptor
 * (O_PATH) or -errno. */
static int beneath(int dirfd, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	long fd;

	while ((fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how))) < 0 && errno == EAGAIN)
		;
	return fd < 0 ? -errno : (int)fd;
}

/* Records what of the missing PATH is to be made: each component from the first missing one. */
static int note_missing(struct share_rules *rs, int share, const char *path, char *err,
			size_t errlen)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p;; s++) {
		int end = *s == '\0', fd;

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		fd = beneath(share, p);
		if (fd >= 0) {
			struct stat st;
			int isdir = !fstat(fd, &st) && S_ISDIR(st.st_mode);

			close(fd);
			if (!isdir) {
				snprintf(err, errlen, "rule %s: %s is not a directory", path, p);
				return -1;
			}
		} else if (fd == -ENOENT) {
			size_t i;

			for (i = 0; i < rs->nmade && strcmp(rs->made[i], p); i++)
				;
			if (i == rs->nmade) {
				char **m = realloc(rs->made, (rs->nmade + 1) * sizeof(*m));

				if (!m || !(m[rs->nmade] = strdup(p))) {
					rs->made = m ? m : rs->made;
					snprintf(err, errlen, "out of memory");
					return -1;
				}
				rs->made = m;
				rs->nmade++;
			}
		} else {
			snprintf(err, errlen, "rule %s: %s: %s", path, p, strerror(-fd));
			return -1;
		}
		if (end)
			return 0;
		*s = '/';
	}
}

/* The first regular file with more than one name at or under FD (a directory or a file), in
 * *FOUND (its path under the rule, "" for the rule's own file), bounded by *LEFT entries.
 * 1 when one is found, 0 when none, -1 when the walk could not finish (*FOUND says where). */
static int other_names(int fd, char *found, size_t flen, size_t at, unsigned long *left)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return -1;
	if (S_ISREG(st.st_mode))
		return st.st_nlink > 1;
	if (!S_ISDIR(st.st_mode))
		return 0;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	while (!rc && (e = readdir(d))) {
		int sub;
		size_t n = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || e->d_type == DT_LNK)
			continue;
		if (!(*left)-- || at + n + 2 >= flen)
			return closedir(d), -1;
		snprintf(found + at, flen - at, "/%s", e->d_name);
		sub = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		rc = other_names(sub, found, flen, at + n + 1, left);
		close(sub);
		if (!rc)
			found[at] = '\0';
	}
	closedir(d);
	return rc;
}

/* A rule that exists: a directory or a regular file, and for ro and hidden, no file under it
 * with another name (that one could be outside the rule: written, or read, there). */
static int check_present(struct share_rule *r, int fd, char *err, size_t errlen)
{
	struct stat st;
	char where[PATH_MAX] = "", q[200];
	unsigned long left = LINKS_WALK_MAX;
	int o;

	if (fstat(fd, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
		snprintf(err, errlen, "rule %s: %s", r->path,
			 S_ISLNK(st.st_mode) ? "a symbolic link; name what it points to"
					     : "neither a directory nor a regular file");
		return -1;
	}
	r->dir = S_ISDIR(st.st_mode);
	if (r->mode == SHARE_MODE_RW)
		return 0;
	o = other_names(fd, where, sizeof(where), 0, &left);
	share_scan_quote(where, q, sizeof(q));
	if (o > 0)
		snprintf(err, errlen,
			 "rule %s:%s: %s%s has other names (hard links), which may lie outside "
			 "the rule: copy it instead of linking it, or leave it out of the rule",
			 r->path, share_mode_name(r->mode), r->path, q);
	else if (o < 0)
		snprintf(err, errlen,
			 "rule %s:%s: its files could not all be checked for other names (hard "
			 "links; stopped at %s%s after up to %d entries)",
			 r->path, share_mode_name(r->mode), r->path, q, LINKS_WALK_MAX);
	return o ? -1 : 0;
}

int share_rules_resolve(struct share_rules *rs, const char *dir, char *err, size_t errlen)
{
	int share = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (share < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(rs->share, sizeof(rs->share), "%s", dir);
	qsort(rs->r, rs->n, sizeof(*rs->r), by_depth);
	for (size_t i = 0; !rc && i < rs->n; i++) {
		struct share_rule *r = &rs->r[i];
		int fd = beneath(share, r->path);

		if (fd >= 0) {
			rc = check_present(r, fd, err, errlen);
			close(fd);
		} else if (fd == -ENOENT) {
			r->missing = r->dir = true;
			rc = note_missing(rs, share, r->path, err, errlen);
		} else {
			snprintf(err, errlen, "rule %s: %s", r->path,
				 fd == -ELOOP	? "a symbolic link on its way; name the real path"
				 : fd == -EXDEV ? "a mount point on its way"
						: strerror(-fd));
			rc = -1;
		}
	}
	close(share);
	return rc;
}

int share_rules_make(struct share_rules *rs, uid_t owner, gid_t group, char *err, size_t errlen)
{
	int share, rc = 0;

	if (!rs->nmade)
		return 0;
	if ((share = open(rs->share, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", rs->share, strerror(errno));
		return -1;
	}
	rs->made_them = true;
	for (size_t i = 0; !rc && i < rs->nmade; i++) {
		char *slash = strrchr(rs->made[i], '/');
		const char *name = slash ? slash + 1 : rs->made[i];
		int parent = share;

		if (slash) {
			*slash = '\0';
			parent = beneath(share, rs->made[i]);
			*slash = '/';
		}
		if (parent < 0 || (mkdirat(parent, name, 0755) < 0 && errno != EEXIST) ||
		    (geteuid() == 0 && fchownat(parent, name, owner, group, AT_SYMLINK_NOFOLLOW) < 0)) {
			snprintf(err, errlen, "rule path %s: cannot make it: %s", rs->made[i],
				 strerror(parent < 0 ? -parent : errno));
			rc = -1;
		}
		if (parent >= 0 && parent != share)
			close(parent);
	}
	close(share);
	return rc;
}

void share_rules_cleanup(struct share_rules *rs)
{
	int share;

	if (!rs->made_them || (share = open(rs->share, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	rs->made_them = false;
	for (size_t i = rs->nmade; i-- > 0;) {
		char *slash = strrchr(rs->made[i], '/');
		int parent = share;

		if (slash) {
			*slash = '\0';
			parent = beneath(share, rs->made[i]);
			*slash = '/';
		}
		if (parent >= 0) /* only an empty directory goes (not a link the guest put there) */
			unlinkat(parent, slash ? slash + 1 : rs->made[i], AT_REMOVEDIR);
		if (parent >= 0 && parent != share)
			close(parent);
	}
	close(share);
}

void share_rules_free(struct share_rules *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->r[i].path);
		if (rs->r[i].clean)
			memset(rs->r[i].clean, 0, rs->r[i].clean_n);
		free(rs->r[i].clean);
	}
	for (size_t i = 0; i < rs->nmade; i++)
		free(rs->made[i]);
	free(rs->r);
	free(rs->made);
	memset(rs, 0, sizeof(*rs));
}
