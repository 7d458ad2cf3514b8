/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_cgroup.c: a session's cgroups (jail/cgroup.c): where they go under our own
 * cgroup for v1 and v2, the limits written, joining, the OOM count and clean-up, against a
 * tree of plain directories standing in for /sys/fs/cgroup; then against the host's own
 * hierarchy where we may write it (root). */
#include "jail/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char top[64], root[96], self[96];
static const struct cgroup_limits lim = { .mem_bytes = 768ULL << 20, .pids = 512, .cpus = 1 };

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *get(const char *dir, const char *file)
{
	static char buf[256];
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return f ? buf : NULL;
}

static void mkdirs(const char *path)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A fake v1 host (memory, pids and cpu hierarchies) or v2 host (one). */
static int make_tree(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/bulkhead-cg.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(root, sizeof(root), "%s/cgroup", top);
	snprintf(self, sizeof(self), "%s/self", top);
	return mkdir(root, 0755);
}

static int remove_tree(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static const char v1_self[] = "12:pids:/user.slice/job\n"
			      "7:memory:/\n"
			      "4:cpu,cpuacct:/user.slice\n"
			      "1:name=systemd:/user.slice/session-1.scope\n"
			      "0::/user.slice/session-1.scope\n";

static void make_v1(void)
{
	static const char *const dirs[] = { "memory", "pids/user.slice/job", "cpu/user.slice" };
	char d[PATH_MAX];
	for (size_t i = 0; i < 3; i++) {
		snprintf(d, sizeof(d), "%s/%s", root, dirs[i]);
		mkdirs(d);
	}
	put(self, v1_self);
}

static void test_plan_v1(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256], want[PATH_MAX];
	(void)state;
	make_v1();
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), 0);
	assert_int_equal(cg.version, 1);
	assert_int_equal(cg.n, 0); /* nothing made */
	/* Under our own cgroup in each controller's hierarchy ("/" adds nothing). */
	snprintf(want, sizeof(want), "%s/memory/bulkhead-s1", root);
	assert_string_equal(cg.dirs[0], want);
	assert_string_equal(cg.memory_dir, want);
	snprintf(want, sizeof(want), "%s/pids/user.slice/job/bulkhead-s1", root);
	assert_string_equal(cg.dirs[1], want);
	snprintf(want, sizeof(want), "%s/cpu/user.slice/bulkhead-s1", root);
	assert_string_equal(cg.dirs[2], want);
	assert_false(exists(cg.dirs[0]));
}

static void test_plan_v2(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256], want[PATH_MAX];
	(void)state;
	put(self, "0::/system.slice/job.service\n");
	assert_int_equal(cgroup_plan(&cg, &fs, "s2", err, sizeof(err)), 0);
	assert_int_equal(cg.version, 2);
	snprintf(want, sizeof(want), "%s/system.slice/job.service/bulkhead-s2", root);
	assert_string_equal(cg.dirs[0], want);
	assert_string_equal(cg.memory_dir, want);
	put(self, "0::/\n");
	assert_int_equal(cgroup_plan(&cg, &fs, "s3", err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/bulkhead-s3", root);
	assert_string_equal(cg.dirs[0], want);
	/* No unified line (a v1-only host without the memory hierarchy): none. */
	put(self, "3:pids:/\n");
	assert_int_equal(cgroup_plan(&cg, &fs, "s4", err, sizeof(err)), -1);
	assert_string_equal(err, "no writable cgroup hierarchy");
	assert_int_equal(cg.version, 0);
}

static void test_plan_v1_missing_controller(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256];
	(void)state;
	make_v1();
	put(self, "7:memory:/\n4:cpu,cpuacct:/\n"); /* no pids controller */
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), -1);
	assert_string_equal(err, "no writable cgroup hierarchy");
	assert_int_equal(cg.version, 0);
}

