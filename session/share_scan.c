/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_scan.c: the walk of share_scan.h. Depth first, one directory descriptor per level
 * (at most SHARE_SCAN_DEPTH open), never following a symbolic link, reading at most
 * SHARE_SCAN_FILE_MAX of a file whose name asks for its content, and stopping at the first
 * bound it meets (entries, bytes, time), which it says. */
#include "session/share_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/mono.h"

struct walk {
	int root; /* the share */
	const struct share_scan_opts *o;
	struct share_scan *s;
	unsigned depth;
	unsigned long entries;
	int64_t t0, until;
	char path[PATH_MAX];
	char *buf; /* SHARE_SCAN_FILE_MAX bytes */
	bool stop; /* a bound was met: nothing more is looked at */
};

/* Says why the scan is not complete (the first reason stays). */
static void incomplete(struct walk *w, const char *before, const char *where, const char *after)
{
	char q[120];

	if (w->s->complete) {
		share_scan_quote(where, q, sizeof(q));
		snprintf(w->s->stopped, sizeof(w->s->stopped), "%s%s%s", before, q, after);
	}
	w->s->complete = false;
}

static int add_path(struct walk *w, const char *path, const char *why, enum share_found_kind kind)
{
	struct share_scan *s = w->s;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->found[i].path, path))
			return 0; /* found already (a file two configs include) */
	if (s->n == SHARE_SCAN_FOUND) {
		s->n_more++;
		return 0;
	}
	if (!s->found && !(s->found = calloc(SHARE_SCAN_FOUND, sizeof(*s->found))))
		return -1;
	snprintf(s->found[s->n].path, sizeof(s->found[s->n].path), "%s", path);
	s->found[s->n].why = why;
	s->found[s->n].kind = kind;
	s->n++;
	return 0;
}

/* The files the git config at w->path (its text BUF, N bytes) includes, that lie in the share:
 * git reads them as part of it, so they are credential files as it is. The path is taken as
 * git takes it, from the config's directory, and kept only when it stays in the share and is
 * a regular file there. */
