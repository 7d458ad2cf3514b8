/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_agent.c: the agent side of a session — wait for the guest's
 * "ready", start the main command through the exec agent, relay it. Nothing here
 * blocks on the guest: the ready frame is parsed as it arrives, within a deadline. */
#include "session/session.h"
#include "lib/mono.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define AGENT_HANDSHAKE_MS 10000

int agent_link_pollfds(struct agent_link *a, struct pollfd *pfd)
{
	int n = 0;
	if (a->ready_fd < 0)
		pfd[n++] = (struct pollfd){ .fd = a->ready_lfd, .events = POLLIN };
	else
		pfd[n++] = (struct pollfd){ .fd = a->ready_fd, .events = POLLIN };
	if (a->ready && !a->exec && a->start_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = a->start_fd, .events = POLLIN };
	if (a->exec)
		n += exec_client_pollfds(a->exec, pfd + n);
	return n;
}

void agent_link_arm(struct agent_link *a, unsigned boot_s)
{
	a->boot_deadline = mono_ms() + 1000L * (boot_s ? boot_s : BOOT_TIMEOUT_DEFAULT_S);
}

static int until(long deadline)
{
	long left = deadline - mono_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

int agent_link_timeout_ms(const struct agent_link *a)
{
	if (a->ready_fd < 0)
		return a->boot_deadline ? until(a->boot_deadline) : -1;
	if (!a->ready)
		return until(a->ready_deadline);
	return a->exec ? exec_client_timeout_ms(a->exec) : -1;
}

static int fail(struct agent_link *a, const char *what, const char *why)
{
	snprintf(a->error, sizeof(a->error), "%s: %s", what, why);
	a->failed = true;
	return -1;
}

/* The guest said it is ready: open the main command's exec stream. */
static int start_exec(struct agent_link *a)
{
	a->exec = calloc(1, sizeof(*a->exec));
	if (!a->exec)
		return fail(a, "exec", "out of memory");
	a->exec->sock = -1;
	a->exec->in_fd = a->in_fd;
	a->exec->out_fd = 1;
	a->exec->err_fd = 2;
	a->exec->escapes = (a->flags & AGENT_EXEC_TTY) && a->in_fd >= 0 && !a->no_escapes;
	a->exec->signal_process = a->no_escapes; /* an OCI caller's kill is for the process */
	/* The terminal may have been sized since the session started (a caller that holds the
	 * terminal's other end sets it once it has it). */
	struct winsize ws;
	if ((a->flags & AGENT_EXEC_TTY) && a->in_fd >= 0 && ioctl(a->in_fd, TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_row && ws.ws_col) {
		a->rows = ws.ws_row;
		a->cols = ws.ws_col;
	}
	if (exec_client_open(a->exec, a->uds, AGENT_PORT, AGENT_HANDSHAKE_MS, a->flags, a->rows,
			     a->cols, a->cwd, a->argv, a->env) < 0)
		return fail(a, "cannot reach the guest's exec agent", a->exec->error);
	return 0;
}

/* The session is ready: tell `bulkhead start` (or `bulkhead-oci create`) our id; a detached
 * session then leaves its terminal, which a main command still to come keeps. */
static void notify_started(struct agent_link *a)
{
	/* From here on the session outlives `bulkhead start` (cmd_start set it to die with it
	 * until now, so that an interrupted start leaves nothing running). */
	prctl(PR_SET_PDEATHSIG, 0);
	dprintf(a->notify_fd, "%s\n", a->session_id);
	close(a->notify_fd);
	a->notify_fd = -1;
	bool keep_stderr = a->ready_stderr_fd >= 0; /* the caller's choice: a log, say */
	if (keep_stderr) {
		dup2(a->ready_stderr_fd, 2);
		close(a->ready_stderr_fd);
		a->ready_stderr_fd = -1;
	}
	if (a->argv)
		return;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		if (!keep_stderr)
			dup2(devnull, 2);
		close(devnull);
	}
}

/* The ready connection: exactly one READY frame (a bare header), then nothing. */
static int on_ready_bytes(struct agent_link *a)
{
	if (a->ready)
		/* Nothing may arrive on the lifeline; EOF means the guest's agent is gone. */
		return fail(a, "guest agent", "the session's control connection closed");
	long r = agent_reader_fill(a->rd, a->ready_fd);
	if (r < 0 && r != -EAGAIN)
		return fail(a, "guest agent", strerror((int)-r));
	int t = agent_reader_next(a->rd);
	if (t == -EAGAIN)
		return 0;
	if (t != AGENT_READY || agent_reader_buffered(a->rd))
		return fail(a, "guest agent", "no valid ready message");
	/* Our wall clock, which the guest takes: a resumed guest's is as old as its pause. A
	 * fresh socket has room for one small frame. */
	uint8_t clk[AGENT_HDR_LEN + AGENT_CLOCK_LEN];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	agent_hdr_encode(clk, AGENT_CLOCK, AGENT_CLOCK_LEN);
	agent_clock_encode(clk + AGENT_HDR_LEN, now.tv_sec, (uint32_t)now.tv_nsec);
	if (send(a->ready_fd, clk, sizeof(clk), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(clk))
		return fail(a, "guest agent", "the ready connection took no clock");
	a->ready = true;
	free(a->rd);
	a->rd = NULL;
	if (a->notify_fd >= 0)
		notify_started(a);
	if (a->argv && a->start_fd < 0)
		return start_exec(a) < 0 ? -1 : 0;
	return 0;
}

/* The start gate (bulkhead-oci start) opened: one byte, then the main command. */
static int on_start(struct agent_link *a)
{
	char b;
	ssize_t n = read(a->start_fd, &b, 1);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n != 1)
		return fail(a, "start", n < 0 ? strerror(errno) : "the start gate closed");
	a->start_fd = -1; /* the caller's to close */
	return start_exec(a);
}

int agent_link_handle(struct agent_link *a, const struct pollfd *pfd, int n)
{
	if (a->ready_fd < 0) {
		if (a->boot_deadline && mono_ms() >= a->boot_deadline)
			return fail(a, "guest agent",
				    "the guest did not call home in time (see --boot-timeout)");
		if (!pfd[0].revents)
			return 0;
		int fd = accept4(a->ready_lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return 0;
		a->rd = malloc(sizeof(*a->rd));
		if (!a->rd) {
			close(fd);
			return fail(a, "guest agent", "out of memory");
		}
		agent_reader_init(a->rd, 0);
		a->ready_fd = fd;
		a->ready_deadline = mono_ms() + AGENT_HANDSHAKE_MS;
		return 0;
	}
	if (pfd[0].revents && on_ready_bytes(a) < 0)
		return -1;
	if (!a->ready) {
		if (mono_ms() >= a->ready_deadline)
			return fail(a, "guest agent", "no ready message in time");
		return 0;
	}
	if (!a->exec) {
		if (a->argv && a->start_fd >= 0 && n > 1 && pfd[1].revents)
			return on_start(a);
		return 0;
	}
	int rc = exec_client_handle(a->exec, pfd + 1, n - 1);
	if (rc < 0)
		return fail(a, "exec", a->exec->error);
	return rc;
}

void agent_link_close(struct agent_link *a)
{
	if (a->exec) {
		exec_client_close(a->exec);
		free(a->exec);
		a->exec = NULL;
	}
	free(a->rd);
	a->rd = NULL;
	if (a->ready_fd >= 0)
		close(a->ready_fd);
	a->ready_fd = -1;
}
