/* SPDX-License-Identifier: Apache-2.0 */
/* image/rootfs.c: a fresh root before it is published — its device nodes removed (a session
 * mounts its own /dev; a node from an image would be the host's device), its size, a user's home
 * read from its /etc/passwd without ever leaving it — and the digest of a built image's tar. */
#include "image/image_internal.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PASSWD_MAX (4u << 20)

/* nftw passes no argument to its callback: the walk's state lives here, one walk at a time. */
static struct {
	bool scrub; /* remove device nodes, or only count */
	uint64_t size;
	void *seen; /* tsearch tree of inodes with several links, counted once */
	int err;
	char where[PATH_MAX];
} walk;

struct inode_key {
	dev_t dev;
	ino_t ino;
};

static int inode_cmp(const void *a, const void *b)
{
	const struct inode_key *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int scrub_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	if (flag == FTW_NS || flag == FTW_DNR) { /* a part we cannot see cannot be checked */
		walk.err = errno ? errno : EACCES;
		snprintf(walk.where, sizeof(walk.where), "%s", path);
		return 1;
	}
	if (walk.scrub && (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))) {
		if (unlink(path) < 0) {
			walk.err = errno;
			snprintf(walk.where, sizeof(walk.where), "%s", path);
			return 1;
		}
		return 0;
	}
	if (st->st_nlink > 1 && !S_ISDIR(st->st_mode)) {
		struct inode_key *k = malloc(sizeof(*k));
		if (!k) {
			walk.err = ENOMEM;
			return 1;
		}
		k->dev = st->st_dev;
		k->ino = st->st_ino;
		void **found = tsearch(k, &walk.seen, inode_cmp);
		if (!found || *found != k) {
			free(k);
			return found ? 0 : (walk.err = ENOMEM, 1);
		}
	}
	walk.size += (uint64_t)st->st_blocks * 512;
	return 0;
}

static int tree_walk(const char *rootfs, bool scrub, uint64_t *size, char *err, size_t errlen)
{
	memset(&walk, 0, sizeof(walk));
	walk.scrub = scrub;
	errno = 0;
	int rc = nftw(rootfs, scrub_one, 32, FTW_PHYS | FTW_MOUNT);
	if (rc != 0 && !walk.err) {
		walk.err = errno ? errno : EIO;
		snprintf(walk.where, sizeof(walk.where), "%s", rootfs);
	}
	tdestroy(walk.seen, free);
	walk.seen = NULL;
	if (walk.err)
		return errbuf_fail(err, errlen, -1, "cannot check the unpacked root at %s: %s",
				   walk.where, strerror(walk.err));
	*size = walk.size;
	return 0;
}

int image_rootfs_scrub(const char *rootfs, uint64_t *size, char *err, size_t errlen)
{
	return tree_walk(rootfs, true, size, err, errlen);
}

uint64_t image_du(const char *path)
{
	uint64_t size = 0;
	return tree_walk(path, false, &size, NULL, 0) == 0 ? size : 0;
}

/* ROOTFS/etc/passwd, opened as if ROOTFS were "/": its links (absolute ones included) and ".."
 * cannot lead out. A regular file only (a FIFO would block us, a device is gone already). */
static char *read_passwd(const char *rootfs, size_t *len)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int root = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;
	struct stat st;
	char *buf = NULL;

	if (root < 0)
		return NULL;
	fd = (int)syscall(SYS_openat2, root, "etc/passwd", &how, sizeof(how));
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= PASSWD_MAX &&
	    (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
		if (n < 0) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	if (fd >= 0)
		close(fd);
	close(root);
	return buf;
}

void image_rootfs_home(const char *rootfs, uid_t uid, char *home, size_t len)
{
	size_t n = 0;
	char *text = read_passwd(rootfs, &n), *save = NULL;

	snprintf(home, len, "/");
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* name:password:uid:gid:gecos:home:shell */
		char *f[7] = { 0 }, *p = line;
		int i;
		for (i = 0; i < 7 && p; i++) {
			f[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (i < 6 || !*f[2] || strspn(f[2], "0123456789") != strlen(f[2]) ||
		    strtoull(f[2], NULL, 10) != uid)
			continue;
		if (f[5][0] == '/' && strlen(f[5]) < len)
			snprintf(home, len, "%s", f[5]);
		break;
	}
	free(text);
}

int image_sha256_file(const char *path, char hex[IMAGE_HEX_LEN + 1], char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	ssize_t n = 0;
	int rc = -1;

	if (fd < 0 || !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		errbuf_set(err, errlen, "cannot hash %s: %s", path, strerror(errno));
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n))
			break;
	if (n != 0 || !EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != IMAGE_HEX_LEN / 2) {
		errbuf_set(err, errlen, "cannot hash %s: %s", path,
			   n < 0 ? strerror(errno) : "digest failed");
		goto out;
	}
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}
