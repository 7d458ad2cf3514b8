/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_jail_spec.c: the jail's contract with its callers, without starting anyone:
 * which specs it follows and which it refuses (in the launcher, with a reason, before any
 * child exists), and the dynamic program's root (jail_loader.c, jail_san.c) built from this
 * host's own layout. */
#include "jail/jail.h"
#include "jail/jail_loader.h"
#include "jail/jail_san.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static struct jail_ids ids = JAIL_IDS_INIT;
static int fd; /* an open descriptor to hand over */

/* bulkhead-vsock's shape: an empty root with one writable directory, one socket. */
static struct jail_spec vsock_like(const struct jail_mount *m)
{
	return (struct jail_spec){ .ids = &ids,
				   .empty_root = true,
				   .mounts = m,
				   .nmounts = 1,
				   .extra_gid = (gid_t)-1,
				   .fds = &fd,
				   .nfds = 1,
				   .out_fd = fd,
				   .diag_fd = fd };
}

static void refused(const struct jail_spec *s, int rc, const char *why)
{
	char err[512] = "";
	assert_int_equal(jail_spec_check(s, err, sizeof(err)), rc);
	if (!strstr(err, why))
		fail_msg("\"%s\" does not say \"%s\"", err, why);
}

static void test_good_specs(void **state)
{
	const struct jail_mount dir = { .src = "/tmp", .flags = JAIL_MOUNT_RW };
	struct jail_spec s = vsock_like(&dir);
	char err[256];
	(void)state;
	assert_int_equal(jail_spec_check(&s, err, sizeof(err)), 0);
	/* virtiofsd's: a user namespace, its share bound over itself, checked again. */
	const struct jail_userns owner = { .uid = 1000, .gid = 1000 };
	const struct jail_mount share = { .src = "/tmp", .flags = JAIL_MOUNT_SAME, .ino = 2 };
	const struct jail_spec v = { .map_root = &owner,
				     .mounts = &share,
				     .nmounts = 1,
				     .fds = &fd,
				     .nfds = 1,
				     .out_fd = fd,
				     .diag_fd = fd };
	assert_int_equal(jail_spec_check(&v, err, sizeof(err)), 0);
	/* A source named relative to where the launcher runs (--kernel build/vmlinux), placed
	 * at an absolute path inside; and one bound over itself. */
	const struct jail_mount kernel = { .src = "build/vmlinux", .dst = "/boot/kernel" };
	s = vsock_like(&kernel);
	assert_int_equal(jail_spec_check(&s, err, sizeof(err)), 0);
	const struct jail_mount here = { .src = "work" };
	s = vsock_like(&here);
	s.empty_root = false;
	assert_int_equal(jail_spec_check(&s, err, sizeof(err)), 0);
	s = vsock_like(&dir);
	/* The most it takes of each. */
	struct jail_mount many[JAIL_MOUNTS_MAX];
	const char *links[2 * JAIL_LINKS_MAX];
	int fds[JAIL_FDS_MAX];
	for (int i = 0; i < JAIL_MOUNTS_MAX; i++)
		many[i] = (struct jail_mount){ .src = "/usr", .dst = "/x" };
	for (int i = 0; i < JAIL_LINKS_MAX; i++) {
		links[2 * i] = "/l";
		links[2 * i + 1] = "usr/lib";
	}
	for (int i = 0; i < JAIL_FDS_MAX; i++)
		fds[i] = fd;
	s.mounts = many;
	s.nmounts = JAIL_MOUNTS_MAX;
	s.links = links;
	s.nlinks = JAIL_LINKS_MAX;
	s.fds = fds;
	s.nfds = JAIL_FDS_MAX;
	assert_int_equal(jail_spec_check(&s, err, sizeof(err)), 0);
}

