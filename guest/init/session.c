/* guest/init/session.c: read the host's command from the kernel command line,
 * run it, and frame its stdout/stderr and status to the host. */
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

extern char **environ;

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"HOSTNAME=bulkhead",
	NULL,
};

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
	size_t len = find_param(cmdline, BOOT_ARGS_ARGV, &val);
	if (len == 0 || boot_args_decode(val, len, &s->argv) < 1 || s->argv[0][0] == '\0')
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

/* Base environment overlaid with the host's KEY=VALUE strings (same key wins). */
static char **build_env(char **extra)
{
	size_t nb = sizeof(base_env) / sizeof(base_env[0]) - 1, ne = 0;
	while (extra && extra[ne])
		ne++;
	char **env = calloc(nb + ne + 1, sizeof(*env));
	if (!env)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < nb; i++) {
		size_t klen = strcspn(base_env[i], "=") + 1;
		int overridden = 0;
		for (size_t j = 0; j < ne; j++)
			overridden |= strncmp(extra[j], base_env[i], klen) == 0;
		if (!overridden)
			env[n++] = (char *)base_env[i];
	}
	for (size_t j = 0; j < ne; j++)
		env[n++] = extra[j];
	return env;
}

static void child_exec(const struct session *s, char **env, int out, int err, int status,
		       const sigset_t *oldmask)
{
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	setsid();
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    chdir(s->cwd) < 0)
		goto fail;
	environ = env; /* execvp searches the command's PATH, not init's */
	execvp(s->argv[0], s->argv);
fail:;
	int e = errno;
	if (write(status, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
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
	int out[2], err[2], st[2];
	sigset_t chld, oldmask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &oldmask);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	char **env = build_env(s->env);
	if (sfd < 0 || !env || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
	    pipe2(st, O_CLOEXEC)) {
		console_error("bulkhead-init: cannot set up the command: %s", strerror(errno));
		*exit_code = -1;
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0)
		child_exec(s, env, out[1], err[1], st[1], &oldmask);
	close(out[1]);
	close(err[1]);
	close(st[1]);
	if (pid < 0) {
		console_error("bulkhead-init: fork: %s", strerror(errno));
		*exit_code = -1;
		return -1;
	}
	int exec_errno = 0;
	ssize_t n = read(st[0], &exec_errno, sizeof(exec_errno));
	close(st[0]);

	int status = -1;
	struct pollfd pfd[3] = {
		{ .fd = out[0], .events = POLLIN },
		{ .fd = err[0], .events = POLLIN },
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
				if (w == pid)
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

	if (n == (ssize_t)sizeof(exec_errno)) {
		char msg[512];
		int m = snprintf(msg, sizeof(msg), "bulkhead: %s: %s\n", s->argv[0],
				 strerror(exec_errno));
		console_send(CFRAME_STDERR, msg,
			     (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1);
		*exit_code = exec_errno == ENOENT ? 127 : 126;
		return -1;
	}
	return status;
}