/* The limits, written into directories that exist, as the kernel's files would take them. */
static void test_limits_v1(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	static const char *const files[] = { "memory.limit_in_bytes", "pids.max",
					     "cpu.cfs_period_us", "cpu.cfs_quota_us" };
	static const int in[] = { 0, 1, 2, 2 };
	struct session_cgroup cg;
	char err[256], path[PATH_MAX + 64];
	(void)state;
	make_v1();
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), 0);
	/* A file missing: refused, saying why. */
	for (int i = 0; i < 3; i++)
		mkdirs(cg.dirs[i]);
	assert_int_equal(cgroup_set_limits(&cg, &lim, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot set the session's limits: No such file or directory");
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", cg.dirs[in[i]], files[i]);
		put(path, "");
	}
	assert_int_equal(cgroup_set_limits(&cg, &lim, err, sizeof(err)), 0);
	assert_string_equal(get(cg.dirs[0], "memory.limit_in_bytes"), "805306368");
	assert_string_equal(get(cg.dirs[1], "pids.max"), "512");
	assert_string_equal(get(cg.dirs[2], "cpu.cfs_period_us"), "100000");
	/* One vCPU plus one for the back ends. */
	assert_string_equal(get(cg.dirs[2], "cpu.cfs_quota_us"), "200000");
}

static void test_limits_v2(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	const struct cgroup_limits three = { .mem_bytes = 1ULL << 30, .pids = 64, .cpus = 3 };
	struct session_cgroup cg;
	char err[256], path[PATH_MAX + 64];
	(void)state;
	put(self, "0::/job\n");
	assert_int_equal(cgroup_plan(&cg, &fs, "s2", err, sizeof(err)), 0);
	mkdirs(cg.dirs[0]);
	assert_int_equal(cgroup_set_limits(&cg, &three, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "controllers not delegated?"));
	const char *files[] = { "memory.max", "pids.max", "cpu.max" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", cg.dirs[0], files[i]);
		put(path, "");
	}
	assert_int_equal(cgroup_set_limits(&cg, &three, err, sizeof(err)), 0);
	assert_string_equal(get(cg.dirs[0], "memory.max"), "1073741824");
	assert_string_equal(get(cg.dirs[0], "pids.max"), "64");
	assert_string_equal(get(cg.dirs[0], "cpu.max"), "400000 100000");
}

/* A creation that fails leaves nothing of its own, and removes nothing of anyone else's. */
static void test_create_fails_cleanly(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256], stale[PATH_MAX];
	(void)state;
	make_v1();
	/* Plain directories hold no control files: the limits cannot be written. */
	assert_int_equal(cgroup_create_in(&cg, &fs, "s1", &lim, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot set the session's limits: No such file or directory");
	assert_int_equal(cg.n, 0);
	assert_int_equal(cg.version, 0);
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		assert_false(exists(cg.dirs[i]));
	/* Another's directory in the way: refused, and it stays. */
	snprintf(stale, sizeof(stale), "%s/pids/user.slice/job/bulkhead-s1", root);
	mkdirs(stale);
	assert_int_equal(cgroup_create_in(&cg, &fs, "s1", &lim, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bulkhead-s1: File exists"));
	assert_true(exists(stale));
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), 0);
	assert_false(exists(cg.dirs[0]));
}

static void test_join_and_oom_count(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256], path[PATH_MAX + 64], pid[24];
	(void)state;
	make_v1();
	assert_int_equal(cgroup_plan(&cg, &fs, "s1", err, sizeof(err)), 0);
	assert_int_equal(cgroup_oom_kills(&cg), 0); /* no file to read yet */
	for (int i = 0; i < 3; i++) {
		mkdirs(cg.dirs[i]);
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg.dirs[i]);
		put(path, "");
	}
	cg.n = 3;
	assert_int_equal(cgroup_join_self(&cg), 0);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = 0; i < 3; i++)
		assert_string_equal(get(cg.dirs[i], "cgroup.procs"), pid);
	assert_int_equal(cgroup_join_self(NULL), 0); /* no cgroups: nothing to join */
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg.dirs[1]);
	unlink(path);
	assert_int_equal(cgroup_join_self(&cg), -1);

	snprintf(path, sizeof(path), "%s/memory.oom_control", cg.memory_dir);
	put(path, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	assert_int_equal(cgroup_oom_kills(&cg), 3);
	cg.version = 2;
	snprintf(path, sizeof(path), "%s/memory.events", cg.memory_dir);
	put(path, "low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n");
	assert_int_equal(cgroup_oom_kills(&cg), 2);
	cg.version = 0;
	assert_int_equal(cgroup_oom_kills(&cg), 0);
	assert_int_equal(cgroup_oom_kills(NULL), 0);
}

