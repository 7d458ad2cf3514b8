/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/agent.c: the exec agent — listens on vsock AGENT_PORT; each host
 * connection is one exec (lib/agent_proto.h), served by its own child process.
 * The "ready" connection to the host doubles as the session's lifeline: when the
 * host closes it, the session is over and the guest powers off. A reset of it (the
 * guest paused and resumed: `bulkhead pause`) is answered with a new one. */
#include "guest/init/exec.h"
#include "guest/init/init.h"
#include "lib/agent_proto.h"
#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h> /* before vm_sockets.h: older kernel headers need sockaddr */
#include <linux/vm_sockets.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* One exec: the handler's view of the command and its pending stdin bytes. */
struct handler {
	int sock;
	struct exec_proc proc;
	bool tty;
	char *inbuf; /* STDIN bytes not yet written to the command */
	size_t inlen, inoff;
	bool in_eof; /* the host sent end of input */
	int status;  /* wait status, -1 while running */
};

__attribute__((format(printf, 2, 3))) static void send_error(int sock, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	agent_send(sock, AGENT_ERROR, msg,
		   n < 0		     ? 0
		   : (size_t)n < sizeof(msg) ? (size_t)n
					     : sizeof(msg) - 1);
}

/* Handles one frame from the host; 0, or -1 to end the exec (protocol error). */
static int on_host_frame(struct handler *h, int type, const uint8_t *buf, size_t len)
{
	switch (type) {
	case AGENT_STDIN:
		if (h->proc.in_fd < 0 || h->in_eof)
			return 0; /* the command takes no input: drop it */
		if (len == 0) {
			h->in_eof = true;
			if (!h->tty) {
				close(h->proc.in_fd);
				h->proc.in_fd = -1;
			}
			return 0;
		}
		memcpy(h->inbuf, buf, len);
		h->inlen = len;
		h->inoff = 0;
		return 0;
	case AGENT_SIGNAL: {
		int sig;
		if (agent_signal_decode(buf, len, &sig) < 0)
			return -1;
		if (sig & AGENT_SIGNAL_PROCESS)
			kill(h->proc.pid, sig & ~AGENT_SIGNAL_PROCESS);
		else
			kill(-h->proc.pid, sig);
		return 0;
	}
	case AGENT_WINSIZE: {
		struct winsize ws = { 0 };
		if (agent_winsize_decode(buf, len, &ws.ws_row, &ws.ws_col) < 0)
			return -1;
		if (h->tty)
			ioctl(h->proc.out_fd, TIOCSWINSZ, &ws);
		return 0;
	}
	}
	return -1; /* anything else is not for the host to send now */
}

/* Copies what the command wrote to the host; 0 at EOF (or EIO on a pty). */
static int forward(struct handler *h, int fd, int type, char *buf, bool drain)
{
	for (;;) {
		ssize_t n = read(fd, buf, AGENT_MAX_PAYLOAD);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n <= 0)
			return 0;
		if (agent_send(h->sock, type, buf, (size_t)n) < 0)
			return 0;
		if (!drain)
			return 1;
	}
}

static void send_exit(int sock, int code, int sig)
{
	uint8_t ex[AGENT_EXIT_LEN];
	agent_exit_encode(ex, code, sig);
	agent_send(sock, AGENT_EXIT, ex, sizeof(ex));
}

/* The first frame of an exec, read as it comes (the host sends it at once). */
static int first_frame(struct agent_reader *rd, int sock)
{
	for (;;) {
		int t = agent_reader_next(rd);
		if (t != -EAGAIN)
			return t;
		long r = agent_reader_fill(rd, sock);
		if (r < 0 && r != -EAGAIN)
			return (int)r;
	}
}

/* Host frames already received, while no stdin bytes wait (the command sets the pace).
 * Returns 0, or the reader's result that ends the exec (0: the host closed). */
static int host_frames(struct handler *h, struct agent_reader *rd, int *end)
{
	while (h->inoff >= h->inlen) {
		int t = agent_reader_next(rd);
		if (t == -EAGAIN)
			return 0;
		if (t <= 0 || on_host_frame(h, t, rd->p.payload, rd->p.len) < 0) {
			*end = t;
			return -1;
		}
	}
	return 0;
}

/* Starts the command of the exec request the host sent first. Returns the SIGCHLD signalfd;
 * a request that is not one, or a command that cannot start, ends this child here. */
