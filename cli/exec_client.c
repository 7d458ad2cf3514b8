/* cli/exec_client.c: one exec in the guest, host side (see exec_client.h). */
#include "cli/exec_client.h"
#include "lib/unix_listen.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int exec_client_connect(const char *uds, unsigned port, int timeout_ms, char *err, size_t errlen)
{
	int fd = unix_connect(uds, false);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", uds, strerror(-fd));
		return -1;
	}
	char line[64];
	int n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write(fd, line, (size_t)n) != n) {
		snprintf(err, errlen, "vsock handshake: %s", strerror(errno));
		goto fail;
	}
	/* Read the reply a byte at a time: nothing after its newline is ours yet. */
	size_t got = 0;
	long deadline = now_ms() + timeout_ms;
	while (got < sizeof(line) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = deadline - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			snprintf(err, errlen, "vsock handshake to guest port %u timed out", port);
			goto fail;
		}
		ssize_t r = read(fd, line + got, 1);
		if (r <= 0) {
			snprintf(err, errlen, "nothing listens on guest port %u", port);
			goto fail;
		}
		if (line[got++] == '\n')
			break;
	}
	line[got] = '\0';
	if (strncmp(line, "OK ", 3) != 0 || line[got - 1] != '\n') {
		snprintf(err, errlen, "vsock handshake: unexpected reply");
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int exec_client_start(struct exec_client *c, int sock, uint32_t flags, uint16_t rows, uint16_t cols,
		      const char *cwd, char *const argv[], char *const env[])
{
	c->sock = sock;
	c->olen = c->ooff = 0;
	c->pending_signal = 0;
	c->pending_winsize = false;
	c->done = c->out_broken = c->err_broken = false;
	c->error[0] = '\0';
	long n = agent_exec_encode(c->ibuf, sizeof(c->ibuf), flags, rows, cols, cwd, argv, env);
	if (n < 0) {
		snprintf(c->error, sizeof(c->error), "the command and environment exceed %d bytes",
			 AGENT_MAX_PAYLOAD);
		return -1;
	}
	int rc = agent_send(sock, AGENT_EXEC, c->ibuf, (size_t)n);
	if (rc < 0) {
		snprintf(c->error, sizeof(c->error), "sending the exec request: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* Queues one frame for non-blocking sending; the buffer must be free. */
static void queue(struct exec_client *c, int type, const void *payload, size_t len)
{
	struct agent_hdr h = { .version = AGENT_VERSION,
			       .type = (uint8_t)type,
			       .len = htole32((uint32_t)len) };
	memcpy(c->obuf, &h, sizeof(h));
	if (len)
		memcpy(c->obuf + sizeof(h), payload, len);
	c->olen = sizeof(h) + len;
	c->ooff = 0;
}

/* Control frames go first whenever the buffer frees up. */
static void queue_control(struct exec_client *c)
{
	if (c->olen)
		return;
	if (c->pending_signal) {
		uint32_t sig = (uint32_t)c->pending_signal;
		c->pending_signal = 0;
		queue(c, AGENT_SIGNAL, &sig, sizeof(sig));
	} else if (c->pending_winsize) {
		uint16_t rc[2] = { c->rows, c->cols };
		c->pending_winsize = false;
		queue(c, AGENT_WINSIZE, rc, sizeof(rc));
	}
}

void exec_client_signal(struct exec_client *c, int sig)
{
	c->pending_signal = sig;
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
	pfd[n++] = (struct pollfd){ .fd = c->sock, .events = POLLIN | (c->olen ? POLLOUT : 0) };
	if (c->in_fd >= 0 && !c->olen)
		pfd[n++] = (struct pollfd){ .fd = c->in_fd, .events = POLLIN };
	return n;
}

static int write_out(int fd, bool *broken, const uint8_t *buf, size_t len)
{
	while (len && !*broken) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*broken = true; /* e.g. `| head`: the session goes on */
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int on_frame(struct exec_client *c, int type, size_t len)
{
	switch (type) {
	case AGENT_STDOUT:
		return write_out(c->out_fd, &c->out_broken, c->ibuf, len);
	case AGENT_STDERR:
		return write_out(c->err_fd, &c->err_broken, c->ibuf, len);
	case AGENT_EXIT:
		memcpy(&c->exit, c->ibuf, sizeof(c->exit));
		c->exit.code = (int32_t)le32toh((uint32_t)c->exit.code);
		c->exit.signal = (int32_t)le32toh((uint32_t)c->exit.signal);
		if (!((c->exit.code >= 0 && c->exit.code <= 255 && c->exit.signal == 0) ||
		      (c->exit.code == -1 && c->exit.signal >= 1 && c->exit.signal <= 64))) {
			snprintf(c->error, sizeof(c->error), "exec agent: invalid exit status");
			return -1;
		}
		c->done = true;
		return 1;
	case AGENT_ERROR: {
		size_t n = len < sizeof(c->error) - 1 ? len : sizeof(c->error) - 1;
		for (size_t i = 0; i < n; i++)
			c->error[i] = c->ibuf[i] < 0x20 ? ' ' : (char)c->ibuf[i];
		c->error[n] = '\0';
		c->done = true;
		return 1;
	}
	}
	snprintf(c->error, sizeof(c->error), "exec agent: unexpected frame type %d", type);
	return -1;
}

int exec_client_handle(struct exec_client *c, const struct pollfd *pfd, int n)
{
	if (pfd[0].revents & POLLOUT && c->olen) {
		ssize_t w = send(c->sock, c->obuf + c->ooff, c->olen - c->ooff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(c->error, sizeof(c->error), "exec stream: %s", strerror(errno));
			return -1;
		}
		if (w > 0 && (c->ooff += (size_t)w) == c->olen)
			c->olen = c->ooff = 0;
		queue_control(c);
	}
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		/* The agent writes whole frames; the rest of one follows promptly. */
		size_t len;
		int type = agent_recv(c->sock, c->ibuf, sizeof(c->ibuf), &len);
		if (type <= 0) {
			snprintf(c->error, sizeof(c->error), "exec stream %s",
				 type == 0 ? "closed before the command's status arrived"
					   : "broken (malformed frame from the guest)");
			return -1;
		}
		int rc = on_frame(c, type, len);
		if (rc != 0)
			return rc;
	}
	if (n > 1 && pfd[1].revents && !c->olen) {
		ssize_t r = read(c->in_fd, c->ibuf, AGENT_MAX_PAYLOAD);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			return 0;
		if (r <= 0) {
			c->in_fd = -1; /* our stdin ended: tell the guest command */
			queue(c, AGENT_STDIN, NULL, 0);
		} else {
			queue(c, AGENT_STDIN, c->ibuf, (size_t)r);
		}
	}
	return 0;
}

void exec_client_close(struct exec_client *c)
{
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}
