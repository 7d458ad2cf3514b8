/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_io.c: the proxy's bytes — both sides' reads and writes (plain or TLS) and the
 * upstream connection. */
#include "broker/proxy_internal.h"

#include "broker/h2_up.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(PROXY_IO_AGAIN == H2_UP_AGAIN, "an HTTP/2 upstream's again is passed on as it is");

#include "broker/dest.h"
#include "broker/upstream_tls.h"
#include "lib/mono.h"

/* Sends all of B on one side of the connection (its socket FD, or its TLS when SSL is set),
 * adding what went out to *SENT when given. */
static int side_send(int fd, SSL *ssl, const void *b, size_t n, size_t *sent)
{
	const char *p = b;

	while (n) {
		ssize_t w = ssl ? SSL_write(ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n))
				: send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && !ssl && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		if (sent)
			*sent += (size_t)w;
	}
	return 0;
}

/* One read on one side: bytes, 0 at its end, -1 on failure or timeout. */
static ssize_t side_read(int fd, SSL *ssl, void *b, size_t n)
{
	if (ssl) {
		int r = SSL_read(ssl, b, (int)n);

		if (r > 0)
			return r;
		return SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t r = recv(fd, b, n, 0);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

int proxy_io_up_write(struct conn *c, const void *b, size_t n)
{
	if (c->up_h2) {
		if (h2_up_write(c->up_h2, b, n)) {
			proxy_fail(c, 502, "upstream %s over HTTP/2: %s", c->host,
				   h2_up_error(c->up_h2));
			return -EIO;
		}
		c->bytes_up += n;
		return 0;
	}
	return side_send(c->up_fd, c->up_ssl, b, n, &c->bytes_up);
}

/* Bytes toward the guest gather in wbuf and go out in one write (one TLS record in a tunnel)
 * before the broker next waits on either side, or when wbuf is full. */
int proxy_io_client_write(struct conn *c, const void *b, size_t n)
{
	c->bytes_down += n; /* counted when written here: the log line may come before the flush */
	if (c->wlen + n > sizeof(c->wbuf) && proxy_io_client_flush(c))
		return -EIO;
	if (n > sizeof(c->wbuf))
		return side_send(c->fd, c->cl_ssl, b, n, NULL);
	memcpy(c->wbuf + c->wlen, b, n);
	c->wlen += n;
	return 0;
}

int proxy_io_client_flush(struct conn *c)
{
	int rc = c->wlen ? side_send(c->fd, c->cl_ssl, c->wbuf, c->wlen, NULL) : 0;

	c->wlen = 0;
	return rc;
}

/* Reads flush what waits for the guest first: the broker never waits on either side with
 * bytes for the guest held back. */
ssize_t proxy_io_client_read(struct conn *c, void *b, size_t n)
{
	return proxy_io_client_flush(c) ? -1 : side_read(c->fd, c->cl_ssl, b, n);
}

ssize_t proxy_io_up_read(struct conn *c, void *b, size_t n)
{
	ssize_t got;

	if (proxy_io_client_flush(c))
		return -1;
	got = c->up_h2 ? h2_up_read(c->up_h2, b, n) : side_read(c->up_fd, c->up_ssl, b, n);
	/* After the read: the upstream could only echo a value another connection sent it once
	 * that connection had read it, which changed the source's number first. */
	if (got > 0)
		proxy_secret_catch_up(c);
	return got;
}

int proxy_io_up_wait(struct conn *c, int ms)
{
	struct pollfd p[2] = { { .fd = c->up_fd, .events = POLLIN }, { .fd = c->fd } };
	int64_t until = mono_ms() + ms;

	if (proxy_io_client_flush(c))
		return -1;
	/* Records OpenSSL has read but not yet returned are not on the socket any more. */
	if ((c->up_ssl && SSL_has_pending(c->up_ssl)) || (c->up_h2 && h2_up_ready(c->up_h2)))
		return 1;
	for (;;) {
		int64_t left = until - mono_ms();
		int r = poll(p, 2, left > 0 ? (int)left : 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		/* A hang-up, not a half close: a client may shut its sending side and read on. */
		if (p[1].revents & (POLLHUP | POLLERR))
			return -1;
		if (p[0].revents)
			return 1;
		if (left <= 0)
			return 0;
	}
}

void proxy_io_up_close(struct conn *c)
{
	h2_up_free(c->up_h2);
	c->up_h2 = NULL;
	tlsup_close(c->up_ssl);
	if (c->up_fd >= 0)
		close(c->up_fd);
	c->up_ssl = NULL;
	c->up_fd = -1;
	c->up_dest = NULL;
}

void proxy_drop_unread(int fd)
{
	char buf[4096];

	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
}

void proxy_io_rcv_timeout(struct conn *c, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (ms == c->rcv_ms)
		return;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	c->rcv_ms = ms;
}

void proxy_io_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int proxy_io_up_open(struct conn *c)
{
	char why[300];

	c->up_fd =
		dest_connect(c->dest, c->cfg->policy, c->cfg->connect_timeout_ms, why, sizeof(why));
	if (c->up_fd < 0) {
		proxy_fail(c, c->up_fd == DEST_REFUSED ? 403 : 502, "%s", why);
		if (c->up_fd == DEST_REFUSED)
			c->decision = "deny"; /* deny_cidrs on the address the name resolved to */
		c->up_fd = -1;
		return -1;
	}
	proxy_io_timeouts(c->up_fd, c->cfg->io_timeout_ms);
	if (c->dest->scheme == RULES_HTTPS) {
		c->up_ssl = tlsup_connect(c->cfg->tls, c->cfg->resume, c->up_fd, c->dest->host,
					  c->dest->port, c->up_offer_h2, why, sizeof(why));
		if (!c->up_ssl) {
			proxy_fail(c, 502, "%s", why);
			proxy_io_up_close(c);
			return -1;
		}
		if (c->up_offer_h2 && tlsup_is_h2(c->up_ssl) &&
		    !(c->up_h2 = h2_up_new(c->up_ssl))) {
			proxy_fail(c, 502, "out of memory for HTTP/2 toward %s", c->dest->host);
			proxy_io_up_close(c);
			return -1;
		}
	}
	c->up_dest = c->dest;
	c->up_reused = 0;
	return 0;
}
