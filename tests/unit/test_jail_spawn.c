/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_jail_spawn.c: jail_spawn's contract, seen from inside the jailed process.
 * This program is its own probe: started with --probe it prints what it was given (ids,
 * capabilities, flags, rlimits, descriptors, root, network, mounts) and exits. As root: the
 * session's shape (an empty root, leased ids, no capability, the session's network namespace
 * shared), failures reported by step, and virtiofsd's (map_root: the share's owner as the root
 * of a user namespace, the share bound alone and read-only, checked again, the caller's filter
 * last). Without root: a user namespace mapping only the caller, whoever the caller is. */
#include "jail/jail.h"
#include "jail/jail_loader.h"

#include <errno.h>
#include <linux/mount.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;
static char self_exe[PATH_MAX];
static char top[64];

/* ---- the probe, inside the jail ---------------------------------------------------------- */

static long lim(int res)
{
	struct rlimit r;
	return getrlimit(res, &r) < 0 ? -2 : r.rlim_cur == RLIM_INFINITY ? -1 : (long)r.rlim_cur;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void probe_root(void)
{
	char *names[64];
	size_t n = 0;
	DIR *d = opendir("/");
	struct dirent *e;
	while (d && n < 64 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			names[n++] = strdup(e->d_name);
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	dprintf(1, "root");
	for (size_t i = 0; i < n; i++)
		dprintf(1, " %s", names[i]);
	dprintf(1, "\n");
}

static void probe_ids_and_caps(void)
{
	uid_t r, e, s;
	gid_t rg, eg, sg, groups[16];
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	int bnd = 0, amb = 0, n = getgroups(16, groups);

	getresuid(&r, &e, &s);
	getresgid(&rg, &eg, &sg);
	dprintf(1, "ids %u %u %u %u %u %u\n", r, e, s, rg, eg, sg);
	dprintf(1, "groups %d", n);
	for (int i = 0; i < n; i++)
		dprintf(1, " %u", groups[i]);
	dprintf(1, "\n");
	syscall(SYS_capget, &h, d);
	dprintf(1, "caps %08x%08x %08x%08x %08x%08x\n", d[1].effective, d[0].effective,
		d[1].permitted, d[0].permitted, d[1].inheritable, d[0].inheritable);
	for (int c = 0; c <= CAP_LAST_CAP; c++) {
		bnd += prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1;
		amb += prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1;
	}
	dprintf(1, "bnd %d\namb %d\n", bnd, amb);
}

static _Noreturn void probe(int argc, char **argv)
{
	char host[64] = "", map[64] = "-";
	int sig = -1, fds = 0, env = 0;
	struct stat in;

	probe_ids_and_caps();
	prctl(PR_GET_PDEATHSIG, &sig);
	dprintf(1, "nnp %d\nsecbits %d\npdeath %d\nseccomp %d\n",
		prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), sig,
		prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
	gethostname(host, sizeof(host));
	while (environ && environ[env])
		env++;
	dprintf(1, "pid %d\nhost %s\nenv %d\n", (int)getpid(), host, env);
	dprintf(1, "fds");
	for (int fd = 0; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0 && ++fds)
			dprintf(1, " %d", fd);
	dprintf(1, "\n");
	probe_root();
	dprintf(1, "rl %ld %ld %ld %ld %ld\n", lim(RLIMIT_CORE), lim(RLIMIT_FSIZE),
		lim(RLIMIT_NOFILE), lim(RLIMIT_NPROC), lim(RLIMIT_MEMLOCK));
	dprintf(1, "mkroot %d\n", mkdir("/.probe", 0700) < 0 ? errno : 0);
	dprintf(1, "stdin_null %d\n", fstat(0, &in) == 0 && in.st_rdev == makedev(1, 3));
	struct if_nameindex *ifs = if_nameindex();
	dprintf(1, "ifaces");
	for (struct if_nameindex *i = ifs; i && i->if_index; i++)
		dprintf(1, " %s", i->if_name);
	dprintf(1, "\n");
	int m = open("/proc/self/uid_map", O_RDONLY);
	ssize_t len = m < 0 ? -1 : read(m, map, sizeof(map) - 1);
	map[len > 0 ? len : 1] = '\0';
	dprintf(1, "uid_map %s\n", strtok(map, "\n") ? map : "-");
	for (int i = 2; i + 1 < argc; i++) {
		char f[PATH_MAX];
		struct statvfs v;
		if (!strcmp(argv[i], "--write")) {
			snprintf(f, sizeof(f), "%s/probe-file", argv[i + 1]);
			int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
			dprintf(1, "write %s %d\n", argv[i + 1], fd < 0 ? errno : 0);
		} else if (!strcmp(argv[i], "--statvfs")) {
			dprintf(1, "flags %s %lu\n", argv[i + 1],
				statvfs(argv[i + 1], &v) < 0 ? 0ul : v.f_flag);
		}
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--say") && write(3, "hello", 5) != 5)
			_exit(2);
		if (!strcmp(argv[i], "--wait")) {
			char c;
			while (read(4, &c, 1) > 0)
				;
		}
	}
	_exit(0); /* no exit handlers: a sanitizer's leak check would look for /proc */
}

/* ---- the launcher's side --------------------------------------------------------------- */

/* The value of KEY in the probe's output, or NULL. */
static const char *field(const char *out, const char *key)
{
	static char val[1024];
	size_t k = strlen(key);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, k) && l[k] == ' ') {
			size_t n = strcspn(l + k + 1, "\n");
			snprintf(val, sizeof(val), "%.*s", (int)n, l + k + 1);
			return val;
		}
	return NULL;
}

