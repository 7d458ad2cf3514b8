/* SPDX-License-Identifier: Apache-2.0 */
/* oci/exec.c: `exec` — one more command in a container's guest, through the session's exec
 * agent (the same path as `bulkhead exec`). With --detach, a process of ours relays it and its
 * pid goes to --pid-file once the guest took the command: the caller adopts it and its exit
 * status is the command's; every signal it gets goes to the command. */
#include "session/exec_client.h"
#include "session/rundir.h"
#include "jail/proc.h"
#include "oci/bundle.h"
#include "oci/state.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define EXEC_HANDSHAKE_MS 10000

struct exec_opts {
	const char *process, *pid_file, *console, *id;
	bool detach, tty;
	char **argv;
};

static int exec_opts(const struct oci_globals *g, int argc, char **argv, struct exec_opts *o)
{
	static const struct option longopts[] = {
		{ "process", required_argument, NULL, 'p' },
		{ "pid-file", required_argument, NULL, 'P' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "detach", no_argument, NULL, 'd' },
		{ "tty", no_argument, NULL, 't' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ 0 },
	};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+p:dt", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			o->process = optarg;
			break;
		case 'P':
			o->pid_file = optarg;
			break;
		case 'c':
			o->console = optarg;
			break;
		case 'd':
			o->detach = true;
			break;
		case 't':
			o->tty = true;
			break;
		case 'f':
			if (strcmp(optarg, "0") == 0)
				break;
			/* fall through */
		default:
			oci_error(g, "exec: option '%s' is not supported (see docs/OCI.md)",
				  argv[optind - 1]);
			return -1;
		}
	}
	if (optind >= argc || (!o->process && optind + 1 >= argc)) {
		oci_error(g, "usage: exec [--process FILE] [--detach] [--pid-file F] "
			     "[--console-socket S] ID [CMD...]");
		return -1;
	}
	o->id = argv[optind];
	o->argv = argv + optind + 1;
	return 0;
}

/* The process to run: --process FILE, or CMD with the container's environment and user. */
static int exec_process(struct exec_opts *o, struct oci_container *c, json_t **doc,
			struct oci_process *p, char *err, size_t errlen)
{
	if (o->process)
		return oci_process_load(o->process, doc, p, err, errlen);
	*doc = json_incref(c->state); /* p's strings, past the state's close */
	json_t *cfg = json_object_get(c->state, "process");
	if (oci_process_parse(cfg, p, err, errlen) < 0)
		return -1;
	size_t n = 0;
	while (o->argv[n] && n < IMAGE_CMD_MAX)
		n++;
	if (o->argv[n]) {
		snprintf(err, errlen, "too many arguments");
		return -1;
	}
	memcpy(p->cfg.cmd, o->argv, (n + 1) * sizeof(char *));
	p->cfg.ncmd = n;
	p->terminal = o->tty;
	return 0;
}

/* The guest runs every command as the container's user (bulkhead.image=): another is refused
 * rather than silently changed. */
static int same_user(const struct oci_container *c, const struct oci_process *p, char *err,
		     size_t errlen)
{
	json_t *u = json_object_get(json_object_get(c->state, "process"), "user");
	json_int_t uid = json_integer_value(json_object_get(u, "uid"));
	json_int_t gid = json_integer_value(json_object_get(u, "gid"));
	if ((json_int_t)p->cfg.uid == uid && (json_int_t)p->cfg.gid == gid)
		return 0;
	snprintf(err, errlen,
		 "exec as %u:%u: the guest runs commands as the container's user (%lld:%lld) only",
		 (unsigned)p->cfg.uid, (unsigned)p->cfg.gid, (long long)uid, (long long)gid);
	return -1;
}

/* Relays the command; READY_FD (>= 0) gets one byte once the guest has taken it. Returns the
 * command's status, or EXIT_BULKHEAD-like 125 with the reason on stderr. */
