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
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGWINCH);
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