static void expect(const char *out, const char *key, const char *want)
{
	const char *got = field(out, key);
	if (!got || strcmp(got, want))
		fail_msg("%s: \"%s\", not \"%s\"\n%s", key, got ? got : "(none)", want, out);
}

/* Everything on FD until its end. */
static char *slurp(int fd)
{
	static char buf[2][8192];
	static int which;
	char *b = buf[which ^= 1];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf[0]) - 1 && (r = read(fd, b + n, sizeof(buf[0]) - 1 - n)) > 0)
		n += (size_t)r;
	b[n] = '\0';
	close(fd);
	return b;
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool no_children_left(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static ino_t ns_of(pid_t pid, const char *ns)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	return stat(path, &st) < 0 ? 0 : st.st_ino;
}

/* A core limit the jail must lower (the host's may be 0 already), and descriptors a careless
 * launcher leaves inheritable: the jail must not pass them on. */
static void dirty_launcher(void)
{
	struct rlimit core;
	int null = open("/dev/null", O_RDONLY);
	assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
	core.rlim_cur = 1 << 20;
	if (core.rlim_max != RLIM_INFINITY && core.rlim_max < core.rlim_cur)
		core.rlim_max = core.rlim_cur;
	assert_int_equal(setrlimit(RLIMIT_CORE, &core), 0);
	assert_int_equal(dup2(null, 5), 5);
	assert_int_equal(dup2(null, 40), 40);
	close(null);
}

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("# needs root: the jail leases ids and builds roots as root\n");
		skip();
	}
}

static int make_top(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/bulkhead-jail.XXXXXX");
	return mkdtemp(top) && chmod(top, 0755) == 0 ? 0 : -1;
}