/* What a killed launcher left: its empty directories go, in v1's hierarchies and v2's. */
static void test_remove_stale(void **state)
{
	const struct cgroup_fs fs = { .root = root, .self = self };
	struct session_cgroup cg;
	char err[256], busy[PATH_MAX + 16], v2[PATH_MAX];
	(void)state;
	make_v1();
	assert_int_equal(cgroup_plan(&cg, &fs, "old", err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		mkdirs(cg.dirs[i]);
	snprintf(busy, sizeof(busy), "%s/x", cg.dirs[1]); /* not empty: not ours to empty */
	mkdirs(busy);
	snprintf(v2, sizeof(v2), "%s/user.slice/session-1.scope/bulkhead-old", root);
	mkdirs(v2);
	cgroup_remove_stale_in(&fs, "old");
	assert_false(exists(cg.dirs[0]));
	assert_true(exists(cg.dirs[1]));
	assert_false(exists(cg.dirs[2]));
	assert_false(exists(v2));
}

/* The host's own hierarchy: real limits, a real process joining, nothing left. */
static void test_real_hierarchy(void **state)
{
	struct session_cgroup cg;
	char err[512], id[32], pid[24];
	int p[2];
	(void)state;
	if (geteuid() != 0) {
		print_message("# needs root to make cgroups\n");
		skip();
	}
	snprintf(id, sizeof(id), "unit-%d", (int)getpid());
	if (cgroup_create(&cg, id, &lim, err, sizeof(err)) < 0) {
		print_message("# no usable cgroup hierarchy here: %s\n", err);
		skip();
	}
	if (cg.version == 1) {
		assert_string_equal(get(cg.dirs[0], "memory.limit_in_bytes"), "805306368\n");
		assert_string_equal(get(cg.dirs[1], "pids.max"), "512\n");
		assert_string_equal(get(cg.dirs[2], "cpu.cfs_quota_us"), "200000\n");
	} else {
		assert_string_equal(get(cg.dirs[0], "memory.max"), "805306368\n");
		assert_string_equal(get(cg.dirs[0], "pids.max"), "512\n");
		assert_string_equal(get(cg.dirs[0], "cpu.max"), "200000 100000\n");
	}
	assert_int_equal(cgroup_oom_kills(&cg), 0);
	assert_int_equal(pipe(p), 0);
	pid_t child = fork();
	if (child == 0) {
		char c = cgroup_join_self(&cg) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		sleep(60); /* killed long before, unless the code under test fails */
		_exit(0);
	}
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	snprintf(pid, sizeof(pid), "%d\n", (int)child);
	for (int i = 0; i < cg.n; i++)
		assert_string_equal(get(cg.dirs[i], "cgroup.procs"), pid);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(p[0]);
	close(p[1]);
	char dirs[CGROUP_MAX_DIRS][PATH_MAX];
	int n = cg.n;
	memcpy(dirs, cg.dirs, sizeof(dirs));
	assert_int_equal(cgroup_destroy(&cg, NULL, 0), 0);
	assert_int_equal(cg.n, 0);
	for (int i = 0; i < n; i++)
		assert_false(exists(dirs[i]));
}

int main(void)
{
	alarm(60); /* a test that hangs fails (SIGALRM) rather than stalling the suite */
#define T(f) cmocka_unit_test_setup_teardown(f, make_tree, remove_tree)
	const struct CMUnitTest tests[] = {
		T(test_plan_v1),
		T(test_plan_v2),
		T(test_plan_v1_missing_controller),
		T(test_limits_v1),
		T(test_limits_v2),
		T(test_create_fails_cleanly),
		T(test_join_and_oom_count),
		T(test_remove_stale),
		cmocka_unit_test(test_real_hierarchy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
