/* SPDX-License-Identifier: Apache-2.0 */
/* cli/session_cmds.c: commands on a session started with `bulkhead start`:
 * `bulkhead exec ID -- CMD` (one more command in the same VM) and `bulkhead stop ID`. */
#include "session/exec_client.h"
#include "session/out.h"
#include "jail/proc.h"
#include "session/pause_ask.h"
#include "session/rundir.h"
#include "session/plan.h"
#include "cli/session_cmds.h"
#include "lib/env_merge.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXEC_CONNECT_MS 10000

static const char exec_usage[] =
	"usage: bulkhead exec [-i] [-t] [-e KEY=VALUE]... [-w DIR] ID [--] CMD [ARG...]\n"
	"Runs CMD in the running session ID (from 'bulkhead start'); its stdout/stderr\n"
	"become ours, its exit code ours (128+N for signal N; 125: bulkhead failed).\n"
	"  -i   forward our stdin      -t   run CMD on a pseudo-terminal\n"
	"  -e   set an environment variable (not for secrets)\n"
	"  -w   working directory in the guest (default: where the session's commands start)\n";

/* Relays one exec until it ends; returns our exit code. */
static int relay(struct exec_client *c, bool tty)
{
	out_unblock();
	int sfd = proc_signalfd();
	int interrupts = 0, rc = 0;
	while (rc == 0) {
		struct pollfd pfd[EXEC_CLIENT_POLLFDS + 1];
		int n = exec_client_pollfds(c, pfd);
		pfd[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n + 1, exec_client_timeout_ms(c)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[n].revents) {
			struct signalfd_siginfo si;
			int sig = read(sfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo
									   : SIGTERM;
			if (sig == SIGWINCH) {
				struct winsize ws;
				if (ioctl(0, TIOCGWINSZ, &ws) == 0)
					exec_client_winsize(c, ws.ws_row, ws.ws_col);
				continue;
			}
			if (sig == SIGINT && interrupts++ == 0 && !tty) {
				exec_client_signal(c, SIGINT);
				continue;
			}
			/* Closing the stream makes the agent kill the command. */
			fprintf(stderr, "bulkhead: %s; the command was stopped\n", strsignal(sig));
			close(sfd);
			return 128 + sig;
		}
		rc = exec_client_handle(c, pfd, n);
	}
	close(sfd);
	if (rc == 2) {
		fprintf(stderr, "\r\nbulkhead: stopped from the terminal (~.); the command was "
				"stopped\n");
		return 128 + SIGINT;
	}
	if (rc < 0 || c->error[0]) {
		fprintf(stderr, "bulkhead: %s%s\n", rc < 0 ? "" : "guest: ", c->error);
		return EXIT_BULKHEAD;
	}
	return exec_client_status(c);
}

/* What `bulkhead exec` was asked. */
struct exec_request {
	bool interactive, tty;
	char *env[RUN_MAX_ENV + 1];
	size_t nenv;
	const char *cwd; /* NULL: where the session's commands start */
	const char *id;
	char **argv;
};

/* -1 when parsed (go on), else the exit code (0 after --help). */
static int exec_opts(int argc, char **argv, struct exec_request *q)
{
	static const struct option longopts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+ite:w:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			q->interactive = true;
			break;
		case 't':
			q->tty = true;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=' || q->nenv == RUN_MAX_ENV) {
				fprintf(stderr, "bulkhead exec: -e '%s': expected KEY=VALUE\n",
					optarg);
				return EXIT_BULKHEAD;
			}
			q->env[q->nenv++] = optarg;
			break;
		case 'w':
			if (optarg[0] != '/') {
				fprintf(stderr, "bulkhead exec: -w needs an absolute path\n");
				return EXIT_BULKHEAD;
			}
			q->cwd = optarg;
			break;
		case 'h':
			fputs(exec_usage, stdout);
			return 0;
		default:
			fprintf(stderr,
				"bulkhead exec: bad option '%s' (see 'bulkhead exec --help')\n",
				argv[optind - 1]);
			return EXIT_BULKHEAD;
		}
	}
	q->env[q->nenv] = NULL;
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (argc - optind < 2) {
		fprintf(stderr, "bulkhead exec: need a session id and a command (see --help)\n");
		return EXIT_BULKHEAD;
	}
	q->id = argv[optind++];
	if (strcmp(argv[optind], "--") == 0 && ++optind == argc) {
		fprintf(stderr, "bulkhead exec: no command given\n");
		return EXIT_BULKHEAD;
	}
	q->argv = argv + optind;
	if (q->tty && q->interactive && !isatty(0)) {
		fprintf(stderr,
			"bulkhead: -it needs a terminal on stdin (use -i alone for a pipe)\n");
		return EXIT_BULKHEAD;
	}
	return -1;
}