static int relay(const char *uds, const struct oci_process *p, int ready_fd)
{
	static struct exec_client ec;
	struct exec_client *c = &ec;
	int sfd = proc_signalfd_all();
	c->in_fd = 0;
	c->out_fd = 1;
	c->err_fd = 2;
	c->signal_process = true; /* as kill(2) on the process the caller knows */
	struct winsize ws = { .ws_row = (unsigned short)p->rows,
			      .ws_col = (unsigned short)p->cols };
	if (p->terminal) {
		struct termios t;
		ioctl(0, TIOCGWINSZ, &ws);
		if (tcgetattr(0, &t) == 0) {
			cfmakeraw(&t);
			tcsetattr(0, TCSANOW, &t);
		}
	}
	uint32_t flags = AGENT_EXEC_STDIN | (p->terminal ? AGENT_EXEC_TTY : 0);
	if (exec_client_open(c, uds, AGENT_PORT, EXEC_HANDSHAKE_MS, flags, ws.ws_row, ws.ws_col,
			     p->cfg.cwd, p->cfg.cmd, p->cfg.env) < 0) {
		fprintf(stderr, "bulkhead-oci: exec: %s\n", c->error);
		return 125;
	}
	int rc = 0;
	while (rc == 0) {
		struct pollfd pfd[EXEC_CLIENT_POLLFDS + 1];
		int n = exec_client_pollfds(c, pfd);
		pfd[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n + 1, exec_client_timeout_ms(c)) < 0 && errno != EINTR)
			break;
		if (pfd[n].revents) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH && ioctl(0, TIOCGWINSZ, &ws) == 0)
					exec_client_winsize(c, ws.ws_row, ws.ws_col);
				else if (si.ssi_signo != SIGWINCH)
					exec_client_signal(c, (int)si.ssi_signo);
			}
		}
		rc = exec_client_handle(c, pfd, n);
		if (ready_fd >= 0 && c->state != EXEC_HANDSHAKE && !c->error[0]) {
			(void)!write(ready_fd, "1", 1);
			close(ready_fd);
			ready_fd = -1;
		}
	}
	int status = rc < 0 || c->error[0] ? 125 : exec_client_status(c);
	if (status == 125)
		fprintf(stderr, "bulkhead-oci: exec: %s\n", c->error[0] ? c->error : "failed");
	exec_client_close(c);
	close(sfd);
	return status;
}

/* --detach: the relay in a process of its own, reported once the guest has the command. */
static int detach(const struct oci_globals *g, const char *uds, const struct oci_process *p,
		  int tty, const char *pid_file)
{
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0) {
		oci_error(g, "exec: pipe: %s", strerror(errno));
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(pp[0]);
		if (tty >= 0 ? oci_console_attach(tty) < 0 : setsid() < 0)
			_exit(125);
		_exit(relay(uds, p, pp[1]));
	}
	close(pp[1]);
	char b;
	ssize_t n = pid > 0 ? read(pp[0], &b, 1) : -1;
	close(pp[0]);
	if (n != 1) {
		int st = 0;
		if (pid > 0)
			waitpid(pid, &st, 0);
		oci_error(g, "exec: the command did not start (status %d)",
			  WIFEXITED(st) ? WEXITSTATUS(st) : 125);
		return 1;
	}
	if (pid_file && oci_pid_file(pid_file, pid) < 0) {
		oci_error(g, "exec: --pid-file %s: %s", pid_file, strerror(errno));
		kill(pid, SIGKILL);
		return 1;
	}
	return 0;
}

int oci_exec(const struct oci_globals *g, int argc, char **argv)
{
	struct exec_opts o = { 0 };
	if (exec_opts(g, argc, argv, &o) < 0)
		return 1;
	struct oci_container c;
	static struct oci_process p;
	json_t *doc = NULL;
	char err[512], uds[PATH_MAX];
	if (oci_container_open(g, o.id, false, &c, err, sizeof(err)) < 0) {
		oci_error(g, "%s", err);
		return 1;
	}
	struct rundir rd;
	int rc = 1, tty = -1;
	if (c.status != OCI_CREATED && c.status != OCI_RUNNING) {
		snprintf(err, sizeof(err), "cannot exec in a %s container",
			 oci_status_name(c.status));
		goto out;
	}
	if (exec_process(&o, &c, &doc, &p, err, sizeof(err)) < 0 ||
	    same_user(&c, &p, err, sizeof(err)) < 0 ||
	    (oci_container_rundir(&c, &rd) < 0 &&
	     snprintf(err, sizeof(err), "the session's run directory is gone") > 0))
		goto out;
	if (rundir_file(&rd, RUNDIR_VSOCK "/vsock.sock", 1, uds, sizeof(uds)) < 0) {
		snprintf(err, sizeof(err), "run directory path too long");
		goto out;
	}
	if (p.terminal && !o.console && o.detach) {
		snprintf(err, sizeof(err), "process.terminal is set but no --console-socket given");
		goto out;
	}
	if (p.terminal && o.console &&
	    (tty = oci_console_open(o.console, p.rows, p.cols, err, sizeof(err))) < 0)
		goto out;
	/* The state's lock is not held while the command runs. */
	oci_container_close(&c);
	if (o.detach) {
		rc = detach(g, uds, &p, tty, o.pid_file);
	} else {
		if (tty >= 0 && oci_console_attach(tty) < 0) {
			oci_error(g, "exec: the terminal: %s", strerror(errno));
			rc = 125;
		} else {
			rc = relay(uds, &p, -1);
		}
	}
	if (tty >= 0)
		close(tty);
	json_decref(doc);
	return rc;
out:
	oci_error(g, "exec %s: %s", o.id, err);
	oci_container_close(&c);
	json_decref(doc);
	return 1;
}
