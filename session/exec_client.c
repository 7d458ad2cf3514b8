/* SPDX-License-Identifier: Apache-2.0 */
/* session/exec_client.c: one exec in the guest, host side (see exec_client.h). */
#include "session/exec_client.h"
#include "lib/mono.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ESC_LINE_START, ESC_MID_LINE, ESC_TILDE };

__attribute__((format(printf, 2, 3))) static int fail(struct exec_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	c->state = EXEC_OVER;
	return -1;
}

int exec_client_open(struct exec_client *c, const char *uds, unsigned port, int handshake_ms,
		     uint32_t flags, uint16_t rows, uint16_t cols, const char *cwd,
		     char *const argv[], char *const env[])
{
	c->sock = -1;
	c->state = EXEC_HANDSHAKE;
	c->port = port;
	c->olen = c->ooff = 0;
	c->pending_signal = 0;
	c->pending_winsize = false;
	c->done = c->out_broken = c->err_broken = false;
	c->wout_fd = -1;
	c->wout_off = 0;
	c->reply_len = 0;
	c->esc_state = ESC_LINE_START;
	c->escaped = false;
	c->error[0] = '\0';
	agent_reader_init(&c->rd, AGENT_MAX_PAYLOAD);
	/* The EXEC frame is ready from the start and leaves once the guest answered. */
	long n = agent_exec_encode(c->obuf + AGENT_HDR_LEN, AGENT_MAX_PAYLOAD, flags, rows, cols,
				   cwd, argv, env);
	if (n < 0)
		return fail(c, "the command and environment exceed %d bytes", AGENT_MAX_PAYLOAD);
	agent_hdr_encode(c->obuf, AGENT_EXEC, (uint32_t)n);
	c->olen = AGENT_HDR_LEN + (size_t)n;
	/* Non-blocking: a Unix connect completes or fails at once, even when the back end
	 * stopped accepting. */
	int fd = unix_connect(uds, true);
	if (fd < 0)
		return fail(c, "cannot connect to %s: %s", uds, strerror(-fd));
	c->sock = fd;
	c->hs_len = (size_t)snprintf(c->hs, sizeof(c->hs), "CONNECT %u\n", port);
	c->hs_off = 0;
	c->deadline_ms = mono_ms() + handshake_ms;
	return 0;
}

/* Queues one frame for non-blocking sending; the buffer must be free. */
static void queue(struct exec_client *c, int type, const void *payload, size_t len)
{
	agent_hdr_encode(c->obuf, type, (uint32_t)len);
	if (len)
		memcpy(c->obuf + AGENT_HDR_LEN, payload, len);
	c->olen = AGENT_HDR_LEN + len;
	c->ooff = 0;
}

/* Control frames go first whenever the buffer frees up. */
static void queue_control(struct exec_client *c)
{
	uint8_t p[AGENT_SIGNAL_LEN > AGENT_WINSIZE_LEN ? AGENT_SIGNAL_LEN : AGENT_WINSIZE_LEN];
	if (c->olen || c->state != EXEC_RUNNING)
		return;
	if (c->pending_signal) {
		agent_signal_encode(p, c->pending_signal);
		c->pending_signal = 0;
		queue(c, AGENT_SIGNAL, p, AGENT_SIGNAL_LEN);
	} else if (c->pending_winsize) {
		agent_winsize_encode(p, c->rows, c->cols);
		c->pending_winsize = false;
		queue(c, AGENT_WINSIZE, p, AGENT_WINSIZE_LEN);
	}
}

int exec_client_status(const struct exec_client *c)
{
	return c->exit.signal ? 128 + c->exit.signal : c->exit.code;
}

void exec_client_signal(struct exec_client *c, int sig)
{
	if (sig < 1 || sig > AGENT_SIG_MAX)
		return;
	c->pending_signal = sig | (c->signal_process ? AGENT_SIGNAL_PROCESS : 0);
	queue_control(c);
}

void exec_client_winsize(struct exec_client *c, uint16_t rows, uint16_t cols)
{
	c->rows = rows;
	c->cols = cols;
	c->pending_winsize = true;
	queue_control(c);
}