static int remove_top(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static void mkdir_owned(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	assert_int_equal(mkdir(path, mode), 0);
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* ---- the session's shape ------------------------------------------------------------- */

/* Starts the probe jailed by SPEC (its out_fd set here) with ARGS; returns its output. */
static pid_t start_probe(struct jail_spec *s, const char *const *args, int *out)
{
	char *argv[16] = { self_exe, "--probe" };
	int p[2];
	size_t n = 2;
	for (; args && *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	s->out_fd = p[1];
	if (s->diag_fd < 0)
		s->diag_fd = p[1];
	pid_t pid = jail_spawn(argv, s);
	close(p[1]);
	*out = p[0];
	return pid;
}

/* bulkhead-vsock's and QEMU's shape: leased ids, an empty root with the loader, one writable
 * and one read-only directory, two descriptors, a group kept; and a second process of the
 * session in the same empty network namespace. */
static void test_session_jail(void **state)
{
	struct jail_ids ids = JAIL_IDS_INIT;
	struct jail_mount m[JAIL_MOUNTS_MAX];
	struct jail_loader l;
	char err[256], data[96], ro[96], want[512];
	int say[2], hold[2], hold2[2], out, out2;
	size_t n = 0;
	(void)state;
	need_root();
	dirty_launcher();
	assert_int_equal(jail_ids_acquire(&ids, NULL, err, sizeof(err)), 0);
	assert_true(ids.uid >= JAIL_UID_FIRST && ids.uid < JAIL_UID_FIRST + JAIL_UID_COUNT);
	snprintf(data, sizeof(data), "%s/data", top);
	snprintf(ro, sizeof(ro), "%s/ro", top);
	mkdir_owned(data, 0, 0, 0700);
	mkdir_owned(ro, 0, 0, 0777);
	assert_int_equal(jail_ids_give_dir(&ids, data), 0);
	assert_int_equal(jail_loader_add(&l, m, &n, JAIL_MOUNTS_MAX), 0);
	m[n++] = (struct jail_mount){ .src = data, .dst = "/data", .flags = JAIL_MOUNT_RW };
	m[n++] = (struct jail_mount){ .src = ro, .dst = "/ro" };
	assert_int_equal(pipe2(say, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold2, O_CLOEXEC), 0);
	int fds[2] = { say[1], hold[0] };
	struct jail_spec s = { .ids = &ids,
			       .empty_root = true,
			       .mounts = m,
			       .nmounts = n,
			       .links = l.links,
			       .nlinks = l.nlinks,
			       .extra_gid = 4343,
			       .fds = fds,
			       .nfds = 2,
			       .diag_fd = -1 };
	static const char *const args[] = { "--say",   "--wait", "--write", "/data",
					    "--write", "/ro",	 NULL };
	pid_t pid = start_probe(&s, args, &out);
	assert_true(pid > 0);
	close(say[1]);
	close(hold[0]);
	char hello[8] = "";
	assert_int_equal(read(say[0], hello, sizeof(hello)), 5); /* its descriptor 3 is ours */
	assert_memory_equal(hello, "hello", 5);
	/* While it waits: namespaces of its own, and the session's network namespace. */
	const char *own[] = { "pid", "ipc", "uts", "mnt", "net" };
	for (size_t i = 0; i < 5; i++)
		assert_int_not_equal(ns_of(pid, own[i]), ns_of(getpid(), own[i]));
	struct stat netns;
	assert_true(ids.netns_fd >= 0);
	assert_int_equal(fstat(ids.netns_fd, &netns), 0);
	assert_int_equal(netns.st_ino, ns_of(pid, "net"));
	int fds2[2] = { say[0], hold2[0] };
	struct jail_spec s2 = { .ids = &ids,
				.empty_root = true,
				.mounts = m,
				.nmounts = n - 2,
				.links = l.links,
				.nlinks = l.nlinks,
				.extra_gid = (gid_t)-1,
				.fds = fds2,
				.nfds = 2,
				.diag_fd = -1,
				.file_writes = true };
	static const char *const args2[] = { "--wait", NULL };
	pid_t pid2 = start_probe(&s2, args2, &out2);
	assert_true(pid2 > 0);
	close(hold2[0]);
	for (int i = 0; i < 500 && ns_of(pid2, "net") != netns.st_ino; i++)
		usleep(2000); /* until it has joined (or it never will) */
	assert_int_equal(ns_of(pid2, "net"), netns.st_ino);
	assert_int_not_equal(ns_of(pid2, "pid"), ns_of(pid, "pid"));
	close(hold[1]);
	close(hold2[1]);
	const char *o = slurp(out), *o2 = slurp(out2);
	assert_int_equal(wait_status(pid), 0);
	assert_int_equal(wait_status(pid2), 0);

	snprintf(want, sizeof(want), "%u %u %u %u %u %u", ids.uid, ids.uid, ids.uid, ids.gid,
		 ids.gid, ids.gid);
	expect(o, "ids", want);
	expect(o, "groups", "1 4343");
	expect(o2, "groups", "0");
	expect(o, "caps", "0000000000000000 0000000000000000 0000000000000000");
	expect(o, "bnd", "0");
	expect(o, "amb", "0");
	expect(o, "nnp", "1");
	snprintf(want, sizeof(want), "%d",
		 SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED);
	expect(o, "secbits", want);
	expect(o, "pdeath", "9");
	expect(o, "pid", "1");
	expect(o, "host", "bulkhead-jail");
	expect(o, "env", "0");
	expect(o, "fds", "0 1 2 3 4");
	expect(o, "stdin_null", "1");
	expect(o, "ifaces", "lo");
	expect(o2, "ifaces", "lo");
	expect(o, "rl", "0 0 4096 256 0");
	expect(o2, "rl", "0 -1 4096 256 0"); /* file_writes: files may grow */
	expect(o, "mkroot", "30");	     /* EROFS: the root itself is read-only */
	expect(o, "write /data", "0");
	expect(o, "write /ro", "30");
	/* Its root: exactly its mounts and links. */
	char *names[JAIL_MOUNTS_MAX + 2 * JAIL_LINKS_MAX];
	size_t nn = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = m[i].dst ? m[i].dst : m[i].src;
		char first[64];
		snprintf(first, sizeof(first), "%.*s", (int)strcspn(p + 1, "/"), p + 1);
		bool dup = false;
		for (size_t j = 0; j < nn; j++)
			dup |= !strcmp(names[j], first);
		if (!dup)
			names[nn++] = strdup(first);
	}
	for (size_t i = 0; i < l.nlinks; i++)
		names[nn++] = strdup(l.links[2 * i] + 1);
	qsort(names, nn, sizeof(names[0]), cmp_str);
	char root[512] = "";
	for (size_t i = 0; i < nn; i++)
		snprintf(root + strlen(root), sizeof(root) - strlen(root), "%s%s", i ? " " : "",
			 names[i]);
	expect(o, "root", root);
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	jail_ids_release(&ids);
	close(say[0]);
	assert_true(no_children_left());
}

/* A child that fails before its program runs says which step, and how. */
static void test_failures_by_step(void **state)
{
	struct jail_ids ids = JAIL_IDS_INIT;
	char err[512], *const missing[] = { "/nonexistent/prog", NULL };
	int diag[2];
	(void)state;
	need_root();
	assert_int_equal(jail_ids_acquire(&ids, NULL, err, sizeof(err)), 0);
	assert_int_equal(pipe2(diag, O_CLOEXEC), 0);
	struct jail_spec s = { .ids = &ids,
			       .empty_root = true,
			       .extra_gid = (gid_t)-1,
			       .out_fd = diag[1],
			       .diag_fd = diag[1] };
	pid_t pid = jail_spawn(missing, &s);
	close(diag[1]);
	assert_true(pid > 0);
	assert_string_equal(slurp(diag[0]), "jail: /nonexistent/prog: No such file or directory\n");
	assert_int_equal(wait_status(pid), 126);

	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	s.out_fd = s.diag_fd = null;
	assert_int_equal(jail_spawn_wait(missing, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/prog: No such file or directory");
	assert_true(no_children_left());

	char *const probe_argv[] = { self_exe, "--probe", NULL };
	struct jail_mount m = { .src = "/nonexistent/dir" };
	s.mounts = &m;
	s.nmounts = 1;
	assert_int_equal(jail_spawn_wait(probe_argv, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot open /nonexistent/dir: No such file or directory");
	assert_true(no_children_left());
	/* Optional: skipped, so the step after the root fails instead: exec, since this
	 * probe's loader is not in that root. */
	m.flags = JAIL_MOUNT_OPTIONAL;
	assert_int_equal(jail_spawn_wait(probe_argv, &s, err, sizeof(err)), -1);
	assert_string_equal(err, "exec: No such file or directory");
	close(null);
	jail_ids_release(&ids);
}

/* Not root: a user namespace that maps only the caller, whoever that is. Run as uid 4242
 * (root switches to it first), not as the overflow uid a namespace shows before its map. */
static void test_without_root(void **state)
{
	char buf[32] = "";
	int p[2], probe_out[2];
	(void)state;
	int f = open("/proc/sys/kernel/unprivileged_userns_clone", O_RDONLY);
	if (f >= 0 && read(f, buf, sizeof(buf)) > 0 && buf[0] == '0') {
		print_message("# unprivileged user namespaces are off on this host\n");
		skip();
	}
	if (f >= 0)
		close(f);
	uid_t uid = geteuid() ? geteuid() : 4242;
	gid_t gid = geteuid() ? getegid() : 4343;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(probe_out), 0);
	pid_t child = fork();
	if (child == 0) {
		struct jail_ids ids = JAIL_IDS_INIT;
		char err[256], *const argv[] = { self_exe, "--probe", NULL };
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		     setresuid(uid, uid, uid) < 0 ||
		     prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)) /* as if exec'd so */
			_exit(100);
		if (access(self_exe, X_OK) < 0)
			_exit(77);
		if (jail_ids_acquire(&ids, NULL, err, sizeof(err)) < 0 || ids.lease_fd >= 0)
			_exit(101);
		struct jail_spec s = {
			.ids = &ids, .extra_gid = (gid_t)-1, .out_fd = probe_out[1], .diag_fd = p[1]
		};
		pid_t pid = jail_spawn(argv, &s);
		_exit(pid < 0 ? 102 : wait_status(pid));
	}
	close(p[1]);
	close(probe_out[1]);
	const char *diag = slurp(p[0]), *o = slurp(probe_out[0]);
	int rc = wait_status(child);
	if (rc == 77) {
		print_message("# uid %u cannot run %s\n", uid, self_exe);
		skip();
	}
	if (rc != 0)
		fail_msg("status %d: %s", rc, diag);
	char want[128];
	snprintf(want, sizeof(want), "%u %u %u %u %u %u", uid, uid, uid, gid, gid, gid);
	expect(o, "ids", want);
	snprintf(want, sizeof(want), "%10u %10u %10u", uid, uid, 1);
	expect(o, "uid_map", want);
	expect(o, "caps", "0000000000000000 0000000000000000 0000000000000000");
	expect(o, "bnd", "0");
	expect(o, "nnp", "1");
	expect(o, "pid", "1");
	expect(o, "ifaces", "lo");
}

/* ---- virtiofsd's shape: map_root --------------------------------------------------------- */

/* A filter that refuses everything the jail's own steps do: installed last, it stops none. */
static int lock_out(void)
{
	static const char *const calls[] = { "mount",	      "open_tree",  "move_mount",
					     "mount_setattr", "umount2",    "pivot_root",
					     "setresuid",     "setresgid",  "setgroups",
					     "capset",	      "sethostname" };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = ctx ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < sizeof(calls) / sizeof(calls[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				      seccomp_syscall_resolve_name(calls[i]), 0);
	if (!rc) /* lock-down's last step */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1,
				      SCMP_A0(SCMP_CMP_EQ, PR_SET_PDEATHSIG));
	if (!rc)
		rc = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return rc;
}

static int refuse(void)
{
	return -EPERM;
}

/* The share as virtiofsd gets it: SRC owned by 4321:4322, bound over itself. */
static struct jail_spec share_spec(const struct jail_userns *owner, struct jail_mount *m,
				   const char *src, unsigned flags, int *fd)
{
	struct stat st;
	assert_int_equal(stat(src, &st), 0);
	*m = (struct jail_mount){
		.src = src, .flags = JAIL_MOUNT_SAME | flags, .dev = st.st_dev, .ino = st.st_ino
	};
	return (struct jail_spec){ .map_root = owner,
				   .mounts = m,
				   .nmounts = 1,
				   .fds = fd,
				   .nfds = 1,
				   .diag_fd = -1,
				   .seccomp = lock_out };
}

static void test_map_root(void **state)
{
	const struct jail_userns owner = { .uid = 4321, .gid = 4322 };
	struct jail_mount m;
	char share[96], stat_arg[128], want[256], err[512];
	int say[2], out;
	(void)state;
	need_root();
	dirty_launcher();
	snprintf(share, sizeof(share), "%s/share", top);
	mkdir_owned(share, 4321, 4322, 0755);
	for (int rw = 0; rw < 2; rw++) {
		assert_int_equal(pipe2(say, O_CLOEXEC), 0);
		struct jail_spec s = share_spec(&owner, &m, share, rw ? JAIL_MOUNT_RW : 0, &say[1]);
		char *argv[] = { self_exe, "--probe",	"--say", "--write",
				 share,	   "--statvfs", share,	 NULL };
		int p[2];
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		s.out_fd = s.diag_fd = p[1];
		pid_t pid = jail_spawn_wait(argv, &s, err, sizeof(err));
		close(p[1]);
		close(say[1]);
		if (pid < 0)
			fail_msg("%s", err);
		out = p[0];
		char hello[8] = "";
		assert_int_equal(read(say[0], hello, sizeof(hello)), 5);
		close(say[0]);
		const char *o = slurp(out);
		assert_int_equal(wait_status(pid), 0);
		/* The namespace's root, which is the share's owner outside. */
		expect(o, "ids", "0 0 0 0 0 0");
		snprintf(want, sizeof(want), "%10u %10u %10u", 0, 4321, 1);
		expect(o, "uid_map", want);
		expect(o, "groups", "0");
		/* Its capabilities kept (they count in its namespace only): virtiofsd's own
		 * sandbox needs them. A new user namespace's set is full. */
		snprintf(want, sizeof(want), "%d", CAP_LAST_CAP + 1);
		expect(o, "bnd", want);
		const char *caps = field(o, "caps");
		assert_non_null(caps);
		assert_memory_equal(caps, caps + 17, 16); /* effective = permitted */
		assert_true(strncmp(caps, "0000000000000000", 16) != 0);
		expect(o, "nnp", "1");
		expect(o, "seccomp", "2"); /* the caller's filter, installed last */
		expect(o, "pdeath", "9");
		expect(o, "pid", "1");
		expect(o, "env", "0");
		expect(o, "fds", "0 1 2 3");
		expect(o, "ifaces", "lo");
		snprintf(want, sizeof(want), "0 %ld", lim(RLIMIT_FSIZE)); /* no core, files grow */
		const char *rl = field(o, "rl");
		assert_non_null(rl);
		assert_memory_equal(rl, want, strlen(want));
		snprintf(stat_arg, sizeof(stat_arg), "write %s", share);
		expect(o, stat_arg, rw ? "0" : "30");
		snprintf(stat_arg, sizeof(stat_arg), "flags %s", share);
		snprintf(want, sizeof(want), "%lu",
			 (unsigned long)(ST_NOSUID | ST_NODEV | (rw ? 0 : ST_RDONLY)));
		const char *flags = field(o, stat_arg);
		assert_non_null(flags);
		assert_int_equal(strtoul(flags, NULL, 10) & (ST_NOSUID | ST_NODEV | ST_RDONLY),
				 strtoul(want, NULL, 10));
	}
	/* What it created belongs to the share's owner on the host. */
	char made[128];
	struct stat st;
	snprintf(made, sizeof(made), "%s/probe-file", share);
	assert_int_equal(stat(made, &st), 0);
	assert_int_equal(st.st_uid, 4321);
	assert_int_equal(st.st_gid, 4322);
	assert_true(no_children_left());
}

/* A ready-made mount (JAIL_MOUNT_TREE: an image session's overlay) and ids mapped to
 * themselves: the child sees the tree at its path, its files with their own owners, writes
 * there as root; the host's path stays empty (the tree never joins the host's tree). */
static void test_map_root_tree(void **state)
{
	const struct jail_userns ids = { .uid = 0, .gid = 0, .count = 65536 };
	char at[96], err[512], want[128];
	int say[2], p[2];
	(void)state;
	need_root();
	snprintf(at, sizeof(at), "%s/tree", top);
	mkdir_owned(at, 0, 0, 0755);
	int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	assert_true(fs >= 0);
	assert_int_equal(syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0), 0);
	int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	assert_true(mnt >= 0);
	close(fs);
	int tree = fcntl(mnt, F_DUPFD_CLOEXEC, JAIL_TREE_FD_MIN);
	close(mnt);
	int f = openat(tree, "owned", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(f >= 0 && fchown(f, 1000, 1000) == 0);
	close(f);
	const struct jail_mount m = { .src = at,
				      .flags = JAIL_MOUNT_RW | JAIL_MOUNT_TREE,
				      .tree_fd = tree };
	assert_int_equal(pipe2(say, O_CLOEXEC), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct jail_spec s = { .map_root = &ids,
			       .mounts = &m,
			       .nmounts = 1,
			       .fds = &say[1],
			       .nfds = 1,
			       .out_fd = p[1],
			       .diag_fd = p[1] };
	char *argv[] = { self_exe, "--probe", "--say", "--write", at, "--statvfs", at, NULL };
	pid_t pid = jail_spawn_wait(argv, &s, err, sizeof(err));
	close(p[1]);
	close(say[1]);
	if (pid < 0)
		fail_msg("%s", err);
	char hello[8] = "";
	assert_int_equal(read(say[0], hello, sizeof(hello)), 5);
	close(say[0]);
	const char *o = slurp(p[0]);
	assert_int_equal(wait_status(pid), 0);
	snprintf(want, sizeof(want), "%10u %10u %10u", 0, 0, 65536);
	expect(o, "uid_map", want);
	snprintf(want, sizeof(want), "write %s", at);
	expect(o, want, "0");
	snprintf(want, sizeof(want), "flags %s", at);
	const char *flags = field(o, want);
	assert_non_null(flags);
	assert_int_equal(strtoul(flags, NULL, 10) & (ST_NOSUID | ST_NODEV), ST_NOSUID | ST_NODEV);
	/* The probe's file is in the tree, not at the host's path. */
	struct stat st;
	assert_int_equal(fstatat(tree, "probe-file", &st, 0), 0);
	assert_int_equal(fstatat(tree, "owned", &st, 0), 0);
	assert_int_equal(st.st_uid, 1000);
	snprintf(want, sizeof(want), "%s/probe-file", at);
	assert_int_equal(access(want, F_OK), -1);
	close(tree);
	assert_true(no_children_left());
}

static void expect_refusal(struct jail_spec *s, const char *want)
{
	char err[512] = "", *const argv[] = { self_exe, "--probe", NULL };
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	s->out_fd = s->diag_fd = null;
	pid_t pid = jail_spawn_wait(argv, s, err, sizeof(err));
	close(null);
	if (pid >= 0) {
		wait_status(pid);
		fail_msg("started, where \"%s\" was expected", want);
	}
	if (strcmp(err, want))
		fail_msg("\"%s\", not \"%s\"", err, want);
	assert_true(no_children_left());
}

/* The share is still the directory judged, reachable by its owner, alone; else no start. */
static void test_map_root_refusals(void **state)
{
	const struct jail_userns owner = { .uid = 4321, .gid = 4322 };
	char share[96], link[96], closed[96], inner[128], sub[128], want[512];
	struct jail_mount m;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	(void)state;
	need_root();
	snprintf(share, sizeof(share), "%s/share", top);
	mkdir_owned(share, 4321, 4322, 0755);
	struct jail_spec s = share_spec(&owner, &m, share, 0, &fd);
	m.ino++; /* another directory now stands at that path */
	snprintf(want, sizeof(want), "%s changed after it was checked: Stale file handle", share);
	expect_refusal(&s, want);

	snprintf(link, sizeof(link), "%s/link", top);
	assert_int_equal(symlink(share, link), 0);
	s = share_spec(&owner, &m, link, 0, &fd);
	snprintf(want, sizeof(want), "uid 4321 cannot open %s: Too many levels of symbolic links",
		 link);
	expect_refusal(&s, want);

	snprintf(closed, sizeof(closed), "%s/closed", top);
	snprintf(inner, sizeof(inner), "%s/inner", closed);
	mkdir_owned(closed, 0, 0, 0700);
	mkdir_owned(inner, 4321, 4322, 0755);
	s = share_spec(&owner, &m, inner, 0, &fd);
	snprintf(want, sizeof(want), "uid 4321 cannot open %s: Permission denied", inner);
	expect_refusal(&s, want);

	/* Reachable, but not the owner's to read: said here, not left to the program. */
	snprintf(inner, sizeof(inner), "%s/private", top);
	mkdir_owned(inner, 0, 0, 0700);
	s = share_spec(&owner, &m, inner, 0, &fd);
	snprintf(want, sizeof(want), "uid 4321 cannot open %s: Permission denied", inner);
	expect_refusal(&s, want);

	s = share_spec(&owner, &m, share, 0, &fd);
	s.seccomp = refuse;
	expect_refusal(&s, "seccomp filter: Operation not permitted");

	const struct jail_userns nobody = { .uid = (uid_t)-1, .gid = (gid_t)-1 };
	s = share_spec(&nobody, &m, share, 0, &fd);
	expect_refusal(&s, "cannot map uid 4294967295 into its user namespace: Invalid argument");

	/* A mount below the share: the copy of the share alone is refused in a user namespace
	 * (what is below would be exposed or hidden). Made in a mount namespace of ours. */
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(sub, sizeof(sub), "%s/sub", share);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mount("t", sub, "tmpfs", 0, "size=4k"), 0);
	s = share_spec(&owner, &m, share, 0, &fd);
	snprintf(want, sizeof(want), "mount %s: Invalid argument", share);
	expect_refusal(&s, want);
	umount2(sub, MNT_DETACH);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--probe"))
		probe(argc, argv);
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	alarm(120); /* a test that hangs fails (SIGALRM) rather than stalling the suite */
#define T(f) cmocka_unit_test_setup_teardown(f, make_top, remove_top)
	const struct CMUnitTest tests[] = {
		T(test_session_jail), T(test_failures_by_step), T(test_without_root),
		T(test_map_root),     T(test_map_root_tree),	T(test_map_root_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
