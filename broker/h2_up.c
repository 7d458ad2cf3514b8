/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_up.c: one request over HTTP/2 to an upstream (h2_up.h), on libnghttp2's client
 * session over the upstream's blocking TLS. The request's HTTP/1.1 text is parsed as the
 * proxy writes it (it built it: origin form, Host, its framing) and submitted as HEADERS and
 * DATA; the answer is written out as the HTTP/1.1 text an upstream of that version would have
 * sent, which the proxy's response path then checks, scrubs and relays like any other. */
#include "broker/h2_up.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>

#include "broker/h2_fields.h"

#define BODY_AHEAD (256 * 1024) /* request body held back by the upstream's window */
#define OUT_MAX	   (1 << 20)	/* answer bytes not yet read (one TLS record's worth, framed) */

struct h2_up {
	SSL *ssl;
	nghttp2_session *ss;
	int32_t id; /* the request's stream, 0 until submitted */
	/* The request, as the proxy writes it. */
	http_parser rq;
	struct h2_fields rqf;
	char url[PROXY_MAX_URL + 1];
	size_t url_len;
	struct h2_buf body;
	int body_done, deferred, is_head;
	/* The answer, as HTTP/1.1. */
	struct h2_buf fields; /* the current header block's fields as "name: value\r\n" */
	struct h2_buf out;
	int status, headed, chunked, ended, broken;
	char why[240];
};

__attribute__((format(printf, 2, 3))) static int fail(struct h2_up *u, const char *fmt, ...)
{
	va_list ap;

	if (!u->broken) {
		va_start(ap, fmt);
		vsnprintf(u->why, sizeof(u->why), fmt, ap);
		va_end(ap);
	}
	u->broken = 1;
	return -1;
}

/* --- the request ------------------------------------------------------------------------ */

static ssize_t body_read(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	struct h2_up *u = src->ptr;

	(void)ss, (void)id, (void)user;
	return h2_buf_provide(&u->body, u->body_done, &u->deferred, buf, len, flags);
}

static void body_wake(struct h2_up *u)
{
	if (u->deferred && u->id > 0) {
		u->deferred = 0;
		nghttp2_session_resume_data(u->ss, u->id);
	}
}

static int rq_url(http_parser *p, const char *at, size_t len)
{
	struct h2_up *u = p->data;

	if (u->url_len + len > PROXY_MAX_URL)
		return fail(u, "the request target is too long");
	memcpy(u->url + u->url_len, at, len);
	u->url_len += len;
	return 0;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
	struct h2_up *u = p->data;

	return h2_fields_part(&u->rqf, at, len, 0) ? fail(u, "the request's fields are too large")
						   : 0;
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
	struct h2_up *u = p->data;

	return h2_fields_part(&u->rqf, at, len, 1) ? fail(u, "the request's fields are too large")
						   : 0;
}

