/* SPDX-License-Identifier: Apache-2.0 */
/* image/store.c: where the store is, its names, and reading one image back (image_open): a name
 * is a symbolic link "../sha256/<hex>", an image a directory published whole by rename. */
#include "image/image_internal.h"
#include "lib/cache_dir.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

int image_store_dir(char *buf, size_t len, int create, char *err, size_t errlen)
{
	return cache_dir(buf, len, "images", "the image store", create, err, errlen);
}

int image_store_open(struct image_store *s, int create, char *err, size_t errlen)
{
	static const char *const subdirs[] = { "sha256", "names", "tmp" };

	s->fd = -1;
	if (image_store_dir(s->dir, sizeof(s->dir), create, err, errlen) < 0)
		return -1;
	s->fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		return errbuf_fail(err, errlen, -e, "cannot open the image store %s: %s", s->dir,
				   strerror(e));
	}
	for (size_t i = 0; create && i < sizeof(subdirs) / sizeof(subdirs[0]); i++)
		if (mkdirat(s->fd, subdirs[i], 0700) < 0 && errno != EEXIST) {
			errbuf_set(err, errlen, "cannot create %s/%s: %s", s->dir, subdirs[i],
				   strerror(errno));
			image_store_close(s);
			return -1;
		}
	return 0;
}

