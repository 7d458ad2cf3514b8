/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_proc.c: process plumbing (jail/proc.c): a stopped helper takes its whole
 * process group and what it left behind with it; the session's last reap leaves no child of
 * any kind; a helper's set-up (signals, group, parent-death signal, stdio, cgroup); a helper
 * started with its listening socket and nothing else; the session's signals on a signalfd. */
#include "jail/cgroup.h"
#include "jail/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* Gone for good: neither running nor a zombie waiting for us. */
static bool gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

static bool no_children_left(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static void write_pid(int fd, pid_t pid)
{
	if (write(fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		_exit(1);
}

/* A helper as the launcher starts one (its own group), with a child in its group and an
 * orphan of its group (its parent gone, so adopted by us): proc_stop leaves none of them. */
static void test_stop_takes_group_and_orphans(void **state)
{
	int p[2], devnull = open("/dev/null", O_WRONLY);
	pid_t helper, child, orphan;
	(void)state;
	proc_adopt_orphans();
	assert_int_equal(pipe(p), 0);
	helper = fork();
	if (helper == 0) {
		if (proc_child_setup(devnull, devnull) < 0)
			_exit(1);
		pid_t c = fork();
		if (c == 0) {
			sleep(60); /* killed long before, unless the code under test fails */
			_exit(0);
		}
		write_pid(p[1], c);
		pid_t mid = fork();
		if (mid == 0) {
			pid_t o = fork();
			if (o == 0) {
				sleep(60); /* killed long before, unless the code under test fails
					    */
				_exit(0);
			}
			write_pid(p[1], o);
			_exit(0); /* o is an orphan now */
		}
		waitpid(mid, NULL, 0);
		sleep(60); /* killed long before, unless the code under test fails */
		_exit(0);
	}
	assert_int_equal(read(p[0], &child, sizeof(child)), sizeof(child));
	assert_int_equal(read(p[0], &orphan, sizeof(orphan)), sizeof(orphan));
	assert_false(gone(child));
	assert_false(gone(orphan));
	pid_t pid = helper;
	proc_stop(&pid);
	assert_int_equal(pid, 0);
	assert_true(gone(helper));
	assert_true(gone(child));
	assert_true(gone(orphan));
	assert_true(no_children_left());
	proc_stop(&pid); /* 0: nothing (and above all, no kill(0) of our own group) */
	close(p[0]);
	close(p[1]);
	close(devnull);
}

/* The session's last step: every child, whatever its group or state, killed and reaped. */
static void test_reap_all(void **state)
{
	pid_t kids[4];
	int p[2];
	(void)state;
	proc_adopt_orphans();
	assert_int_equal(pipe(p), 0);
	if ((kids[0] = fork()) == 0) { /* a session of its own */
		setsid();
		sleep(60); /* killed long before, unless the code under test fails */
		_exit(0);
	}
	if ((kids[1] = fork()) == 0) /* already dead: a zombie */
		_exit(3);
	if ((kids[2] = fork()) == 0) { /* leaves an orphan behind */
		pid_t o = fork();
		if (o == 0) {
			setpgid(0, 0);
			sleep(60); /* killed long before, unless the code under test fails */
			_exit(0);
		}
		write_pid(p[1], o);
		_exit(0);
	}
	assert_int_equal(read(p[0], &kids[3], sizeof(pid_t)), sizeof(pid_t));
	while (!gone(kids[2]) && waitpid(kids[2], NULL, WNOHANG) == 0)
		usleep(1000); /* until its orphan is ours */
	usleep(20000);
	assert_true(proc_reap_all() >= 3);
	for (int i = 0; i < 4; i++)
		assert_true(gone(kids[i]));
	assert_true(no_children_left());
	assert_int_equal(proc_reap_all(), 0);
	close(p[0]);
	close(p[1]);
}

/* What a helper starts with, seen from inside it, whatever the launcher had blocked or
 * ignored. */
static void test_child_setup(void **state)
{
	char dir[] = "/tmp/bulkhead-proc.XXXXXX", procs[64], buf[64];
	struct session_cgroup cg = { .version = 1, .n = 1 };
	int out[2], diag[2], st;
	sigset_t block, old;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cg.dirs[0], sizeof(cg.dirs[0]), "%s", dir);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	FILE *f = fopen(procs, "w");
	assert_non_null(f);
	fclose(f);
	proc_set_cgroup(&cg);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(diag), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGPIPE, SIG_IGN);
	pid_t pid = fork();
	if (pid == 0) {
		struct stat in, null;
		sigset_t now;
		int sig = 0, bad = 0;
		if (proc_child_setup(out[1], diag[1]) < 0)
			_exit(100);
		sigprocmask(SIG_SETMASK, NULL, &now);
		bad |= sigismember(&now, SIGTERM) << 0;
		bad |= (signal(SIGPIPE, SIG_DFL) != SIG_DFL) << 1;
		bad |= (getpgrp() != getpid()) << 2;
		bad |= (prctl(PR_GET_PDEATHSIG, &sig) < 0 || sig != SIGKILL) << 3;
		bad |= (fstat(0, &in) < 0 || stat("/dev/null", &null) < 0 ||
			in.st_rdev != null.st_rdev)
		       << 4;
		bad |= (write(1, "out", 3) != 3) << 5;
		bad |= (write(2, "diag", 4) != 4) << 6;
		_exit(bad);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGPIPE, SIG_DFL);
	close(out[1]);
	close(diag[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(out[0], buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "out", 3);
	assert_int_equal(read(diag[0], buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "diag", 4);
	/* It joined the session's cgroup, before anything else. */
	f = fopen(procs, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_int_equal(atoi(buf), pid);
	/* A cgroup it cannot join: set-up fails rather than run unbounded. */
	unlink(procs);
	if ((pid = fork()) == 0)
		_exit(proc_child_setup(out[0], out[0]) < 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 0);
	proc_set_cgroup(NULL);
	close(out[0]);
	close(diag[0]);
	rmdir(dir);
}

/* A helper without the jail: its listening socket as descriptor 3, nothing else inherited,
 * its stdout and stderr on the diagnostics descriptor. */
static void test_spawn_listener(void **state)
{
	char dir[] = "/tmp/bulkhead-proc.XXXXXX", buf[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int diag[2], st;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(pipe2(diag, O_CLOEXEC), 0);
	int stray = dup2(diag[1], 20); /* inheritable, and not the helper's */
	assert_int_equal(stray, 20);
	char *const argv[] = {
		"/bin/sh", "-c",
		"[ -S /proc/self/fd/3 ] || exit 3; [ -e /proc/self/fd/20 ] && exit 4; "
		"[ -e /proc/self/fd/4 ] && exit 5; echo out; echo diag >&2; exit 7",
		NULL
	};
	pid_t pid = proc_spawn_listener(argv, lfd, -1, diag[1]);
	assert_true(pid > 0);
	close(diag[1]);
	close(stray);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	ssize_t n = read(diag[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "out\ndiag\n");
	/* A program that is not there: 127 and why, on the diagnostics descriptor. */
	assert_int_equal(pipe2(diag, O_CLOEXEC), 0);
	char *const missing[] = { "/nonexistent/helper", NULL };
	pid = proc_spawn_listener(missing, lfd, -1, diag[1]);
	close(diag[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 127);
	n = read(diag[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	assert_string_equal(buf, "exec /nonexistent/helper: No such file or directory\n");
	close(diag[0]);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* A helper forked ahead runs its program later with the listening socket as 3 and the extra
 * descriptor as 4, nothing else of ours; dropped unused, it ends and is reaped. */
static void test_spawner(void **state)
{
	char dir[] = "/tmp/bulkhead-proc.XXXXXX", buf[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct proc_spawner sp;
	int diag[2], extra[2], st;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(pipe2(diag, O_CLOEXEC), 0);
	assert_int_equal(pipe2(extra, O_CLOEXEC), 0);
	assert_int_equal(proc_spawner_new(&sp, diag[1]), 0);
	int stray = dup2(diag[1], 20); /* made after the fork: never the helper's */
	assert_int_equal(stray, 20);
	assert_int_equal(write(extra[1], "x", 1), 1);
	close(extra[1]);
	char *const argv[] = { "/bin/sh", "-c",
			       "[ -S /proc/self/fd/3 ] || exit 3; [ -e /proc/self/fd/20 ] && exit 4; "
			       "[ \"$(cat <&4)\" = x ] || exit 5; [ -e /proc/self/fd/5 ] && exit 6; "
			       "echo diag >&2; exit 7",
			       NULL };
	pid_t pid = sp.pid;
	assert_int_equal(proc_spawner_exec(&sp, argv, lfd, extra[0]), 0);
	assert_int_equal(sp.sock, -1);
	close(extra[0]);
	close(diag[1]);
	close(stray);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	ssize_t n = read(diag[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "diag\n");
	close(diag[0]);
	/* Dropped unused: it ends, reaped. */
	assert_int_equal(proc_spawner_new(&sp, 2), 0);
	pid = sp.pid;
	proc_spawner_drop(&sp);
	assert_int_equal(sp.pid, 0);
	assert_int_equal(waitpid(pid, &st, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

static void test_signalfd(void **state)
{
	struct signalfd_siginfo si;
	sigset_t old, now;
	(void)state;
	sigprocmask(SIG_SETMASK, NULL, &old);
	int fd = proc_signalfd();
	assert_true(fd >= 0);
	sigprocmask(SIG_SETMASK, NULL, &now);
	const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH };
	for (size_t i = 0; i < 4; i++)
		assert_true(sigismember(&now, sigs[i]));
	assert_true(signal(SIGPIPE, SIG_DFL) == SIG_IGN);
	raise(SIGTERM); /* blocked: waits on the descriptor instead of ending us */
	assert_int_equal(read(fd, &si, sizeof(si)), sizeof(si));
	assert_int_equal(si.ssi_signo, SIGTERM);
	close(fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
	alarm(60); /* a test that hangs fails (SIGALRM) rather than stalling the suite */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_takes_group_and_orphans),
		cmocka_unit_test(test_reap_all),
		cmocka_unit_test(test_child_setup),
		cmocka_unit_test(test_spawn_listener),
		cmocka_unit_test(test_spawner),
		cmocka_unit_test(test_signalfd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
