/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_jail_ids.c: whom a session's jailed processes run as (jail/jail_ids.c):
 * --jail-uid's strict grammar, uid leases in a directory of our own (two sessions never
 * share a uid; a held one is refused; a released one is free; a planted link is not followed),
 * and the ids' access to the files a jail is given. */
#include "jail/jail_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* Far from the jail's range and from any account: no process runs as these. */
#define TEST_FIRST 3000000000u

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/bulkhead-ids.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_parse_accepts(void **state)
{
	static const struct {
		const char *s;
		uid_t uid;
		gid_t gid;
	} good[] = {
		{ "1", 1, 1 },
		{ "4242", 4242, 4242 },
		{ "4242:4343", 4242, 4343 },
		{ "007", 7, 7 },
		{ "4294967294", 4294967294u, 4294967294u },
		{ "5:4294967294", 5, 4294967294u },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uid_t uid = 0;
		gid_t gid = 0;
		assert_int_equal(jail_ids_parse(good[i].s, &uid, &gid), 0);
		assert_int_equal(uid, good[i].uid);
		assert_int_equal(gid, good[i].gid);
	}
}

/* The first eight are the ones tests/e2e/test_jail.sh gives `bulkhead run --jail-uid`. */
static const char *const bad[] = {
	"0",
	"0:5",
	"abc",
	"12:",
	"12:x",
	"-1",
	"4294967295",
	"99999999999",
	"",
	":5",
	"5:0",
	" 5",
	"5 ",
	"+5",
	"5:-1",
	"5:+1",
	"1:2:3",
	"5:4294967295",
	"5: 6",
	"0x10",
	"18446744073709551617",
	"5:99999999999",
};

static void test_parse_refuses(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uid_t uid = 0;
		gid_t gid = 0;
		if (jail_ids_parse(bad[i], &uid, &gid) == 0)
			fail_msg("\"%s\" was taken as %u:%u", bad[i], (unsigned)uid, (unsigned)gid);
	}
}

/* --jail-uid's refusal is one line naming the value, before any lease is looked at. */
static void test_acquire_refuses_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct jail_ids ids = JAIL_IDS_INIT;
		char err[256] = "", want[300];
		assert_int_equal(jail_ids_acquire(&ids, bad[i], err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "--jail-uid %s: want UID or UID:GID, not 0", bad[i]);
		assert_string_equal(err, want);
		assert_int_equal(ids.lease_fd, -1);
	}
}

static void test_leases_are_distinct(void **state)
{
	const struct jail_lease l = { .dir = dir, .first = TEST_FIRST, .count = 3 };
	struct jail_ids ids[4] = { JAIL_IDS_INIT, JAIL_IDS_INIT, JAIL_IDS_INIT, JAIL_IDS_INIT };
	char err[256];
	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(jail_ids_lease(&ids[i], &l, NULL, err, sizeof(err)), 0);
		assert_true(ids[i].uid >= TEST_FIRST && ids[i].uid < TEST_FIRST + 3);
		assert_int_equal(ids[i].gid, ids[i].uid);
		assert_true(ids[i].lease_fd >= 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(ids[i].uid, ids[j].uid);
	}
	/* All taken: the fourth is refused, saying so. */
	assert_int_equal(jail_ids_lease(&ids[3], &l, NULL, err, sizeof(err)), -1);
	assert_string_equal(err, "every jail uid from 3000000000 is in use (3 sessions)");
	/* A released uid is the one free uid, so the next lease gets exactly it. */
	uid_t freed = ids[1].uid;
	jail_ids_release(&ids[1]);
	assert_int_equal(ids[1].lease_fd, -1);
	assert_int_equal(jail_ids_lease(&ids[3], &l, NULL, err, sizeof(err)), 0);
	assert_int_equal(ids[3].uid, freed);
	for (int i = 0; i < 4; i++)
		jail_ids_release(&ids[i]);
}