static int rq_headers(http_parser *p)
{
	struct h2_up *u = p->data;
	nghttp2_nv nv[5 + H2_FIELDS_MAX];
	nghttp2_data_provider prd = { .source.ptr = u, .read_callback = body_read };
	const char *method = http_method_str((enum http_method)p->method);
	const char *host;
	size_t hl, n = 0;
	int body;

	if (p->upgrade || p->method == HTTP_CONNECT)
		return fail(u, "an upgrade cannot be carried over HTTP/2");
	if (!(host = h2_fields_get(&u->rqf, "host", &hl)))
		return fail(u, "the request has no Host");
#define NV(n_, v_, vl_)                                                                            \
	((nghttp2_nv){ (uint8_t *)(n_), (uint8_t *)(v_), strlen(n_), (vl_), NGHTTP2_NV_FLAG_NONE })
	nv[n++] = NV(":method", method, strlen(method));
	nv[n++] = NV(":scheme", "https", 5);
	nv[n++] = NV(":authority", host, hl);
	nv[n++] = NV(":path", u->url, u->url_len);
	n += h2_fields_nv(&u->rqf, 0, u->rqf.n, nv + n);
	nv[n++] = NV("te", "trailers", 8); /* what gRPC servers ask for; trailers are relayed */
#undef NV
	body = (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
	u->is_head = p->method == HTTP_HEAD;
	u->id = nghttp2_submit_request(u->ss, NULL, nv, n, body ? &prd : NULL, u);
	if (u->id < 0)
		return fail(u, "the request could not be sent over HTTP/2: %s",
			    nghttp2_strerror(u->id));
	return 0;
}

static int rq_body(http_parser *p, const char *at, size_t len)
{
	struct h2_up *u = p->data;

	if (h2_buf_add(&u->body, at, len))
		return fail(u, "out of memory for the request's body");
	body_wake(u);
	return 0;
}

static int rq_complete(http_parser *p)
{
	struct h2_up *u = p->data;

	u->body_done = 1;
	body_wake(u);
	http_parser_pause(p, 1); /* one request per connection */
	return 0;
}

static const http_parser_settings rq_settings = {
	.on_url = rq_url,
	.on_header_field = rq_field,
	.on_header_value = rq_value,
	.on_headers_complete = rq_headers,
	.on_body = rq_body,
	.on_message_complete = rq_complete,
};

/* --- the answer ------------------------------------------------------------------------- */

static int out_str(struct h2_up *u, const char *s)
{
	return h2_buf_str(&u->out, s) ? fail(u, "the upstream's answer is too large") : 0;
}

static int on_header(nghttp2_session *ss, const nghttp2_frame *fr, const uint8_t *name, size_t nlen,
		     const uint8_t *val, size_t vlen, uint8_t flags, void *user)
{
	struct h2_up *u = user;

	(void)ss, (void)flags;
	if (fr->hd.stream_id != u->id)
		return 0;
	if (nlen == 7 && !memcmp(name, ":status", 7)) {
		u->status = vlen == 3 ? atoi((const char *)val) : 0;
		return 0;
	}
	/* Content-Length goes: the body comes chunked. nghttp2 has checked names and values. */
	if (name[0] == ':' || (nlen == 14 && !memcmp(name, "content-length", 14)))
		return 0;
	if (h2_buf_add(&u->fields, name, nlen) || h2_buf_str(&u->fields, ": ") ||
	    h2_buf_add(&u->fields, val, vlen) || h2_buf_str(&u->fields, "\r\n")) {
		fail(u, "the upstream's fields are too large");
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return 0;
}

static int finish(struct h2_up *u)
{
	if (u->chunked && (out_str(u, "0\r\n") || h2_buf_add(&u->out, u->fields.p, u->fields.len) ||
			   out_str(u, "\r\n")))
		return fail(u, "the upstream's trailers are too large");
	u->fields.len = u->fields.off = 0;
	u->ended = 1;
	return 0;
}

/* A head: an interim one (1xx) or the answer's own, as HTTP/1.1. */
static int head(struct h2_up *u)
{
	char line[48];
	int st = u->status;

	if (st < 100 || st > 599 || st == 101)
		return fail(u, "the upstream sent a malformed HTTP/2 answer (status %d)", st);
	snprintf(line, sizeof(line), "HTTP/1.1 %d \r\n", st);
	u->chunked = st >= 200 && !u->is_head && st != 204 && st != 304;
	if (out_str(u, line) || h2_buf_add(&u->out, u->fields.p, u->fields.len) ||
	    (u->chunked && out_str(u, "Transfer-Encoding: chunked\r\n")) ||
	    out_str(u, st >= 200 ? "Connection: close\r\n\r\n" : "\r\n"))
		return -1;
	u->fields.len = u->fields.off = 0;
	u->headed = st >= 200;
	u->status = 0;
	return 0;
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *fr, void *user)
{
	struct h2_up *u = user;
	int end = !!(fr->hd.flags & NGHTTP2_FLAG_END_STREAM);

	(void)ss;
	if (fr->hd.stream_id != u->id || u->broken)
		return 0;
	if (fr->hd.type == NGHTTP2_HEADERS && !u->headed && head(u))
		return 0;
	if ((fr->hd.type == NGHTTP2_HEADERS || fr->hd.type == NGHTTP2_DATA) && end) {
		if (!u->headed)
			return fail(u, "the upstream ended the stream without an answer"), 0;
		finish(u);
	}
	return 0;
}

static int on_data(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *user)
{
	struct h2_up *u = user;
	char size[24];

	(void)ss, (void)flags;
	if (id != u->id || u->broken || !len)
		return 0;
	if (!u->headed || !u->chunked)
		return fail(u, "the upstream sent a body where none belongs"), 0;
	snprintf(size, sizeof(size), "%zx\r\n", len);
	if (out_str(u, size) || h2_buf_add(&u->out, data, len) || out_str(u, "\r\n"))
		return fail(u, "the upstream's answer is too large"), 0;
	return 0;
}

static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t err, void *user)
{
	struct h2_up *u = user;

	(void)ss;
	if (id == u->id && !u->ended)
		fail(u, "the upstream reset the stream (%s)", nghttp2_http2_strerror(err));
	return 0;
}

/* --- I/O ----------------------------------------------------------------------------------- */

static int write_all(struct h2_up *u, const uint8_t *d, size_t n)
{
	while (n) {
		int w = SSL_write(u->ssl, d, (int)n);

		if (w <= 0) {
			ERR_clear_error();
			return fail(u, "the upstream closed its HTTP/2 connection");
		}
		d += w;
		n -= (size_t)w;
	}
	return 0;
}

/* What nghttp2 has to send, gathered into TLS records of up to 16 KiB: it hands frames over
 * one by one, and a record each would be a packet each (TCP_NODELAY is set upstream). */
static int flush(struct h2_up *u)
{
	uint8_t rec[16384];
	size_t have = 0;

	for (;;) {
		const uint8_t *d;
		ssize_t n = nghttp2_session_mem_send(u->ss, &d);

		if (n < 0)
			return fail(u, "HTTP/2 toward the upstream failed: %s",
				    nghttp2_strerror((int)n));
		if (have && (!n || have + (size_t)n > sizeof(rec))) {
			if (write_all(u, rec, have))
				return -1;
			have = 0;
		}
		if (!n)
			return 0;
		if ((size_t)n > sizeof(rec)) {
			if (write_all(u, d, (size_t)n))
				return -1;
		} else {
			memcpy(rec + have, d, (size_t)n);
			have += (size_t)n;
		}
	}
}

/* One read of the upstream's TLS (it blocks up to the socket's receive timeout). */
static int recv_once(struct h2_up *u)
{
	uint8_t buf[16384];
	int r = SSL_read(u->ssl, buf, sizeof(buf));

	if (r <= 0) {
		int e = SSL_get_error(u->ssl, r);

		ERR_clear_error();
		return fail(u,
			    e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL
				    ? "the upstream closed its HTTP/2 connection before its answer "
				      "ended"
				    : "reading from the upstream failed");
	}
	if (nghttp2_session_mem_recv(u->ss, buf, (size_t)r) < 0)
		return fail(u, "the upstream broke HTTP/2");
	return u->broken ? -1 : flush(u);
}

struct h2_up *h2_up_new(SSL *ssl)
{
	struct h2_up *u = calloc(1, sizeof(*u));
	nghttp2_session_callbacks *cb;
	nghttp2_settings_entry iv[] = { { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 } };
	int rc;

	if (!u || nghttp2_session_callbacks_new(&cb)) {
		free(u);
		return NULL;
	}
	u->ssl = ssl;
	u->body.max = BODY_AHEAD + 65536;
	u->fields.max = H2_HEAD_MAX;
	u->out.max = OUT_MAX;
	http_parser_init(&u->rq, HTTP_REQUEST);
	u->rq.data = u;
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	rc = nghttp2_session_client_new(&u->ss, cb, u);
	nghttp2_session_callbacks_del(cb);
	if (rc || nghttp2_submit_settings(u->ss, NGHTTP2_FLAG_NONE, iv, 1)) {
		h2_up_free(u);
		return NULL;
	}
	return u;
}

void h2_up_free(struct h2_up *u)
{
	if (!u)
		return;
	if (u->ss)
		nghttp2_session_del(u->ss);
	h2_buf_free(&u->body);
	h2_buf_free(&u->fields);
	h2_buf_free(&u->out);
	free(u);
}

int h2_up_write(struct h2_up *u, const void *b, size_t n)
{
	size_t done;

	if (u->broken)
		return -1;
	done = http_parser_execute(&u->rq, &rq_settings, b, n);
	if (u->broken)
		return -1;
	if (done != n || (HTTP_PARSER_ERRNO(&u->rq) != HPE_OK &&
			  !(HTTP_PARSER_ERRNO(&u->rq) == HPE_PAUSED && u->body_done)))
		return fail(u, "the request could not be carried over HTTP/2 (%s)",
			    http_errno_description(HTTP_PARSER_ERRNO(&u->rq)));
	if (flush(u))
		return -1;
	/* What the upstream's window holds back waits here, a little of it: past that, its
	 * WINDOW_UPDATE (or its answer) is read before the proxy may write more. */
	while (h2_buf_left(&u->body) > BODY_AHEAD && !u->ended && !u->broken)
		if (recv_once(u))
			return -1;
	return 0;
}

ssize_t h2_up_read(struct h2_up *u, void *b, size_t n)
{
	if (!h2_buf_left(&u->out) && !u->ended && !u->broken) {
		if (flush(u) || recv_once(u))
			return -1;
		while (!h2_buf_left(&u->out) && !u->ended && SSL_has_pending(u->ssl))
			if (recv_once(u))
				return -1;
	}
	if (h2_buf_left(&u->out))
		return (ssize_t)h2_buf_take(&u->out, b, n);
	if (u->broken)
		return -1;
	return u->ended ? 0 : H2_UP_AGAIN;
}

int h2_up_ready(const struct h2_up *u)
{
	return h2_buf_left(&u->out) || u->ended || u->broken;
}

const char *h2_up_error(const struct h2_up *u)
{
	return u->broken ? u->why : NULL;
}