static void test_refused_specs(void **state)
{
	const struct jail_mount dir = { .src = "/tmp", .flags = JAIL_MOUNT_RW };
	struct jail_mount m;
	struct jail_spec s;
	(void)state;
	s = vsock_like(&dir);
	s.ids = NULL;
	refused(&s, -EINVAL, "neither ids nor a user namespace");

	struct jail_mount many[JAIL_MOUNTS_MAX + 1] = { { .src = "/usr" } };
	s = vsock_like(many);
	s.nmounts = JAIL_MOUNTS_MAX + 1;
	refused(&s, -E2BIG, "too many mounts (17 of 16)");
	s = vsock_like(&dir);
	s.nfds = JAIL_FDS_MAX + 1;
	refused(&s, -E2BIG, "descriptors (9 of 8)");
	s = vsock_like(&dir);
	s.nlinks = JAIL_LINKS_MAX + 1;
	refused(&s, -E2BIG, "links (17 of 16)");
	s = vsock_like(NULL);
	refused(&s, -EINVAL, "a count without its list");

	static const struct {
		struct jail_mount m;
		bool empty_root;
		const char *why;
	} bad_mounts[] = {
		{ { .src = "tmp" }, true, "tmp: its place in the root must be an absolute path" },
		{ { .src = NULL }, true, "a mount without a source" },
		{ { .src = "" }, false, "a mount without a source" },
		{ { .src = "/tmp", .dst = "x" },
		  true,
		  "its place in the root must be an absolute" },
		{ { .src = "/tmp", .dst = "/x" }, false, "without an empty root it is bound over" },
		{ { .src = "/tmp", .dst = "/" }, true, "not over the root itself" },
		{ { .src = "/" }, false, "not over the root itself" },
		{ { .src = "/tmp", .flags = 0x100 }, true, "unknown flags 0x100" },
		{ { .src = "/tmp", .flags = JAIL_MOUNT_SAME }, false, "without the inode" },
		/* A ready-made tree: open, clear of the descriptors handed over, not also SAME. */
		{ { .src = "/tmp", .flags = JAIL_MOUNT_TREE, .tree_fd = -1 },
		  false,
		  "tree_fd of at least" },
		{ { .src = "/tmp", .flags = JAIL_MOUNT_TREE, .tree_fd = 3 },
		  false,
		  "tree_fd of at least" },
		{ { .src = "/tmp", .flags = JAIL_MOUNT_TREE, .tree_fd = 999 },
		  false,
		  "tree_fd of at least" },
		{ { .src = "/tmp",
		    .flags = JAIL_MOUNT_TREE | JAIL_MOUNT_SAME,
		    .tree_fd = 20,
		    .ino = 2 },
		  false,
		  "and no SAME" },
	};
	for (size_t i = 0; i < sizeof(bad_mounts) / sizeof(bad_mounts[0]); i++) {
		m = bad_mounts[i].m;
		s = vsock_like(&m);
		s.empty_root = bad_mounts[i].empty_root;
		refused(&s, -EINVAL, bad_mounts[i].why);
	}

	/* A range of ids mapped to themselves is for a privileged launcher only. */
	const struct jail_userns range = { .uid = 0, .gid = 0, .count = 65536 };
	s = vsock_like(&dir);
	s.map_root = &range;
	s.ids = NULL;
	s.empty_root = false;
	if (geteuid() != 0)
		refused(&s, -EPERM, "needs a privileged launcher");

	const char *link[2] = { "/lib", "usr/lib" };
	s = vsock_like(&dir);
	s.links = link;
	s.nlinks = 1;
	s.empty_root = false;
	s.nmounts = 0;
	refused(&s, -EINVAL, "links need an empty root");
	const char *bad_links[][2] = { { "lib", "usr/lib" }, { "/", "usr" }, { "/lib", "" } };
	for (size_t i = 0; i < 3; i++) {
		s = vsock_like(&dir);
		s.links = bad_links[i];
		s.nlinks = 1;
		refused(&s, -EINVAL, "link 0: an absolute path and a target");
	}

	int closed = dup(fd);
	close(closed);
	s = vsock_like(&dir);
	s.fds = &closed;
	refused(&s, -EBADF, "descriptor to hand over");
	s = vsock_like(&dir);
	s.out_fd = -1;
	refused(&s, -EBADF, "stdout -1 is not an open descriptor");
	s = vsock_like(&dir);
	s.diag_fd = closed;
	refused(&s, -EBADF, "stderr");
}