/* A lease's file lives while the lease does: the directory does not grow with every session
 * ever run. A file a killed session left (unlocked) is taken over; a lock on a file its holder
 * removed meanwhile is not a lease (the next one is taken on the file the path names). */
static void test_lease_files_go_with_their_lease(void **state)
{
	const struct jail_lease l = { .dir = dir, .first = TEST_FIRST, .count = 1 };
	struct jail_ids a = JAIL_IDS_INIT, b = JAIL_IDS_INIT;
	char err[256], path[128];
	struct stat st;
	(void)state;
	snprintf(path, sizeof(path), "%s/%u", dir, TEST_FIRST);
	int stale = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600); /* a killed session's */
	assert_true(stale >= 0);
	close(stale);
	assert_int_equal(jail_ids_lease(&a, &l, NULL, err, sizeof(err)), 0);
	assert_int_equal(a.uid, TEST_FIRST);
	/* A waiter that opened the file before a holds it... */
	int early = open(path, O_RDWR | O_CLOEXEC);
	assert_true(early >= 0);
	jail_ids_release(&a);
	assert_int_equal(stat(path, &st), -1); /* ...sees it removed with the lease */
	assert_int_equal(errno, ENOENT);
	assert_int_equal(flock(early, LOCK_EX | LOCK_NB), 0); /* a lock on nothing that counts */
	assert_int_equal(jail_ids_lease(&b, &l, NULL, err, sizeof(err)), 0);
	assert_int_equal(b.uid, TEST_FIRST);
	assert_int_equal(stat(path, &st), 0);
	close(early);
	jail_ids_release(&b);
	assert_int_equal(stat(path, &st), -1);
}

static void test_held_uid_is_refused(void **state)
{
	const struct jail_lease l = { .dir = dir, .first = TEST_FIRST, .count = 3 };
	struct jail_ids a = JAIL_IDS_INIT, b = JAIL_IDS_INIT;
	char err[256];
	(void)state;
	assert_int_equal(jail_ids_lease(&a, &l, "3000000001:4000", err, sizeof(err)), 0);
	assert_int_equal(a.uid, 3000000001u);
	assert_int_equal(a.gid, 4000);
	assert_int_equal(jail_ids_lease(&b, &l, "3000000001", err, sizeof(err)), -1);
	assert_string_equal(err, "--jail-uid 3000000001: another session runs as that uid");
	/* Nor does a free choice land on it. */
	for (int i = 0; i < 2; i++) {
		struct jail_ids c = JAIL_IDS_INIT;
		assert_int_equal(jail_ids_lease(&c, &l, NULL, err, sizeof(err)), 0);
		assert_int_not_equal(c.uid, 3000000001u);
		jail_ids_release(&c);
	}
	jail_ids_release(&a);
	jail_ids_release(&a); /* twice is harmless */
	assert_int_equal(jail_ids_lease(&b, &l, "3000000001", err, sizeof(err)), 0);
	jail_ids_release(&b);
}

/* Leases are between launchers, i.e. processes: one held by another process is refused too,
 * and is free the moment that process is gone, however it ended. */
static void test_lease_held_by_another_process(void **state)
{
	const struct jail_lease l = { .dir = dir, .first = TEST_FIRST, .count = 1 };
	struct jail_ids ids = JAIL_IDS_INIT;
	char err[256], c;
	int p[2];
	(void)state;
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct jail_ids mine = JAIL_IDS_INIT;
		char e[256];
		c = jail_ids_lease(&mine, &l, NULL, e, sizeof(e)) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		sleep(60); /* killed long before, unless the code under test fails */
		_exit(0);
	}
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	assert_int_equal(jail_ids_lease(&ids, &l, NULL, err, sizeof(err)), -1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(jail_ids_lease(&ids, &l, NULL, err, sizeof(err)), 0);
	assert_int_equal(ids.uid, TEST_FIRST);
	jail_ids_release(&ids);
	close(p[0]);
	close(p[1]);
}