int exec_client_pollfds(struct exec_client *c, struct pollfd *pfd)
{
	int n = 0;
	c->pi_sock = c->pi_out = c->pi_in = -1;
	if (c->state == EXEC_OVER)
		return 0;
	short ev;
	if (c->state == EXEC_HANDSHAKE)
		ev = c->hs_off < c->hs_len ? POLLOUT : POLLIN;
	else
		ev = (short)((c->olen ? POLLOUT : 0) | (c->wout_fd < 0 ? POLLIN : 0));
	c->pi_sock = n;
	pfd[n++] = (struct pollfd){ .fd = ev ? c->sock : -1, .events = ev };
	if (c->wout_fd >= 0) {
		c->pi_out = n;
		pfd[n++] = (struct pollfd){ .fd = c->wout_fd, .events = POLLOUT };
	}
	if (c->state == EXEC_RUNNING && c->in_fd >= 0 && !c->olen) {
		c->pi_in = n;
		pfd[n++] = (struct pollfd){ .fd = c->in_fd, .events = POLLIN };
	}
	return n;
}

int exec_client_timeout_ms(const struct exec_client *c)
{
	if (c->state != EXEC_HANDSHAKE)
		return -1;
	long left = c->deadline_ms - mono_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* "CONNECT <port>\n" out, "OK <hostport>\n" in, a byte at a time: nothing after the
 * newline is ours to take yet. */
static int handshake(struct exec_client *c, const struct pollfd *p)
{
	if (mono_ms() >= c->deadline_ms)
		return fail(c, "vsock handshake to guest port %u timed out", c->port);
	if (!p || !p->revents)
		return 0;
	if (c->hs_off < c->hs_len) {
		ssize_t w = send(c->sock, c->hs + c->hs_off, c->hs_len - c->hs_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return fail(c, "vsock handshake: %s", strerror(errno));
		if (w > 0)
			c->hs_off += (size_t)w;
		return 0;
	}
	for (;;) {
		char ch;
		ssize_t r = recv(c->sock, &ch, 1, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return fail(c, "nothing listens on guest port %u", c->port);
		c->reply[c->reply_len++] = ch;
		if (ch == '\n')
			break;
		if (c->reply_len == sizeof(c->reply) - 1)
			return fail(c, "vsock handshake: unexpected reply");
	}
	c->reply[c->reply_len] = '\0';
	if (strncmp(c->reply, "OK ", 3) != 0)
		return fail(c, "vsock handshake: unexpected reply");
	c->state = EXEC_RUNNING; /* the EXEC frame in obuf may leave now */
	return 0;
}

/* Writes what waits for our stdout/stderr as far as the descriptor takes it without
 * blocking: PIPE_BUF bytes at a time, each after poll said there is room (a pipe with
 * room takes that much at once), so a reader that stopped cannot stall the loop. */
static void write_pending(struct exec_client *c)
{
	bool *broken = c->wout_fd == c->out_fd ? &c->out_broken : &c->err_broken;
	while (c->wout_fd >= 0) {
		size_t left = c->rd.p.len - c->wout_off;
		struct pollfd p = { .fd = c->wout_fd, .events = POLLOUT };
		if (left == 0 || *broken) {
			c->wout_fd = -1;
			break;
		}
		if (poll(&p, 1, 0) <= 0)
			break;
		if (p.revents & POLLNVAL) {
			*broken = true; /* our stdout/stderr was closed: drop what comes */
			continue;
		}
		ssize_t n = write(c->wout_fd, c->rd.p.payload + c->wout_off,
				  left < PIPE_BUF ? left : PIPE_BUF);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			break;
		if (n <= 0)
			*broken = true; /* e.g. `| head`: the session goes on */
		else
			c->wout_off += (size_t)n;
	}
}

static int on_frame(struct exec_client *c, int type)
{
	const uint8_t *p = c->rd.p.payload;
	size_t len = c->rd.p.len;
	switch (type) {
	case AGENT_STDOUT:
	case AGENT_STDERR:
		c->wout_fd = type == AGENT_STDOUT ? c->out_fd : c->err_fd;
		c->wout_off = 0;
		write_pending(c);
		return 0;
	case AGENT_EXIT:
		if (agent_exit_decode(p, len, &c->exit) < 0)
			return fail(c, "exec agent: invalid exit status");
		c->done = true;
		c->state = EXEC_OVER;
		return 1;
	case AGENT_ERROR: {
		size_t n = len < sizeof(c->error) - 1 ? len : sizeof(c->error) - 1;
		for (size_t i = 0; i < n; i++)
			c->error[i] = p[i] < 0x20 || p[i] == 0x7f ? ' ' : (char)p[i];
		c->error[n] = '\0';
		c->done = true;
		c->state = EXEC_OVER;
		return 1;
	}
	}
	return fail(c, "exec agent: unexpected frame type %d", type);
}

/* Whole frames already received, until one's output has to wait for our descriptor. */
static int drain_frames(struct exec_client *c)
{
	while (c->wout_fd < 0) {
		int t = agent_reader_next(&c->rd);
		if (t == -EAGAIN)
			return 0;
		if (t == 0)
			return fail(c, "exec stream closed before the command's status arrived");
		if (t == -EIO)
			return fail(c, "exec stream closed in the middle of a frame");
		if (t < 0)
			return fail(c, "exec stream broken (malformed frame from the guest)");
		int rc = on_frame(c, t);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int send_pending(struct exec_client *c)
{
	ssize_t w =
		send(c->sock, c->obuf + c->ooff, c->olen - c->ooff, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0 && errno != EAGAIN && errno != EINTR)
		return fail(c, "exec stream: %s", strerror(errno));
	if (w > 0 && (c->ooff += (size_t)w) == c->olen)
		c->olen = c->ooff = 0;
	queue_control(c);
	return 0;
}

/* Takes "~." (at a line's start) out of what we read, in place; a held "~" goes out with
 * the next byte. buf has room for one byte more than n. Returns the bytes to send. The input
 * is moved up one byte first: output byte k is at most input byte i + 1, so every write
 * lands on a byte already read (no copy, nothing shared between threads). */
static size_t escapes(struct exec_client *c, uint8_t *buf, size_t n)
{
	const uint8_t *in = buf + 1;
	size_t k = 0;
	memmove(buf + 1, buf, n);
	for (size_t i = 0; i < n; i++) {
		uint8_t b = in[i];
		if (c->esc_state == ESC_TILDE) {
			if (b == '.') {
				c->escaped = true;
				return k;
			}
			buf[k++] = '~';
			c->esc_state = ESC_MID_LINE;
			if (b == '~')
				continue;
		} else if (c->esc_state == ESC_LINE_START && b == '~') {
			c->esc_state = ESC_TILDE;
			continue;
		}
		buf[k++] = b;
		c->esc_state = b == '\r' || b == '\n' ? ESC_LINE_START : ESC_MID_LINE;
	}
	return k;
}

static void read_stdin(struct exec_client *c)
{
	/* One byte of room for a held "~". */
	ssize_t r = read(c->in_fd, c->ibuf, AGENT_MAX_PAYLOAD - 1);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r <= 0) {
		c->in_fd = -1; /* our stdin ended: tell the guest command */
		queue(c, AGENT_STDIN, NULL, 0);
		return;
	}
	size_t n = c->escapes ? escapes(c, c->ibuf, (size_t)r) : (size_t)r;
	if (n)
		queue(c, AGENT_STDIN, c->ibuf, n);
}

int exec_client_handle(struct exec_client *c, const struct pollfd *pfd, int n)
{
	if (c->state == EXEC_OVER)
		return c->done ? 1 : -1;
	const struct pollfd *ps = c->pi_sock >= 0 && c->pi_sock < n ? &pfd[c->pi_sock] : NULL;
	if (c->state == EXEC_HANDSHAKE)
		return handshake(c, ps);
	if (ps && ps->revents & POLLOUT && c->olen && send_pending(c) < 0)
		return -1;
	if (c->pi_out >= 0 && c->pi_out < n && pfd[c->pi_out].revents)
		write_pending(c);
	if (ps && ps->revents & (POLLIN | POLLHUP | POLLERR) && c->wout_fd < 0) {
		long r = agent_reader_fill(&c->rd, c->sock);
		if (r < 0 && r != -EAGAIN)
			return fail(c, "exec stream: %s", strerror((int)-r));
	}
	int rc = drain_frames(c);
	if (rc != 0)
		return rc;
	if (c->pi_in >= 0 && c->pi_in < n && pfd[c->pi_in].revents && !c->olen && c->in_fd >= 0)
		read_stdin(c);
	return c->escaped ? 2 : 0;
}

void exec_client_close(struct exec_client *c)
{
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}