/* A refused spec starts nothing: no child, the reason as the caller's error. */
static void test_spawn_refuses_before_starting(void **state)
{
	const struct jail_mount rel = { .src = "tmp" };
	struct jail_spec s = vsock_like(&rel);
	char *const argv[] = { "/bin/true", NULL };
	char err[256];
	(void)state;
	assert_int_equal(jail_spawn(argv, &s), -EINVAL);
	assert_int_equal(jail_spawn_wait(argv, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "mount tmp: its place in the root must be an absolute path");
	assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	assert_int_equal(ids.netns_fd, -1); /* and no network namespace was made */
}

/* The loader's part of a root, from this host's layout: /usr and the cache, then each
 * top-level path as a read-only mount (a directory) or the same link (merged /usr). */
static void test_loader(void **state)
{
	static const char *const tops[] = {
		"/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"
	};
	struct jail_mount m[JAIL_MOUNTS_MAX];
	struct jail_loader l;
	size_t n = 1, nl = 0;
	(void)state;
	m[0] = (struct jail_mount){ .src = "/mine" };
	assert_int_equal(jail_loader_add(&l, m, &n, JAIL_MOUNTS_MAX), 0);
	assert_string_equal(m[0].src, "/mine"); /* the caller's own stay */
	assert_string_equal(m[1].src, "/usr");
	assert_int_equal(m[1].flags, 0); /* read-only */
	assert_string_equal(m[2].src, "/etc/ld.so.cache");
	assert_int_equal(m[2].flags, JAIL_MOUNT_OPTIONAL);
	size_t next = 3;
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		struct stat st;
		char target[256];
		if (lstat(tops[i], &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			assert_true(next < n);
			assert_string_equal(m[next].src, tops[i]);
			assert_null(m[next].dst);
			assert_int_equal(m[next].flags, 0);
			next++;
		} else if (S_ISLNK(st.st_mode)) {
			ssize_t len = readlink(tops[i], target, sizeof(target) - 1);
			assert_true(len > 0);
			target[len] = '\0';
			assert_true(nl < l.nlinks);
			assert_string_equal(l.links[2 * nl], tops[i]);
			assert_string_equal(l.links[2 * nl + 1], target);
			nl++;
		}
	}
	assert_int_equal(n, next);
	assert_int_equal(l.nlinks, nl);
	/* The loader itself (PT_INTERP, /lib64/ld-linux-x86-64.so.2) is reachable either way. */
	assert_true(nl + (n - 3) > 0);
	/* And the spec it makes is one the jail follows. */
	struct jail_spec s = vsock_like(m);
	s.nmounts = n;
	s.links = l.links;
	s.nlinks = l.nlinks;
	char err[256];
	assert_int_equal(jail_spec_check(&s, err, sizeof(err)), 0);
	/* No room: refused, nothing added. */
	n = JAIL_MOUNTS_MAX - 3;
	assert_int_equal(jail_loader_add(&l, m, &n, JAIL_MOUNTS_MAX), -E2BIG);
	assert_int_equal(n, JAIL_MOUNTS_MAX - 3);
}

/* A sanitizer build's dynamic programs get the loader's root; a normal build's spec is left
 * exactly as it was, as strict. */
static void test_san_extend(void **state)
{
	const struct jail_mount dir = { .src = "/tmp", .flags = JAIL_MOUNT_RW };
	struct jail_spec s = vsock_like(&dir);
	struct jail_san san;
	(void)state;
	assert_int_equal(jail_san_extend(&san, &s), 0);
#ifdef BULKHEAD_SANITIZED
	assert_ptr_equal(s.mounts, san.mounts);
	assert_true(s.nmounts > 2);
	assert_string_equal(s.mounts[0].src, "/tmp");
	assert_int_equal(s.mounts[0].flags, JAIL_MOUNT_RW);
	assert_string_equal(s.mounts[1].src, "/usr");
	const char *link[2] = { "/l", "usr/lib" };
	s = vsock_like(&dir);
	s.links = link;
	s.nlinks = 1;
	assert_int_equal(jail_san_extend(&san, &s), -E2BIG);
#else
	assert_ptr_equal(s.mounts, &dir);
	assert_int_equal(s.nmounts, 1);
	assert_null(s.links);
	assert_int_equal(s.nlinks, 0);
#endif
}

int main(void)
{
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_specs),
		cmocka_unit_test(test_refused_specs),
		cmocka_unit_test(test_spawn_refuses_before_starting),
		cmocka_unit_test(test_loader),
		cmocka_unit_test(test_san_extend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