/* The lease directory is made (0700) when missing; a link planted for a lease file is not
 * followed, so nobody can make the launcher create or lock a file elsewhere. */
static void test_lease_dir_and_links(void **state)
{
	char sub[128], link[160], target[160];
	struct jail_ids ids = JAIL_IDS_INIT;
	struct stat st;
	char err[512];
	(void)state;
	snprintf(sub, sizeof(sub), "%s/leases", dir);
	const struct jail_lease l = { .dir = sub, .first = TEST_FIRST, .count = 1 };
	assert_int_equal(jail_ids_lease(&ids, &l, NULL, err, sizeof(err)), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	jail_ids_release(&ids);
	snprintf(link, sizeof(link), "%s/%u", sub, TEST_FIRST + 1);
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(jail_ids_lease(&ids, &l, "3000000001", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "Too many levels of symbolic links"));
	assert_int_equal(access(target, F_OK), -1);
}

/* What a jail is given becomes its ids' (a socket directory), and those ids' access to a file
 * is judged by its mode bits. As root only: the files change owner. */
static void test_give_dir_and_can_open(void **state)
{
	struct jail_ids ids = { .uid = 4242, .gid = 4343, .lease_fd = -1, .netns_fd = -1 };
	char d[80], f[96], s[96], l[96], t[96];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	(void)state;
	if (geteuid() != 0) {
		print_message("# needs root: files change owner\n");
		skip();
	}
	snprintf(d, sizeof(d), "%s/given", dir);
	snprintf(f, sizeof(f), "%s/file", d);
	snprintf(s, sizeof(s), "%s/sock", d);
	snprintf(l, sizeof(l), "%s/link", d);
	snprintf(t, sizeof(t), "%s/target", dir); /* root's, outside what is given */
	assert_int_equal(mkdir(d, 0700), 0);
	int fd = open(f, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	int sk = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s);
	assert_int_equal(bind(sk, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fd = open(t, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(t, l), 0);
	assert_int_equal(jail_ids_give_dir(&ids, d), 0);
	const char *mine[] = { d, f, s };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(lstat(mine[i], &st), 0);
		assert_int_equal(st.st_uid, 4242);
		assert_int_equal(st.st_gid, 4343);
	}
	assert_int_equal(lstat(l, &st), 0);
	assert_int_equal(st.st_uid, 4242); /* the link itself, never what it points at */
	assert_int_equal(stat(t, &st), 0);
	assert_int_equal(st.st_uid, 0);
	close(sk);

	/* Owner, group, others: each by its own bits. */
	assert_int_equal(chmod(f, 0640), 0);
	assert_true(jail_ids_can_open(&ids, f, false));
	assert_true(jail_ids_can_open(&ids, f, true));
	struct jail_ids group = { .uid = 5000, .gid = 4343 }, other = { .uid = 5000, .gid = 5000 };
	assert_true(jail_ids_can_open(&group, f, false));
	assert_false(jail_ids_can_open(&group, f, true));
	assert_false(jail_ids_can_open(&other, f, false));
	assert_int_equal(chmod(f, 0604), 0);
	assert_true(jail_ids_can_open(&other, f, false));
	assert_false(jail_ids_can_open(&group, f, false)); /* the group's own bits say no */
	assert_false(jail_ids_can_open(&other, "/nonexistent", false));
}

int main(void)
{
	alarm(60); /* a test that hangs fails (SIGALRM) rather than stalling the suite */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_accepts),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_acquire_refuses_malformed),
		cmocka_unit_test_setup_teardown(test_leases_are_distinct, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_held_uid_is_refused, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_lease_files_go_with_their_lease, make_dir,
						remove_dir),
		cmocka_unit_test_setup_teardown(test_lease_held_by_another_process, make_dir,
						remove_dir),
		cmocka_unit_test_setup_teardown(test_lease_dir_and_links, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_give_dir_and_can_open, make_dir, remove_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