int cmd_exec(int argc, char **argv)
{
	static struct exec_request q;
	memset(&q, 0, sizeof(q));
	int rc = exec_opts(argc, argv, &q);
	if (rc >= 0)
		return rc;
	bool interactive = q.interactive, tty = q.tty;
	const char *id = q.id, *cwd = q.cwd;
	char **env = q.env;
	struct rundir rd;
	char err[320], uds[PATH_MAX], dflt[PATH_MAX];
	if (rundir_open(&rd, id, err, sizeof(err)) < 0 ||
	    rundir_file(&rd, RUNDIR_VSOCK "/vsock.sock", 1, uds, sizeof(uds)) < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	char state[16];
	if (rundir_get(&rd, "state", state, sizeof(state)) == 0 && !strcmp(state, "paused\n")) {
		fprintf(stderr, "bulkhead: session %s is paused ('bulkhead resume %s')\n", id, id);
		return EXIT_BULKHEAD;
	}
	if (!cwd)
		cwd = rundir_get(&rd, "cwd", dflt, sizeof(dflt)) == 0 ? dflt : "/";
	/* A session on an image: its environment (the run directory's "env") under -e. */
	static char image_env[IMAGE_ENV_BYTES + 1];
	static char *image_lines[IMAGE_ENV_MAX + 1], *all_env[IMAGE_ENV_MAX + RUN_MAX_ENV + 1];
	if (rundir_get(&rd, "env", image_env, sizeof(image_env)) == 0) {
		env_lines(image_env, image_lines, IMAGE_ENV_MAX);
		char *const *const layers[] = { image_lines, q.env, NULL };
		env_merge(layers, all_env, IMAGE_ENV_MAX + RUN_MAX_ENV);
		env = all_env;
	}
	signal(SIGPIPE, SIG_IGN);
	struct exec_client *c = calloc(1, sizeof(*c));
	if (!c)
		return EXIT_BULKHEAD;
	c->in_fd = interactive ? 0 : -1;
	c->out_fd = 1;
	c->err_fd = 2;
	c->escapes = tty && interactive;
	struct winsize ws = { 0 };
	if (tty)
		ioctl(0, TIOCGWINSZ, &ws);
	uint32_t flags = (tty ? AGENT_EXEC_TTY : 0) | (interactive ? AGENT_EXEC_STDIN : 0);
	int code = EXIT_BULKHEAD;
	if (exec_client_open(c, uds, AGENT_PORT, EXEC_CONNECT_MS, flags, ws.ws_row, ws.ws_col, cwd,
			     q.argv, env) < 0) {
		fprintf(stderr, "bulkhead: session %s: %s\n", id, c->error);
	} else {
		struct termios saved;
		bool raw = false;
		if (tty && interactive && tcgetattr(0, &saved) == 0) {
			struct termios t = saved;
			cfmakeraw(&t);
			raw = tcsetattr(0, TCSANOW, &t) == 0;
		}
		code = relay(c, tty);
		if (raw)
			tcsetattr(0, TCSANOW, &saved);
	}
	exec_client_close(c);
	free(c);
	return code;
}

int cmd_stop(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: bulkhead stop ID\n");
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : EXIT_BULKHEAD;
	}
	struct rundir rd;
	char err[320];
	int pidfd = -1;
	if (rundir_open(&rd, argv[1], err, sizeof(err)) < 0 ||
	    (pidfd = rundir_supervisor(&rd, err, sizeof(err))) < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	int sent = (int)syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	close(pidfd);
	if (sent < 0) {
		fprintf(stderr, "bulkhead: session %s: no running supervisor\n", argv[1]);
		return EXIT_BULKHEAD;
	}
	/* The supervisor removes the directory as its last act. */
	for (int i = 0; i < 300; i++) {
		if (access(rd.path, F_OK) < 0)
			return 0;
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "bulkhead: session %s did not stop within 15 s\n", argv[1]);
	return EXIT_BULKHEAD;
}

/* pause / resume: session/pause_ask.c asks the supervisor and waits for its answer. */
static int pause_or_resume(int argc, char **argv, bool pause)
{
	const char *verb = pause ? "pause" : "resume";
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: bulkhead %s ID\n", verb);
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : EXIT_BULKHEAD;
	}
	char err[720];
	if (session_pause_ask(argv[1], pause, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	return 0;
}

int cmd_pause(int argc, char **argv)
{
	return pause_or_resume(argc, argv, true);
}

int cmd_resume(int argc, char **argv)
{
	return pause_or_resume(argc, argv, false);
}