static int start_command(struct handler *h, struct agent_reader *rd, const sigset_t *origmask)
{
	int type = first_frame(rd, h->sock);
	struct agent_exec_req req;
	if (type != AGENT_EXEC || agent_exec_decode(rd->p.payload, rd->p.len, &req) < 0) {
		send_error(h->sock, "bulkhead-init: expected an exec request");
		_exit(1);
	}
	h->tty = req.flags & AGENT_EXEC_TTY;
	char **env = exec_build_env((char *const *)req.env, h->tty);
	struct exec_spec spec = { .argv = req.argv,
				  .env = (const char *const *)env,
				  .cwd = req.cwd,
				  .tty = h->tty,
				  .rows = req.rows,
				  .cols = req.cols,
				  .stdin_pipe = req.flags & AGENT_EXEC_STDIN };
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	int rc = env && sfd >= 0 ? exec_spawn(&spec, origmask, &h->proc) : -ENOMEM;
	if (rc < 0) {
		send_error(h->sock, "bulkhead-init: cannot start the command: %s", strerror(-rc));
		_exit(1);
	}
	if (rc > 0) {
		char msg[512];
		int n = snprintf(msg, sizeof(msg), "bulkhead: %s: %s\n", req.argv[0], strerror(rc));
		agent_send(h->sock, AGENT_STDERR, msg,
			   (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
		waitpid(h->proc.pid, NULL, 0);
		send_exit(h->sock, exec_failure_code(rc), 0);
		_exit(0);
	}
	if (h->proc.in_fd >= 0)
		fcntl(h->proc.in_fd, F_SETFL, O_NONBLOCK);
	return sfd;
}

/* The host went away or broke the protocol: stop the command, end this child. */
static void abandon(const struct handler *h, int code)
{
	kill(-h->proc.pid, SIGKILL);
	waitpid(h->proc.pid, NULL, 0);
	_exit(code);
}

/* Until the command exits: host frames in, its output out, stdin as it takes it. OUTS: its
 * stdout and stderr, -1 once closed. */
static void pump(struct handler *h, struct agent_reader *rd, int sfd, int outs[2], char *buf)
{
	static const int types[2] = { AGENT_STDOUT, AGENT_STDERR };

	while (h->status == -1) {
		int end = 0;
		if (host_frames(h, rd, &end) < 0)
			abandon(h, end == 0 ? 0 : 1);
		/* Host frames wait while stdin bytes are pending: the command sets the pace. */
		bool want_in = h->inoff < h->inlen;
		struct pollfd pfd[5] = {
			{ .fd = want_in ? -1 : h->sock, .events = POLLIN },
			{ .fd = outs[0], .events = POLLIN },
			{ .fd = outs[1], .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
			{ .fd = want_in ? h->proc.in_fd : -1, .events = POLLOUT },
		};
		if (poll(pfd, 5, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			long r = agent_reader_fill(rd, h->sock);
			if (r < 0 && r != -EAGAIN)
				abandon(h, 1);
		}
		for (int i = 0; i < 2; i++)
			if (outs[i] >= 0 && pfd[1 + i].revents &&
			    !forward(h, outs[i], types[i], buf, false))
				outs[i] = -1; /* closed by the command (or a pty without readers) */
		if (pfd[4].revents) {
			ssize_t n = write(h->proc.in_fd, h->inbuf + h->inoff, h->inlen - h->inoff);
			if (n > 0)
				h->inoff += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				h->inoff =
					h->inlen; /* the command closed its stdin: drop the rest */
		}
		if (pfd[3].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			int ws;
			pid_t w;
			while ((w = waitpid(-1, &ws, WNOHANG)) > 0)
				if (w == h->proc.pid)
					h->status = ws;
		}
	}
	/* Take what the command wrote before it exited; background processes that keep the
	 * pipes open are not waited for. */
	for (int i = 0; i < 2; i++) {
		if (outs[i] < 0)
			continue;
		fcntl(outs[i], F_SETFL, O_NONBLOCK);
		forward(h, outs[i], types[i], buf, true);
	}
}

/* One exec, in its own child of init: start the command, pump, report how it ended. */
static void serve(int sock, const sigset_t *origmask)
{
	static char buf[AGENT_MAX_PAYLOAD], inbuf[AGENT_MAX_PAYLOAD];
	static struct agent_reader rd;
	struct handler h = { .sock = sock, .inbuf = inbuf, .status = -1 };
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	int sfd = start_command(&h, &rd, origmask);
	int outs[2] = { h.proc.out_fd, h.proc.err_fd };

	pump(&h, &rd, sfd, outs, buf);
	/* Flush before reporting: the host may stop the VM as soon as it knows. */
	sync();
	if (WIFSIGNALED(h.status))
		send_exit(sock, -1, WTERMSIG(h.status));
	else
		send_exit(sock, WEXITSTATUS(h.status), 0);
	_exit(0);
}

/* The host's answer to READY, read when it comes: its wall clock, taken (a resumed guest's
 * is as old as its pause). 0 or -errno. */
static int take_clock(int fd)
{
	uint8_t b[AGENT_HDR_LEN + AGENT_CLOCK_LEN], want[AGENT_HDR_LEN];
	struct timeval tv = { .tv_sec = 10 };
	int64_t sec;
	uint32_t nsec;
	agent_hdr_encode(want, AGENT_CLOCK, AGENT_CLOCK_LEN);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = io_read_full(fd, b, sizeof(b));
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (n != (ssize_t)sizeof(b) || memcmp(b, want, sizeof(want)) ||
	    agent_clock_decode(b + AGENT_HDR_LEN, AGENT_CLOCK_LEN, &sec, &nsec) < 0)
		return n < 0 ? (int)n : -EPROTO;
	struct timespec ts = { .tv_sec = sec, .tv_nsec = nsec };
	return clock_settime(CLOCK_REALTIME, &ts) < 0 ? -errno : 0;
}

/* The ready connection: READY said on a new connection to the host. Its fd, or -errno. */
static int call_host(void)
{
	int fd = vsock_connect_host(AGENT_READY_PORT);
	int rc = fd < 0 ? fd : agent_send(fd, AGENT_READY, NULL, 0);
	if (fd >= 0 && rc < 0)
		close(fd);
	return rc < 0 ? rc : fd;
}

/* The ready connection said something. Its clock frame is taken; the host ending it (an end
 * of stream, or bytes it must not send) ends the session: -1. A transport reset (the guest was paused and resumed
 * in a new VMM: bulkhead-vmm's reset event) is not an end: the host is asked again, for up to
 * 5 s, and the new connection returned. */
static int lifeline_lost(int ready)
{
	char b;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	ssize_t n = recv(ready, &b, 1, MSG_DONTWAIT | MSG_PEEK);
	int e = errno;
	if (n < 0 && (e == EAGAIN || e == EINTR))
		return ready;
	/* The host's clock, its answer to READY (anything else ends the session). */
	if (n > 0)
		return take_clock(ready) == 0 ? ready : (close(ready), -1);
	/* A reset socket reads ENOTCONN; its error says why. */
	getsockopt(ready, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	close(ready);
	if (n >= 0 || (e != ECONNRESET && soerr != ECONNRESET))
		return -1;
	for (int i = 0; i < 50; i++) {
		int fd = call_host();
		if (fd >= 0)
			return fd;
		usleep(100000);
	}
	return -1;
}

void agent_run(void)
{
	sigset_t chld, origmask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &origmask);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	int lfd = vsock_listen(AGENT_PORT);
	if (sfd < 0 || lfd < 0) {
		console_error("bulkhead-init: exec agent: cannot listen on vsock port %d: %s",
			      AGENT_PORT, strerror(lfd < 0 ? -lfd : errno));
		return;
	}
	int ready = call_host();
	if (ready < 0) {
		console_error(
			"bulkhead-init: exec agent: cannot reach the host on vsock port %d: %s",
			AGENT_READY_PORT, strerror(-ready));
		return;
	}
	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = ready, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents && (ready = lifeline_lost(ready)) < 0)
			break; /* the host closed the session (or sent what it must not) */
		if (pfd[0].revents) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				pid_t pid = fork();
				if (pid == 0) {
					close(lfd);
					close(ready);
					close(sfd);
					/* Orphans of this exec are ours to reap, not init's. */
					prctl(PR_SET_CHILD_SUBREAPER, 1);
					serve(c, &origmask);
				}
				close(c);
			}
		}
		if (pfd[2].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
	}
	sync();
}
