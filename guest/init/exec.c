/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/exec.c: start a command with pipes or a pseudo-terminal — shared by
 * the one-shot session (console frames) and the vsock exec agent. */
#include "guest/init/exec.h"
#include "guest/init/init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"HOSTNAME=bulkhead",
	/* Everything leaves through the broker (proxy_shim.c); programs that honour
	 * neither spelling simply have no network. */
	"HTTP_PROXY=http://127.0.0.1:3128",
	"HTTPS_PROXY=http://127.0.0.1:3128",
	"http_proxy=http://127.0.0.1:3128",
	"https_proxy=http://127.0.0.1:3128",
	/* The session CA's bundle (proxy_ca.c), for tools that do not read the system path. */
	"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
	"CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
	"GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt",
	"REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
	"NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
	"PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
	NULL,
};

/* In an image, runtimes that ignore HTTPS_PROXY are taught it (guest/runtime/). */
static const char *const image_env[] = {
	"NODE_OPTIONS=--require=" GUEST_RUNTIME_IN_IMAGE "/node-proxy.js",
	NULL,
};

char **exec_build_env(char *const *extra, bool tty)
{
	size_t nb = sizeof(base_env) / sizeof(base_env[0]) - 1, ne = 0;
	size_t ni = guest_root.dir ? sizeof(image_env) / sizeof(image_env[0]) - 1 : 0;
	while (extra && extra[ne])
		ne++;
	char **env = calloc(nb + ni + ne + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < nb + ni; i++) {
		const char *b = i < nb ? base_env[i] : image_env[i - nb];
		size_t klen = strcspn(b, "=") + 1;
		bool overridden = false;
		for (size_t j = 0; j < ne; j++)
			overridden |= strncmp(extra[j], b, klen) == 0;
		if (!overridden)
			env[n++] = (char *)b;
	}
	/* A terminal needs a TERM; without one there is none, as with docker. */
	bool has_term = false;
	for (size_t j = 0; j < ne; j++)
		has_term |= strncmp(extra[j], "TERM=", 5) == 0;
	if (tty && !has_term)
		env[n++] = "TERM=xterm";
	for (size_t j = 0; j < ne; j++)
		env[n++] = extra[j];
	return env;
}

void exec_close(struct exec_proc *p)
{
	int *fds[] = { &p->in_fd, &p->out_fd, &p->err_fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int exec_failure_code(int err)
{
	return err == ENOENT ? 127 : 126;
}

static void child(const struct exec_spec *s, const sigset_t *mask, int in, int out, int err,
		  const char *pts, int status)
{
	sigprocmask(SIG_SETMASK, mask, NULL);
	setsid();
	if (pts) {
		int fd = open(pts, O_RDWR);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0)
			goto fail;
		in = out = err = fd;
	} else if (in < 0) {
		in = open("/dev/null", O_RDONLY);
		if (in < 0)
			goto fail;
	}
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	/* An image's command: in its root, as its user (image.c), then where it was asked. */
	if (guest_root.dir &&
	    (chroot(guest_root.dir) < 0 || setgroups(guest_root.ngids, guest_root.gids) < 0 ||
	     setgid(guest_root.gid) < 0 || setuid(guest_root.uid) < 0))
		goto fail;
	if (chdir(s->cwd) < 0)
		goto fail;
	environ = (char **)s->env; /* execvp searches the command's PATH, not ours */
	execvp(s->argv[0], (char *const *)s->argv);
fail:;
	int e = errno;
	if (write(status, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int exec_spawn(const struct exec_spec *s, const sigset_t *child_mask, struct exec_proc *p)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, st[2] = { -1, -1 };
	int master = -1, rc = 0;
	const char *pts = NULL;
	p->pid = -1;
	p->in_fd = p->out_fd = p->err_fd = -1;

	if (pipe2(st, O_CLOEXEC) < 0)
		return -errno;
	if (s->tty) {
		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    !(pts = ptsname(master)))
			goto fail_errno;
		struct winsize ws = { .ws_row = s->rows ? s->rows : 24,
				      .ws_col = s->cols ? s->cols : 80 };
		ioctl(master, TIOCSWINSZ, &ws);
	} else {
		if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
			goto fail_errno;
		if (s->stdin_pipe && pipe2(in, O_CLOEXEC) < 0)
			goto fail_errno;
	}
	p->pid = fork();
	if (p->pid < 0)
		goto fail_errno;
	if (p->pid == 0)
		child(s, child_mask, in[0], out[1], err[1], pts, st[1]);

	close(st[1]);
	st[1] = -1;
	int e;
	if (read(st[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
		rc = e; /* the child exits 127; the caller reaps it */
	close(st[0]);
	if (s->tty) {
		p->out_fd = master;
		p->in_fd = s->stdin_pipe ? dup(master) : -1;
		if (p->in_fd >= 0)
			fcntl(p->in_fd, F_SETFD, FD_CLOEXEC);
	} else {
		close(out[1]);
		close(err[1]);
		p->out_fd = out[0];
		p->err_fd = err[0];
		if (in[0] >= 0) {
			close(in[0]);
			p->in_fd = in[1];
		}
	}
	if (rc > 0)
		exec_close(p);
	return rc;

fail_errno:
	rc = -errno;
	int *pairs[] = { in, out, err, st };
	for (size_t j = 0; j < sizeof(pairs) / sizeof(pairs[0]); j++)
		for (int i = 0; i < 2; i++)
			if (pairs[j][i] >= 0)
				close(pairs[j][i]);
	if (master >= 0)
		close(master);
	return rc;
}