static int add_includes(struct walk *w, const char *buf, size_t n)
{
	const char *paths[8];
	size_t lens[8];
	int k = share_git_includes(buf, n, paths, lens, 8);

	for (int i = 0; i < k; i++) {
		char rel[PATH_MAX], out[PATH_MAX];
		const char *slash = strrchr(w->path, '/');
		size_t dl = slash ? (size_t)(slash - w->path) : 0, o = 0;
		struct stat st;

		if (paths[i][0] == '/' || paths[i][0] == '~' || dl + 1 + lens[i] >= sizeof(rel))
			continue; /* outside the share: not the guest's to read */
		snprintf(rel, sizeof(rel), "%.*s%s%.*s", (int)dl, w->path, dl ? "/" : "",
			 (int)lens[i], paths[i]);
		/* "a/b/../c" as git would walk it; a path that climbs out of the share is dropped.
		 */
		bool out_of_share = false;
		for (char *c = rel, *next; c && *c && !out_of_share; c = next) {
			next = strchr(c, '/');
			if (next)
				*next++ = '\0';
			if (!*c || !strcmp(c, "."))
				continue;
			if (!strcmp(c, "..")) {
				char *up = o ? memrchr(out, '/', o) : NULL;
				if (!o)
					out_of_share = true;
				o = up ? (size_t)(up - out) : 0;
				continue;
			}
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", o ? "/" : "", c);
			if (o >= sizeof(out))
				out_of_share = true;
		}
		out[o < sizeof(out) ? o : sizeof(out) - 1] = '\0';
		if (out_of_share || !o || fstatat(w->root, out, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (add_path(w, out, "a file a git config includes", SHARE_FOUND_FILE) < 0)
			return -1;
	}
	return 0;
}

static int add(struct walk *w, const char *why, enum share_found_kind kind)
{
	return add_path(w, w->path, why, kind);
}

/* The regular file NAME in DFD, at w->path: read when its name asks, matched. */
static int check_file(struct walk *w, int dfd, const char *name)
{
	enum share_found_kind kind;
	bool read_it;
	bool git_dir = (!strcmp(name, "config") || !strcmp(name, "config.worktree")) &&
		       !faccessat(dfd, "HEAD", F_OK, AT_SYMLINK_NOFOLLOW);
	const char *why = share_scan_match(w->path, git_dir, NULL, 0, &read_it, &kind, w->o);
	unsigned long long room = SHARE_SCAN_READ_MAX - w->s->bytes_read;
	size_t want = room < SHARE_SCAN_FILE_MAX ? (size_t)room : SHARE_SCAN_FILE_MAX;
	size_t got = 0;
	struct stat st;
	int fd;

	if (why)
		return add(w, why, kind);
	if (!read_it)
		return 0;
	if (!want) {
		incomplete(w, "it read ", "32 MiB", ", its bound of bytes in all");
		w->stop = true;
		return 0;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		else if (errno != ENOENT) /* gone since it was listed: nothing to share */
			incomplete(w, "", w->path, " could not be read");
		return 0;
	}
	while (got < want) {
		ssize_t r = read(fd, w->buf + got, want - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	w->s->bytes_read += got;
	why = share_scan_match(w->path, git_dir, w->buf, got, &read_it, &kind, w->o);
	if (share_scan_git_config(w->path, git_dir) && add_includes(w, w->buf, got) < 0)
		return -1;
	if (why)
		return add(w, why, kind);
	if (got < SHARE_SCAN_FILE_MAX || st.st_size <= (off_t)got)
		return 0;
	/* Longer than the scan reads of one file. A credential file's name (.env, a git
	 * config, .netrc) with more than that is a credential file as a whole: what lies past
	 * the bound was not looked at. Certificates and JSON run long for good reasons: said. */
	if (share_scan_ends(name, ".json") || share_scan_ends(name, ".pem")) {
		incomplete(w, "", w->path, " is longer than the 64 KiB it reads of a file");
		return 0;
	}
	return add(w, "longer than the 64 KiB the scan reads of a file like it", SHARE_FOUND_FILE);
}

/* A symbolic link at w->path, named NAME. The scan follows none, but the guest's reads do
 * (inside the share): a link with a credential file's name, or a credential directory's
 * (.aws, .docker), is found as such, whatever it points to. */
static int check_link(struct walk *w, int dfd, const char *name)
{
	enum share_found_kind kind;
	bool read_it;
	bool git_dir = (!strcmp(name, "config") || !strcmp(name, "config.worktree")) &&
		       !faccessat(dfd, "HEAD", F_OK, AT_SYMLINK_NOFOLLOW);
	const char *why = share_scan_match(w->path, git_dir, NULL, 0, &read_it, &kind, w->o);
	size_t pl = strlen(w->path);
	bool docker = pl >= 19 && !strcmp(w->path + pl - 19, ".docker/config.json") &&
		      (pl == 19 || w->path[pl - 20] == '/');

	/* Every *.json and *.pem is read for a key block: as links (a monorepo's tsconfig.json,
	 * a CA bundle) they are too common to count by name; what they point to is scanned. A
	 * Docker login file is a credential file by its name alone. */
	if (read_it && !docker && (share_scan_ends(name, ".json") || share_scan_ends(name, ".pem")))
		read_it = false;
	if (why || read_it || !strcmp(name, ".aws") || !strcmp(name, ".docker"))
		return add(w,
			   "a symbolic link named as a credential file is (what it points to "
			   "is what the guest reads)",
			   SHARE_FOUND_FILE);
	return 0;
}

static int visit(struct walk *w, int dfd, size_t plen);

/* Entry NAME of DFD (its type T from readdir), at w->path. */
static int entry(struct walk *w, int dfd, const char *name, unsigned char t)
{
	struct stat st;
	int sub, rc;

	if (t == DT_UNKNOWN) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0;
		t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
	}
	if (t == DT_REG)
		return check_file(w, dfd, name);
	if (t == DT_LNK)
		return check_link(w, dfd, name);
	if (t != DT_DIR || share_scan_skip_dir(w->path, name, w->o))
		return 0;
	if (w->depth >= (w->o && w->o->depth ? w->o->depth : SHARE_SCAN_DEPTH)) {
		incomplete(w, "", w->path, " is deeper than its bound (32 levels)");
		return 0;
	}
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		incomplete(w, "", w->path, " could not be read");
		return 0;
	}
	w->depth++;
	rc = visit(w, sub, strlen(w->path));
	w->depth--;
	return rc;
}

/* Every entry of the directory DFD (taken), whose path is w->path (PLEN bytes). */
static int visit(struct walk *w, int dfd, size_t plen)
{
	unsigned long max = w->o && w->o->entries ? w->o->entries : SHARE_SCAN_ENTRIES;
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		close(dfd);
		incomplete(w, "", plen ? w->path : ".", " could not be read");
		return 0;
	}
	while (!rc && !w->stop && (errno = 0, e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++w->entries > max) {
			char at[24];

			snprintf(at, sizeof(at), "%lu", max);
			incomplete(w, "it stopped after ", at, " entries, its bound");
			w->stop = true;
			break;
		}
		if (!(w->entries & 255) && mono_ms() > w->until) {
			incomplete(w, "it stopped at ", w->path, ": its time bound passed");
			w->stop = true;
			break;
		}
		if (plen + 1 + n >= sizeof(w->path)) {
			incomplete(w, "a path under ", w->path, " is too long to look at");
			continue;
		}
		if (plen)
			w->path[plen] = '/';
		memcpy(w->path + plen + (plen ? 1 : 0), e->d_name, n + 1);
		rc = entry(w, dirfd(d), e->d_name, e->d_type);
		w->path[plen] = '\0';
	}
	if (!rc && !w->stop && errno)
		incomplete(w, "", plen ? w->path : ".", " could not be read to its end");
	closedir(d);
	return rc;
}

int share_scan(int dirfd, const struct share_scan_opts *o, struct share_scan *out, char *err,
	       size_t errlen)
{
	struct walk w = { .root = dirfd, .o = o, .s = out };
	int fd, rc;

	memset(out, 0, sizeof(*out));
	out->complete = true;
	w.t0 = mono_ms();
	w.until = w.t0 + (o && o->ms ? o->ms : SHARE_SCAN_MS);
	w.buf = malloc(SHARE_SCAN_FILE_MAX);
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!w.buf || fd < 0) {
		snprintf(err, errlen, "the share's scan: %s", strerror(w.buf ? errno : ENOMEM));
		if (fd >= 0)
			close(fd);
		free(w.buf);
		return -1;
	}
	rc = visit(&w, fd, 0);
	out->entries = w.entries;
	out->ms = (unsigned)(mono_ms() - w.t0);
	memset(w.buf, 0, SHARE_SCAN_FILE_MAX); /* it held the credentials it found */
	free(w.buf);
	if (rc < 0) {
		share_scan_free(out);
		snprintf(err, errlen, "the share's scan: out of memory");
		return -1;
	}
	return 0;
}

void share_scan_free(struct share_scan *s)
{
	free(s->found);
	s->found = NULL;
	s->n = 0;
}

void share_scan_quote(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	for (; *s && o + 5 < outlen; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	if (*s && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}