void image_store_close(struct image_store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int image_store_lock(struct image_store *s, char *err, size_t errlen)
{
	int fd = openat(s->fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		errbuf_set(err, errlen, "cannot lock the image store %s: %s", s->dir,
			   strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

const char *image_store_space(const struct image_store *s, uint64_t used)
{
	static char msg[96];
	struct statvfs v;

	if (s->fd < 0 || fstatvfs(s->fd, &v) < 0)
		return "";
	uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
	if (free_bytes >= (1u << 20) && free_bytes >= used)
		return "";
	snprintf(msg, sizeof(msg), " (the store's file system has %.1f MiB free)",
		 (double)free_bytes / (1 << 20));
	return msg;
}

static int is_hex64(const char *s)
{
	for (int i = 0; i < IMAGE_HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[IMAGE_HEX_LEN] == '\0';
}

int image_name_target(struct image_store *s, const char *name, char hex[IMAGE_HEX_LEN + 1])
{
	char link[PATH_MAX], path[IMAGE_NAME_MAX + 8];

	snprintf(path, sizeof(path), "names/%s", name);
	ssize_t n = readlinkat(s->fd, path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	if (strncmp(link, "../sha256/", 10) != 0 || !is_hex64(link + 10))
		return -EINVAL;
	memcpy(hex, link + 10, IMAGE_HEX_LEN + 1);
	return 0;
}

/* DIRFD/NAME as a string, if it is a regular file of at most IMAGE_JSON_MAX bytes. */
static char *read_small(int dirfd, const char *name, size_t *len, char *why, size_t whylen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;

	if (fd < 0 || fstat(fd, &st) < 0) {
		errbuf_set(why, whylen, "%s: %s", name, strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_size > IMAGE_JSON_MAX) {
		errbuf_set(why, whylen, "%s is not a regular file of at most %u bytes", name,
			   IMAGE_JSON_MAX);
	} else if (!(buf = malloc((size_t)st.st_size + 1))) {
		errbuf_set(why, whylen, "out of memory");
	} else {
		ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
		if (n != st.st_size) {
			errbuf_set(why, whylen, "%s: short read", name);
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

int image_load(struct image_store *s, const char *hex, struct image_meta *meta,
	       struct image_config *cfg, char *why, size_t whylen)
{
	char path[IMAGE_HEX_LEN + 16];
	struct stat st;
	size_t len = 0;

	snprintf(path, sizeof(path), "sha256/%s", hex);
	int dfd = openat(s->fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errbuf_fail(why, whylen, -1, "%s: %s", path, strerror(errno));
	char *text = read_small(dfd, "image.json", &len, why, whylen);
	int rc = -1;
	if (!text)
		goto out;
	if (fstatat(dfd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
		errbuf_set(why, whylen, "rootfs is missing or not a directory");
		goto out;
	}
	if (image_json_parse(text, len, meta, cfg, why, whylen) < 0)
		goto out;
	if (strcmp(meta->digest + 7, hex) != 0) {
		image_config_free(cfg);
		errbuf_set(why, whylen, "image.json names digest %s, not its directory's",
			   meta->digest);
		goto out;
	}
	rc = 0;
out:
	free(text);
	close(dfd);
	return rc;
}

int image_open(const char *name, struct image *img, char *err, size_t errlen)
{
	struct image_store s;
	struct image_meta meta;
	char hex[IMAGE_HEX_LEN + 1], why[512];
	int rc = -1;

	memset(img, 0, sizeof(*img));
	if (image_name_check(name, err, errlen) < 0)
		return -1;
	if (image_store_dir(s.dir, sizeof(s.dir), 0, err, errlen) < 0)
		return -1;
	s.fd = open(s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int t = s.fd < 0 ? -ENOENT : image_name_target(&s, name, hex);
	if (t == -ENOENT) {
		errbuf_set(err, errlen,
			   "image '%s' not found: build it with 'bulkhead image build %s ...' or "
			   "import it with 'bulkhead image import %s FILE'",
			   name, name, name);
	} else if (t < 0) {
		errbuf_set(err, errlen, "image '%s' is damaged: names/%s: %s", name, name,
			   t == -EINVAL ? "not a link to ../sha256/<hex>" : strerror(-t));
	} else if (image_load(&s, hex, &meta, &img->cfg, why, sizeof(why)) < 0) {
		errbuf_set(err, errlen,
			   "image '%s' is damaged: %s (remove it with 'bulkhead image rm %s')",
			   name, why, name);
	} else {
		snprintf(img->name, sizeof(img->name), "%s", name);
		snprintf(img->digest, sizeof(img->digest), "%s", meta.digest);
		snprintf(img->dir, sizeof(img->dir), "%s/sha256/%s", s.dir, hex);
		snprintf(img->rootfs, sizeof(img->rootfs), "%s/sha256/%s/rootfs", s.dir, hex);
		rc = 0;
	}
	image_store_close(&s);
	return rc;
}

void image_close(struct image *img)
{
	image_config_free(&img->cfg);
}

/* Under the store lock: sha256/HEX from W's "img" (or the sound copy already there), then
 * names/NAME by rename of a new link over the old one. */
static int commit_locked(struct image_store *s, struct image_work *w, const char *hex,
			 const char *name, bool *existed, char *err, size_t errlen)
{
	char dst[IMAGE_HEX_LEN + 16], target[IMAGE_HEX_LEN + 16], nm[IMAGE_NAME_MAX + 8];
	char why[256];
	struct image_meta meta;
	struct image_config cfg;

	snprintf(dst, sizeof(dst), "sha256/%s", hex);
	*existed = false;
	if (renameat2(w->fd, "img", s->fd, dst, RENAME_NOREPLACE) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY)
			return errbuf_fail(err, errlen, -1,
					   "cannot move the image into %s/%s: %s%s", s->dir, dst,
					   strerror(errno), image_store_space(s, 0));
		memset(&cfg, 0, sizeof(cfg));
		if (image_load(s, hex, &meta, &cfg, why, sizeof(why)) == 0) {
			image_config_free(&cfg);
			*existed = true;
		} else if (renameat(s->fd, dst, w->fd, "damaged") < 0 ||
			   renameat2(w->fd, "img", s->fd, dst, RENAME_NOREPLACE) < 0) {
			/* A damaged copy is replaced by ours; it leaves with our work directory. */
			return errbuf_fail(err, errlen, -1, "cannot replace the damaged %s/%s: %s",
					   s->dir, dst, strerror(errno));
		}
	}
	snprintf(target, sizeof(target), "../sha256/%s", hex);
	snprintf(nm, sizeof(nm), "names/%s", name);
	if (symlinkat(target, w->fd, "name") < 0 || renameat(w->fd, "name", s->fd, nm) < 0)
		return errbuf_fail(err, errlen, -1, "cannot name the image %s/%s: %s%s", s->dir, nm,
				   strerror(errno), image_store_space(s, 0));
	return 0;
}

int image_work_commit(struct image_store *s, struct image_work *w, const char *hex,
		      const char *name, bool *existed, char *err, size_t errlen)
{
	/* A signal that came while we worked ourselves (not a tool) stops us here, before
	 * publishing. */
	if (image_signal())
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d)", image_signal());
	/* What is published must be on disk before the rename that makes it visible. */
	if (syncfs(w->fd) < 0)
		return errbuf_fail(err, errlen, -1, "cannot flush %s: %s%s", w->dir,
				   strerror(errno), image_store_space(s, 0));
	int lock = image_store_lock(s, err, errlen);
	if (lock < 0)
		return -1;
	int rc = commit_locked(s, w, hex, name, existed, err, errlen);
	if (rc == 0 && syncfs(s->fd) < 0)
		rc = errbuf_fail(err, errlen, -1, "cannot flush %s: %s", s->dir, strerror(errno));
	close(lock);
	return rc;
}
