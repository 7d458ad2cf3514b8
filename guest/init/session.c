/* guest/init/session.c: read the host's command from the kernel command line,
 * run it, and frame its stdout/stderr and status to the host. */
#include "guest/init/exec.h"
#include "guest/init/init.h"
#include "lib/boot_args.h"
#include "lib/console_frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Finds "name<hex>" among the space-separated parameters; returns its length. */
static size_t find_param(const char *cmdline, const char *name, const char **val)
{
	size_t nlen = strlen(name);
	for (const char *p = cmdline; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t tlen = strcspn(p, " \n");
		if (tlen > nlen && strncmp(p, name, nlen) == 0) {
			*val = p + nlen;
			return tlen - nlen;
		}
		p += tlen;
	}
	return 0;
}

/* True when `token` is one whole space-separated parameter. */
static bool has_token(const char *cmdline, const char *token)
{
	size_t n = strlen(token);
	for (const char *p = cmdline; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t tlen = strcspn(p, " \n");
		if (tlen == n && strncmp(p, token, n) == 0)
			return true;
		p += tlen;
	}
	return false;
}

int session_from_cmdline(struct session *s)
{
	char cmdline[BOOT_ARGS_CMDLINE_MAX + 1];
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	cmdline[n] = '\0';

	const char *val;
	s->agent = has_token(cmdline, BOOT_ARGS_AGENT);
	s->argv = NULL;
	size_t len = find_param(cmdline, BOOT_ARGS_ARGV, &val);
	if (!s->agent &&
	    (len == 0 || boot_args_decode(val, len, &s->argv) < 1 || s->argv[0][0] == '\0'))
		return -EINVAL;
	s->env = NULL;
	len = find_param(cmdline, BOOT_ARGS_ENV, &val);
	if (len && boot_args_decode(val, len, &s->env) < 0)
		return -EINVAL;
	s->cwd = "/";
	s->work_mode = 0;
	len = find_param(cmdline, BOOT_ARGS_WORK, &val);
	if (len == 2 && (strncmp(val, "rw", 2) == 0 || strncmp(val, "ro", 2) == 0))
		s->work_mode = val[1];
	else if (len)
		return -EINVAL;
	return 0;
}

int session_mount_work(struct session *s)
{
	if (!s->work_mode)
		return 0;
	if (mkdir("/work", 0755) < 0 && errno != EEXIST)
		return -errno;
	/* The read-only flag here only gives early, clear errors; the host enforces :ro
	 * whatever the guest does with its mounts. */
	unsigned long flags = MS_NOSUID | MS_NODEV | (s->work_mode == 'o' ? MS_RDONLY : 0);
	if (mount("work", "/work", "virtiofs", flags, NULL) < 0)
		return -errno;
	s->cwd = "/work";
	return 0;
}

/* Copies what is in fd now to the console as `type` frames; returns 0 at EOF. */
static int pump(int fd, int type, int drain)
{
	char buf[CFRAME_MAX_PAYLOAD];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n <= 0)
			return 0;
		console_send(type, buf, (size_t)n);
		if (!drain)
			return 1;
	}
}

int session_run(const struct session *s, int *exit_code)
{
	sigset_t chld, oldmask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &oldmask);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	char **env = exec_build_env(s->env, false);
	*exit_code = -1;
	if (sfd < 0 || !env) {
		console_error("bulkhead-init: cannot set up the command: %s", strerror(errno));
		return -1;
	}
	struct exec_spec spec = { .argv = (const char *const *)s->argv,
				  .env = (const char *const *)env,
				  .cwd = s->cwd };
	struct exec_proc proc;
	int rc = exec_spawn(&spec, &oldmask, &proc);
	if (rc < 0) {
		console_error("bulkhead-init: cannot start the command: %s", strerror(-rc));
		return -1;
	}

	int status = -1;
	struct pollfd pfd[3] = {
		{ .fd = proc.out_fd, .events = POLLIN },
		{ .fd = proc.err_fd, .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};
	const int types[2] = { CFRAME_STDOUT, CFRAME_STDERR };
	while (status == -1) {
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd >= 0 && pfd[i].revents && !pump(pfd[i].fd, types[i], 0)) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
		if (pfd[2].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			int ws;
			pid_t w;
			while ((w = waitpid(-1, &ws, WNOHANG)) > 0)
				if (w == proc.pid)
					status = ws;
		}
	}
	/* The command is gone; what it wrote before exiting is in the pipes. Take
	 * that, but do not wait for background processes that still hold them. */
	for (int i = 0; i < 2; i++) {
		if (pfd[i].fd < 0)
			continue;
		fcntl(pfd[i].fd, F_SETFL, O_NONBLOCK);
		pump(pfd[i].fd, types[i], 1);
		close(pfd[i].fd);
	}
	close(sfd);
	free(env);

	if (rc > 0) {
		char msg[512];
		int m = snprintf(msg, sizeof(msg), "bulkhead: %s: %s\n", s->argv[0], strerror(rc));
		console_send(CFRAME_STDERR, msg,
			     (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1);
		*exit_code = exec_failure_code(rc);
		return -1;
	}
	return status;
}
