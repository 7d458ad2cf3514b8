/* SPDX-License-Identifier: Apache-2.0 */
/* jail/proc.c: session signals, helper-process set-up, listening sockets. */
#include "jail/proc.h"
#include "jail/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int proc_signalfd(void)
{
	return proc_signalfd_and(NULL, 0);
}

int proc_signalfd_and(const int *more, size_t n)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGWINCH);
	for (size_t i = 0; i < n; i++)
		sigaddset(&mask, more[i]);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC);
}

int proc_signalfd_all(void)
{
	static const int own[] = { SIGKILL, SIGSTOP, SIGCHLD, SIGPIPE, SIGSEGV,
				   SIGBUS,  SIGILL,  SIGFPE,  SIGTRAP, SIGSYS };
	sigset_t mask;
	sigemptyset(&mask);
	for (int sig = 1; sig <= SIGRTMAX; sig++)
		if (sig < 32 || sig >= SIGRTMIN)
			sigaddset(&mask, sig);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		sigdelset(&mask, own[i]);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC);
}

static const struct session_cgroup *session_cg;

void proc_set_cgroup(const struct session_cgroup *cg)
{
	session_cg = cg;
}

int proc_child_setup(int out_fd, int diag_fd)
{
	/* Into the session's cgroups first: everything it does from here on counts. */
	if (session_cg && cgroup_join_self(session_cg) < 0)
		return -1;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(diag_fd, 2) < 0)
		return -1;
	if (devnull > 2)
		close(devnull);
	return 0;
}

pid_t proc_spawn_listener(char *const argv[], int lfd, int extra_fd, int diag_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	/* Both are above 2 (0-2 are ours): extra_fd goes out of the way first, so that neither
	 * dup2 closes the other. */
	int hi = extra_fd >= 0 ? fcntl(extra_fd, F_DUPFD, 10) : -1;
	if (proc_child_setup(diag_fd, diag_fd) < 0 || (extra_fd >= 0 && hi < 0) ||
	    (lfd != 3 && dup2(lfd, 3) < 0) || fcntl(3, F_SETFD, 0) < 0 ||
	    (hi >= 0 && dup2(hi, 4) < 0))
		_exit(126);
	close_range(hi >= 0 ? 5 : 4, ~0U, 0);
	execv(argv[0], argv);
	dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

#define SPAWNER_ARGS  32
#define SPAWNER_BYTES 8192

/* The spawner's side: one message (argv, NUL-separated, with its descriptors), then exec.
 * Nothing here allocates: we are a fork of a process that may hold locks. */
static void spawner_wait(int sock)
{
	static char buf[SPAWNER_BYTES + 1];
	char *argv[SPAWNER_ARGS + 1];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cbuf;
	struct iovec iov = { buf, SPAWNER_BYTES };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
			    .msg_controllen = sizeof(cbuf.b) };
	ssize_t n;
	while ((n = recvmsg(sock, &m, 0)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		_exit(0); /* dropped unused */
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	int fds[2] = { -1, -1 }, nfd = 0;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)(nfd > 2 ? 2 : nfd) * sizeof(int));
	}
	buf[n] = '\0';
	size_t argc = 0;
	for (char *a = buf; a < buf + n && argc < SPAWNER_ARGS; a += strlen(a) + 1)
		argv[argc++] = a;
	argv[argc] = NULL;
	/* Out of the way first, so that neither dup2 closes the other. */
	int hi0 = fds[0] >= 0 ? fcntl(fds[0], F_DUPFD, 10) : -1;
	int hi1 = fds[1] >= 0 ? fcntl(fds[1], F_DUPFD, 10) : -1;
	if (!argc || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfd < 1 || nfd > 2 || hi0 < 0 ||
	    dup2(hi0, 3) < 0 || (hi1 >= 0 && dup2(hi1, 4) < 0))
		_exit(126);
	close_range(hi1 >= 0 ? 5 : 4, ~0U, 0);
	execv(argv[0], argv);
	dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int proc_spawner_new(struct proc_spawner *sp, int diag_fd)
{
	int sv[2];
	sp->pid = 0;
	sp->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0) {
		/* Nothing of ours but its socket while it waits: a pipe end held here would keep
		 * its reader from seeing the end. */
		if (proc_child_setup(diag_fd, diag_fd) < 0 || dup2(sv[1], 3) < 0)
			_exit(126);
		close_range(4, ~0U, 0);
		spawner_wait(3);
	}
	close(sv[1]);
	sp->pid = pid;
	sp->sock = sv[0];
	return 0;
}

int proc_spawner_exec(struct proc_spawner *sp, char *const argv[], int lfd, int extra_fd)
{
	char buf[SPAWNER_BYTES];
	size_t len = 0, argc = 0;
	for (; argv[argc]; argc++) {
		size_t n = strlen(argv[argc]) + 1;
		if (argc == SPAWNER_ARGS || len + n > sizeof(buf))
			return -E2BIG;
		memcpy(buf + len, argv[argc], n);
		len += n;
	}
	int fds[2] = { lfd, extra_fd }, nfd = extra_fd >= 0 ? 2 : 1;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
			    .msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)nfd * sizeof(int));
	if (sp->sock < 0 || sendmsg(sp->sock, &m, MSG_NOSIGNAL) != (ssize_t)len)
		return sp->sock < 0 ? -EBADF : -errno;
	close(sp->sock);
	sp->sock = -1;
	return 0;
}

void proc_spawner_drop(struct proc_spawner *sp)
{
	if (sp->sock >= 0) {
		close(sp->sock);
		sp->sock = -1;
		proc_stop(&sp->pid); /* it never ran a program: ours to reap */
	}
	sp->pid = 0;
}

void proc_adopt_orphans(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void reap(pid_t which)
{
	for (;;) {
		pid_t w = waitpid(which, NULL, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || which > 0)
			return;
	}
}

void proc_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(-*pid, SIGKILL); /* its process group, when it leads one */
	kill(*pid, SIGKILL);
	reap(*pid);
	/* Its group's orphans became ours as it died: reap them too, so nothing is left. */
	reap(-*pid);
	*pid = 0;
}

int proc_reap_all(void)
{
	char path[64];
	int found = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)syscall(SYS_gettid));
	for (int round = 0; round < 64; round++) {
		char list[4096];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, list, sizeof(list) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			break;
		list[n] = '\0';
		for (char *p = list, *end; *p; p = end) {
			long child = strtol(p, &end, 10);
			if (end == p)
				break;
			if (child > 1) {
				kill((pid_t)child, SIGKILL);
				reap((pid_t)child);
				found++;
			}
		}
	}
	/* Zombies the list may not show any more (and hosts without the list). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		found++;
	return found;
}

unsigned long long proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the name (which may hold anything): " S ppid ..."; field 22 is the start time. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0; /* gone, or a zombie: its command is over */
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}
