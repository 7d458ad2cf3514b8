/* broker/proxy_io.c: the proxy's bytes — both sides' reads and writes (plain or TLS), the
 * upstream connection, and the bounded store that collects a message head. */
#include "broker/proxy_conn.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "broker/dest.h"
#include "broker/upstream_tls.h"

int hdr_is(const struct head *h, size_t i, const char *name)
{
	return h->h[i].name_len == strlen(name) &&
	       !strncasecmp(h->arena + h->h[i].name_off, name, h->h[i].name_len);
}

const char *hdr_val(const struct head *h, size_t i)
{
	return h->arena + h->h[i].val_off;
}

void set_err(struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void set_err(struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (c->err_status)
		return;
	c->err_status = status;
	va_start(ap, fmt);
	vsnprintf(c->err_msg, sizeof(c->err_msg), fmt, ap);
	va_end(ap);
}

static int client_send(struct conn *c, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = c->cl_ssl ? SSL_write(c->cl_ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n))
				      : send(c->fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && !c->cl_ssl && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int up_write(struct conn *c, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = c->up_ssl ? SSL_write(c->up_ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n))
				      : send(c->up_fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && !c->up_ssl && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		c->bytes_up += (size_t)w;
	}
	return 0;
}

/* Bytes toward the guest gather in wbuf and go out in one write (one TLS record in a tunnel)
 * before the broker next waits on either side, or when wbuf is full. */
int client_write(struct conn *c, const void *b, size_t n)
{
	c->bytes_down += n; /* counted when written here: the log line may come before the flush */
	if (c->wlen + n > sizeof(c->wbuf) && client_flush(c))
		return -EIO;
	if (n > sizeof(c->wbuf))
		return client_send(c, b, n);
	memcpy(c->wbuf + c->wlen, b, n);
	c->wlen += n;
	return 0;
}

int client_flush(struct conn *c)
{
	int rc = c->wlen ? client_send(c, c->wbuf, c->wlen) : 0;

	c->wlen = 0;
	return rc;
}

ssize_t client_read(struct conn *c, void *b, size_t n)
{
	if (client_flush(c))
		return -1;
	if (c->cl_ssl) {
		int r = SSL_read(c->cl_ssl, b, (int)n);

		if (r > 0)
			return r;
		return SSL_get_error(c->cl_ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t r = recv(c->fd, b, n, 0);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

ssize_t up_read(struct conn *c, void *b, size_t n)
{
	if (client_flush(c))
		return -1;
	if (c->up_ssl) {
		int r = SSL_read(c->up_ssl, b, (int)n);

		if (r > 0)
			return r;
		return SSL_get_error(c->up_ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t r = recv(c->up_fd, b, n, 0);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

void up_close(struct conn *c)
{
	tlsup_close(c->up_ssl);
	if (c->up_fd >= 0)
		close(c->up_fd);
	c->up_ssl = NULL;
	c->up_fd = -1;
	c->up_dest = NULL;
}

void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* --- head accumulation (shared by request and response parsers) ------------------------ */

int head_append(struct head *h, const char *at, size_t len, size_t *field_len)
{
	/* One byte stays free after every piece for the terminating NUL. */
	if (len >= sizeof(h->arena) - h->used)
		return -1;
	memcpy(h->arena + h->used, at, len);
	h->used += len;
	*field_len += len;
	h->arena[h->used] = 0;
	return 0;
}

void head_reset(struct head *h)
{
	h->arena[0] = 0;
	h->used = h->url_off = h->url_len = h->n = 0;
	h->in_value = 0;
}

int on_hfield(struct head *h, const char *at, size_t len)
{
	if (h->in_value || !h->n) {
		if (h->n == PROXY_MAX_HEADERS)
			return -2;
		if (h->n)
			h->used++; /* keep the previous value's NUL */
		h->h[h->n].name_off = h->used;
		h->h[h->n].name_len = h->h[h->n].val_len = 0;
		h->h[h->n].val_off = 0;
		h->n++;
		h->in_value = 0;
	}
	return head_append(h, at, len, &h->h[h->n - 1].name_len);
}

int on_hvalue(struct head *h, const char *at, size_t len)
{
	if (!h->n)
		return -1;
	if (!h->in_value) {
		h->used++; /* the name's NUL */
		if (h->used >= sizeof(h->arena))
			return -1;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
		h->in_value = 1;
	}
	return head_append(h, at, len, &h->h[h->n - 1].val_len);
}

int head_done(struct head *h)
{
	if (h->n && !h->in_value) { /* a name without value: give it an empty one */
		if (h->used + 1 >= sizeof(h->arena))
			return -1;
		h->used++;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
	}
	return 0;
}

int upstream_open(struct conn *c)
{
	char why[300];

	c->up_fd =
		dest_connect(c->dest, c->cfg->policy, c->cfg->connect_timeout_ms, why, sizeof(why));
	if (c->up_fd < 0) {
		set_err(c, c->up_fd == DEST_REFUSED ? 403 : 502, "%s", why);
		c->up_fd = -1;
		return -1;
	}
	set_timeouts(c->up_fd, c->cfg->io_timeout_ms);
	if (c->dest->scheme == RULES_HTTPS) {
		c->up_ssl = tlsup_connect(c->cfg->tls, c->up_fd, c->dest->host, why, sizeof(why));
		if (!c->up_ssl) {
			set_err(c, 502, "%s", why);
			up_close(c);
			return -1;
		}
	}
	c->up_dest = c->dest;
	c->up_reused = 0;
	return 0;
}
