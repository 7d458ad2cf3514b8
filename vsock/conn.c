/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/conn.c: the host side of each connection — the table, non-blocking Unix sockets, the
 * "CONNECT <port>" handshake, and the buffer that holds guest data the host has not taken yet
 * (never more than the credit we granted: VSOCK_BUF_ALLOC per connection). */
#include "vsock/conn.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct vsock_conn *vsock_conn_find(struct vsock_dev *d, uint32_t guest_port, uint32_t host_port)
{
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = &d->conns[i];
		if (c->state != VC_FREE && c->state != VC_HANDSHAKE &&
		    c->guest_port == guest_port && c->host_port == host_port)
			return c;
	}
	return NULL;
}

struct vsock_conn *vsock_conn_alloc(struct vsock_dev *d)
{
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = &d->conns[i];
		if (c->state == VC_FREE) {
			memset(c, 0, sizeof(*c));
			c->fd = -1;
			return c;
		}
	}
	return NULL;
}

void vsock_conn_free(struct vsock_dev *d, struct vsock_conn *c)
{
	(void)d;
	if (c->fd >= 0)
		close(c->fd); /* also removes it from epoll */
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void vsock_conn_queue_rst(struct vsock_dev *d, uint32_t guest_port, uint32_t host_port)
{
	if (d->rst_count == VSOCK_RST_RING) {
		/* The guest is not taking rx buffers; its socket will time out instead. */
		d->st.rst_dropped++;
		return;
	}
	unsigned i = (d->rst_head + d->rst_count) % VSOCK_RST_RING;
	d->rst[i].guest_port = guest_port;
	d->rst[i].host_port = host_port;
	d->rst_count++;
}

void vsock_conn_reset(struct vsock_dev *d, struct vsock_conn *c)
{
	d->st.resets++;
	if (c->state == VC_REQUESTED || c->state == VC_ESTABLISHED)
		vsock_conn_queue_rst(d, c->guest_port, c->host_port);
	vsock_conn_free(d, c);
}

int vsock_conn_watch(struct vsock_dev *d, struct vsock_conn *c)
{
	if (d->epfd < 0)
		return 0;
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
		.data.u64 = VSOCK_TAG(VSOCK_TAG_CONN, c - d->conns),
	};
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? -errno : 0;
}

int vsock_conn_connect(const struct vsock_dev *d, uint32_t port)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n = snprintf(path, sizeof(path), "%s_%u", d->uds_prefix, port);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	/* A Unix connect completes at once or fails at once (EAGAIN: backlog full, refused). */
	return unix_connect(path, true);
}

/* Sends without SIGPIPE; returns bytes sent, 0 when fd is full, or -errno. */
static ssize_t send_iov(int fd, const struct iovec *iov, unsigned niov)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = niov };
	for (;;) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
}

/* Copies iov from byte skip on into the ring buffer. */
static void buffer_append(struct vsock_conn *c, const struct iovec *iov, unsigned niov, size_t skip)
{
	for (unsigned i = 0; i < niov; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		p += skip;
		l -= skip;
		skip = 0;
		while (l) {
			uint32_t tail = (c->buf_head + c->buf_len) % VSOCK_BUF_ALLOC;
			size_t k = VSOCK_BUF_ALLOC - tail;
			if (k > l)
				k = l;
			memcpy(c->buf + tail, p, k);
			c->buf_len += (uint32_t)k;
			p += k;
			l -= k;
		}
	}
}

int vsock_conn_write(struct vsock_dev *d, struct vsock_conn *c, const struct iovec *iov,
		     unsigned niov, uint32_t len)
{
	(void)d;
	size_t sent = 0;
	if (c->buf_len == 0) {
		ssize_t n = send_iov(c->fd, iov, niov);
		if (n < 0)
			return (int)n;
		sent = (size_t)n;
		c->fwd_cnt += (uint32_t)sent;
	}
	if (sent < len) {
		if (!c->buf) {
			/* Allocated only while the host lags; freed when it catches up. */
			c->buf = malloc(VSOCK_BUF_ALLOC);
			if (!c->buf)
				return -ENOMEM;
			c->buf_head = 0;
		}
		buffer_append(c, iov, niov, sent);
	}
	return 0;
}

int vsock_conn_flush(struct vsock_dev *d, struct vsock_conn *c)
{
	(void)d;
	while (c->buf_len) {
		struct iovec iov[2];
		unsigned n = 0;
		uint32_t first = VSOCK_BUF_ALLOC - c->buf_head;
		if (first > c->buf_len)
			first = c->buf_len;
		iov[n++] = (struct iovec){ c->buf + c->buf_head, first };
		if (c->buf_len > first)
			iov[n++] = (struct iovec){ c->buf, c->buf_len - first };
		ssize_t k = send_iov(c->fd, iov, n);
		if (k < 0)
			return (int)k;
		if (k == 0)
			return 0;
		c->buf_head = (c->buf_head + (uint32_t)k) % VSOCK_BUF_ALLOC;
		c->buf_len -= (uint32_t)k;
		c->fwd_cnt += (uint32_t)k;
	}
	free(c->buf);
	c->buf = NULL;
	c->buf_head = 0;
	return 0;
}

void vsock_conn_settle(struct vsock_dev *d, struct vsock_conn *c)
{
	if (c->buf_len == 0 && (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND) && !c->wr_shut) {
		/* The guest will send no more: the host reader sees EOF, after every byte. */
		shutdown(c->fd, SHUT_WR);
		c->wr_shut = true;
	}
	if (c->buf_len == 0 &&
	    c->peer_shutdown == (VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV)) {
		/* The guest closed: it waits for our RST to finish (as Linux's vhost does). */
		vsock_conn_queue_rst(d, c->guest_port, c->host_port);
		vsock_conn_free(d, c);
		return;
	}
	/* The guest's idea of our free space is VSOCK_BUF_ALLOC - (tx_cnt - fwd_cnt_sent); tell
	 * it about freed space before it runs dry, not after every write. */
	uint32_t guest_view_used = c->tx_cnt - c->fwd_cnt_sent;
	if (c->fwd_cnt != c->fwd_cnt_sent && guest_view_used > VSOCK_BUF_ALLOC / 2)
		c->pending |= VC_P_CREDIT;
}

/* Strict: "CONNECT " then 1-10 decimal digits without a leading zero, fitting u32, then \n. */
static int parse_connect(const char *s, size_t len, uint32_t *port)
{
	static const char kw[] = "CONNECT ";
	size_t kl = sizeof(kw) - 1;
	if (len < kl + 2 || memcmp(s, kw, kl) != 0 || s[len - 1] != '\n')
		return -1;
	const char *p = s + kl, *end = s + len - 1;
	if (end - p > 10 || (*p == '0' && end - p > 1))
		return -1;
	uint64_t v = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*port = (uint32_t)v;
	return 0;
}

int vsock_conn_read_connect(struct vsock_conn *c, uint32_t *port)
{
	/* Peek first: bytes after the newline are the stream's and must stay in the socket. */
	ssize_t n;
	do
		n = recv(c->fd, c->line, sizeof(c->line), MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0)
		return -1;
	char *nl = memchr(c->line, '\n', (size_t)n);
	if (!nl)
		return (size_t)n < sizeof(c->line) ? 0 : -1;
	size_t len = (size_t)(nl - c->line) + 1;
	if (recv(c->fd, c->line, len, MSG_DONTWAIT) != (ssize_t)len)
		return -1;
	return parse_connect(c->line, len, port) == 0 ? 1 : -1;
}
