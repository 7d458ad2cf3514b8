/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_image_rootfs.c: what the image store does to a fresh root and to its work
 * (image/rootfs.c, image/work.c): a home directory read from the image's /etc/passwd never
 * leaves the image whatever its links say; device nodes go, hard links count once; a work tree is
 * removed to any depth without following links or entering a mount. */
#include "image/image_internal.h"
#include "lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

static char top[64];

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/test_image_rootfs.XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sh("chmod -R u+rwx %s; rm -rf %s", top, top);
	return 0;
}

static const char *home_of(const char *rootfs, uid_t uid)
{
	static char home[PATH_MAX];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", top, rootfs);
	image_rootfs_home(path, uid, home, sizeof(home));
	return home;
}

static void test_home(void **state)
{
	(void)state;
	sh("mkdir -p %s/r/etc && printf "
	   "'root:x:0:0::/root:/bin/sh\\napp:x:1000:1000::/home/app:/bin/sh\\n"
	   "short:x:7\\nrel:x:8:8::home/rel:/bin/sh\\n' > %s/r/etc/passwd",
	   top, top);
	assert_string_equal(home_of("r", 1000), "/home/app");
	assert_string_equal(home_of("r", 0), "/root");
	assert_string_equal(home_of("r", 4242), "/"); /* no such user */
	assert_string_equal(home_of("r", 7), "/");    /* a line too short */
	assert_string_equal(home_of("r", 8), "/");    /* a relative home */
	assert_string_equal(home_of("none", 0), "/"); /* no root at all */
}

/* The image's links are resolved inside the image: an absolute link or one climbing out reads
 * the image's own files (or nothing), never the host's /etc/passwd (uid 0 there: /root). */
static void test_home_links_stay_inside(void **state)
{
	(void)state;
	sh("mkdir -p %s/abs/etc %s/abs/inner && ln -s /inner/pw %s/abs/etc/passwd && "
	   "printf 'root:x:0:0::/from-inside:/bin/sh\\n' > %s/abs/inner/pw",
	   top, top, top, top);
	assert_string_equal(home_of("abs", 0), "/from-inside");
	sh("mkdir -p %s/up/etc && ln -s ../../../../../../../../etc/passwd %s/up/etc/passwd", top,
	   top);
	assert_string_equal(home_of("up", 0), "/");
	sh("mkdir -p %s/slash && ln -s / %s/slash/etc", top, top);
	assert_string_equal(home_of("slash", 0), "/");
	sh("mkdir -p %s/proc/etc && ln -s /proc/1/root/etc/passwd %s/proc/etc/passwd", top, top);
	assert_string_equal(home_of("proc", 0), "/");
	/* a FIFO would block a plain open: not here */
	sh("mkdir -p %s/fifo/etc && mkfifo %s/fifo/etc/passwd", top, top);
	assert_string_equal(home_of("fifo", 0), "/");
}

static void test_scrub(void **state)
{
	(void)state;
	char r[PATH_MAX], err[512] = "";
	uint64_t size = 0;
	struct stat st;

	snprintf(r, sizeof(r), "%s/scrub", top);
	sh("mkdir -p %s/dev %s/bin && head -c 65536 /dev/urandom > %s/bin/a && ln %s/bin/a "
	   "%s/bin/b "
	   "&& mkfifo %s/dev/fifo",
	   r, r, r, r, r, r);
	if (geteuid() == 0)
		sh("mknod %s/dev/mem c 1 1 && mknod %s/dev/sda b 8 0", r, r);
	assert_int_equal(image_rootfs_scrub(r, &size, err, sizeof(err)), 0);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/dev/mem", r);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/dev/sda", r);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/dev/fifo", r);
	assert_int_equal(lstat(p, &st), 0); /* only device nodes go */
	/* the 64 KiB file once, though it has two names, plus the directories */
	assert_true(size >= 65536 && size < 2 * 65536);
	assert_int_equal(image_du(r), size);
}

static void test_tree_remove(void **state)
{
	(void)state;
	char err[512] = "", path[PATH_MAX];
	struct stat st;
	int fd = open(top, O_RDONLY | O_DIRECTORY);

	/* deeper than any descriptor limit, read-only directories, links out of the tree */
	sh("mkdir -p %s/outside && echo keep > %s/outside/f && mkdir %s/w && cd %s/w && "
	   "ln -s %s/outside out && ln -s / root && mkdir ro && touch ro/f && chmod 555 ro",
	   top, top, top, top, top);
	int d = openat(fd, "w", O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 1500; i++) {
		assert_int_equal(mkdirat(d, "d", 0755), 0);
		int next = openat(d, "d", O_RDONLY | O_DIRECTORY);
		assert_true(next >= 0);
		close(d);
		d = next;
	}
	assert_int_equal(symlinkat("/", d, "deep-root"), 0);
	close(d);
	assert_int_equal(tree_remove(fd, "w", err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/w", top);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/outside/f", top);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(tree_remove(fd, "w", err, sizeof(err)), 0); /* gone: fine */

	if (geteuid() != 0) { /* the rest needs a mount */
		close(fd);
		return;
	}
	sh("mkdir -p %s/m/a/mnt && echo x > %s/m/a/file", top, top);
	snprintf(path, sizeof(path), "%s/m/a/mnt", top);
	char src[PATH_MAX];
	snprintf(src, sizeof(src), "%s/outside", top);
	assert_int_equal(mount(src, path, NULL, MS_BIND, NULL), 0);
	assert_int_equal(tree_remove(fd, "m", err, sizeof(err)), -1);
	umount2(path, MNT_DETACH);
	assert_non_null(strstr(err, "a file system is mounted at mnt"));
	snprintf(path, sizeof(path), "%s/outside/f", top);
	assert_int_equal(lstat(path, &st), 0); /* a bind mount of the same file system, untouched */
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_home),
		cmocka_unit_test(test_home_links_stay_inside),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_tree_remove),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
