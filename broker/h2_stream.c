/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_stream.c: one HTTP/2 stream (h2_stream.h). Its request is written as the HTTP/1.1
 * request an HTTP/1.1 tunnel would carry, so that one code path decides, credentials, scrubs
 * and records both; its answer, already scrubbed by that path, is parsed back into HTTP/2.
 * nghttp2's HTTP messaging rules have checked the fields (RFC 9113 8.2, 8.3); what could
 * still change the meaning of the HTTP/1.1 text (a CR, LF or NUL, a space in the path) is
 * refused here as well. */
#include "broker/h2_stream.h"

#include "broker/proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct h2_stream *h2_stream_new(int32_t id)
{
	struct h2_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->id = id;
	s->fd = -1;
	s->fields.max = s->cookie.max = s->path.max = s->authority.max = s->host.max = H2_HEAD_MAX;
	s->rq.max = H2_HEAD_MAX + 2 * 65536; /* a head, and at most a window of body */
	s->out.max = H2_OUT_MAX + 16384;
	return s;
}

void h2_stream_free(struct h2_stream *s)
{
	if (!s)
		return;
	h2_buf_free(&s->fields);
	h2_buf_free(&s->cookie);
	h2_buf_free(&s->path);
	h2_buf_free(&s->authority);
	h2_buf_free(&s->host);
	h2_buf_free(&s->rq);
	h2_buf_free(&s->out);
	free(s);
}

enum { IN_VALUE, IN_WORD, IN_NAME };
enum {
	SEEN_METHOD = 1,
	SEEN_SCHEME = 2,
	SEEN_PATH = 4,
	SEEN_AUTHORITY = 8,
	SEEN_HOST = 16,
	SEEN_REGULAR = 32,
};

/* Bytes that would end or change a field, a word or a line in HTTP/1.1 text: in a value,
 * control bytes but HTAB (CR, LF and NUL among them) and white space at either end; in a word
 * of the request line (method, target) or the authority, any space or non-ASCII byte as well;
 * in a field name, also a colon, and no name is empty. */
static int unsafe(const uint8_t *p, size_t n, int where)
{
	if (where == IN_NAME && !n)
		return 1;
	/* A value has no white space at either end (RFC 9113 8.2.1): HTTP/1.1 would drop it. */
	if (where == IN_VALUE && n &&
	    (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		return 1;
	for (size_t i = 0; i < n; i++)
		if ((p[i] < ' ' && p[i] != '\t') || p[i] == 0x7f ||
		    (where != IN_VALUE && (p[i] <= ' ' || p[i] >= 0x7f)) ||
		    (where == IN_NAME && p[i] == ':'))
			return 1;
	return 0;
}

static int is(const uint8_t *name, size_t nlen, const char *lit)
{
	return nlen == strlen(lit) && !memcmp(name, lit, nlen);
}

/* Once each (RFC 9113 8.3), and before every regular field. */
static int pseudo_once(struct h2_stream *s, unsigned bit)
{
	if ((s->seen & bit) || (s->seen & SEEN_REGULAR))
		return -1;
	s->seen |= bit;
	return 0;
}

int h2_stream_field(struct h2_stream *s, const uint8_t *name, size_t nlen, const uint8_t *val,
		    size_t vlen)
{
	s->field_bytes += nlen + vlen + 4;
	if (s->field_bytes > H2_HEAD_MAX || unsafe(val, vlen, IN_VALUE))
		return -1;
	if (nlen && name[0] == ':') {
		if (is(name, nlen, ":method")) {
			if (pseudo_once(s, SEEN_METHOD) || vlen >= sizeof(s->method) ||
			    unsafe(val, vlen, IN_NAME))
				return -1;
			memcpy(s->method, val, vlen);
			s->method[vlen] = 0;
			s->is_head = !strcmp(s->method, "HEAD");
			return 0;
		}
		if (is(name, nlen, ":scheme")) {
			s->scheme_ok = vlen == 5 && !memcmp(val, "https", 5);
			return pseudo_once(s, SEEN_SCHEME);
		}
		if (is(name, nlen, ":path"))
			return pseudo_once(s, SEEN_PATH) || unsafe(val, vlen, IN_WORD) ||
			       h2_buf_add(&s->path, val, vlen);
		if (is(name, nlen, ":authority"))
			return pseudo_once(s, SEEN_AUTHORITY) || unsafe(val, vlen, IN_WORD) ||
			       h2_buf_add(&s->authority, val, vlen);
		return -1; /* :protocol, or one nghttp2 would not pass */
	}
	s->seen |= SEEN_REGULAR;
	if (unsafe(name, nlen, IN_NAME))
		return -1;
	if (is(name, nlen, "host")) {
		if (s->seen & SEEN_HOST || unsafe(val, vlen, IN_WORD))
			return -1;
		s->seen |= SEEN_HOST;
		return h2_buf_add(&s->host, val, vlen);
	}
	if (is(name, nlen, "cookie"))
		return (s->cookie.len && vlen ? h2_buf_str(&s->cookie, "; ") : 0) ||
		       h2_buf_add(&s->cookie, val, vlen);
	s->has_cl |= is(name, nlen, "content-length");
	return h2_buf_add(&s->fields, name, nlen) || h2_buf_str(&s->fields, ": ") ||
	       h2_buf_add(&s->fields, val, vlen) || h2_buf_str(&s->fields, "\r\n");
}

static int same(const struct h2_buf *a, const struct h2_buf *b)
{
	return a->len == b->len && !strncasecmp(a->p, b->p, a->len);
}

int h2_stream_head(struct h2_stream *s, int end_stream, char *why, size_t whylen)
{
	const struct h2_buf *host = s->authority.len ? &s->authority : &s->host;
	char line[64];

	if (!strcmp(s->method, "CONNECT")) {
		snprintf(why, whylen, "CONNECT inside a tunnel");
		return 400;
	}
	if (!s->scheme_ok) {
		snprintf(why, whylen, "requests in a tunnel are https (:scheme)");
		return 400;
	}
	if (!host->len) {
		snprintf(why, whylen, "a request in a tunnel needs :authority or Host");
		return 400;
	}
	if (s->authority.len && s->host.len && !same(&s->authority, &s->host)) {
		snprintf(why, whylen, ":authority and Host name different hosts");
		return 400;
	}
	if (!s->method[0] || !s->path.len) {
		snprintf(why, whylen, "a request needs :method and :path");
		return 400;
	}
	s->rq_chunked = !end_stream && !s->has_cl;
	snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: ");
	if (h2_buf_str(&s->rq, s->method) || h2_buf_str(&s->rq, " ") ||
	    h2_buf_add(&s->rq, s->path.p, s->path.len) || h2_buf_str(&s->rq, line) ||
	    h2_buf_add(&s->rq, host->p, host->len) || h2_buf_str(&s->rq, "\r\n") ||
	    (s->fields.len && h2_buf_add(&s->rq, s->fields.p, s->fields.len)) ||
	    (s->cookie.len &&
	     (h2_buf_str(&s->rq, "Cookie: ") || h2_buf_add(&s->rq, s->cookie.p, s->cookie.len) ||
	      h2_buf_str(&s->rq, "\r\n"))) ||
	    (s->rq_chunked && h2_buf_str(&s->rq, "Transfer-Encoding: chunked\r\n")) ||
	    h2_buf_str(&s->rq, "Connection: close\r\n\r\n")) {
		snprintf(why, whylen, "the request's fields are too large");
		return 431;
	}
	s->rq_ended = end_stream;
	s->dispatched = 1;
	h2_buf_free(&s->fields);
	h2_buf_free(&s->cookie);
	return 0;
}

int h2_stream_body(struct h2_stream *s, const uint8_t *data, size_t len)
{
	char size[24];

	if (!len)
		return 0;
	if (s->rq_chunked) {
		snprintf(size, sizeof(size), "%zx\r\n", len);
		if (h2_buf_str(&s->rq, size))
			return -1;
	}
	if (h2_buf_add(&s->rq, data, len) || (s->rq_chunked && h2_buf_str(&s->rq, "\r\n")))
		return -1;
	s->unconsumed += len;
	return 0;
}

int h2_stream_body_end(struct h2_stream *s)
{
	if (s->rq_ended)
		return 0;
	s->rq_ended = 1;
	/* Trailers from the guest are never forwarded (as in HTTP/1.1: docs/THREAT-MODEL.md). */
	return s->rq_chunked ? h2_buf_str(&s->rq, "0\r\n\r\n") : 0;
}

/* --- the answer ---------------------------------------------------------------------- */

struct answer_ctx {
	struct h2_stream *s;
	nghttp2_session *ss;
};

static ssize_t data_read(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	struct h2_stream *s = src->ptr;
	ssize_t n = h2_buf_provide(&s->out, s->done, &s->deferred, buf, len, flags);
	nghttp2_nv nv[H2_FIELDS_MAX];
	size_t nt;

	(void)user;
	if (*flags & NGHTTP2_DATA_FLAG_EOF) {
		nt = h2_fields_nv(&s->ans, s->trailers_from, s->ans.n, nv);
		if (nt && !nghttp2_submit_trailer(ss, id, nv, nt))
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
	}
	return n;
}

static void wake(struct answer_ctx *a)
{
	if (a->s->deferred) {
		a->s->deferred = 0;
		nghttp2_session_resume_data(a->ss, a->s->id);
	}
}

static int on_field(http_parser *p, const char *at, size_t len)
{
	return h2_fields_part(&((struct answer_ctx *)p->data)->s->ans, at, len, 0);
}

static int on_value(http_parser *p, const char *at, size_t len)
{
	return h2_fields_part(&((struct answer_ctx *)p->data)->s->ans, at, len, 1);
}

static int on_headers(http_parser *p)
{
	struct answer_ctx *a = p->data;
	struct h2_stream *s = a->s;
	nghttp2_nv nv[H2_FIELDS_MAX + 1];
	char status[8];
	int st = p->status_code;
	nghttp2_data_provider prd = { .source.ptr = s, .read_callback = data_read };
	int no_body;

	if (st < 100 || st > 599 || st == 101)
		return -1; /* no Upgrade in HTTP/2 (RFC 9113 8.6) */
	snprintf(status, sizeof(status), "%d", st);
	nv[0] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)status, 7, strlen(status),
			      NGHTTP2_NV_FLAG_NONE };
	size_t n = 1 + h2_fields_nv(&s->ans, 0, s->ans.n, nv + 1);
	if (st < 200) { /* 100 Continue, 103 Early Hints: a head before the answer's */
		if (nghttp2_submit_headers(a->ss, NGHTTP2_FLAG_NONE, s->id, NULL, nv, n, NULL))
			return -1;
		h2_fields_reset(&s->ans);
		return 0;
	}
	no_body = s->is_head || st == 204 || st == 304;
	if (nghttp2_submit_response(a->ss, s->id, nv, n, no_body ? NULL : &prd))
		return -1;
	s->headed = 1;
	s->trailers_from = s->ans.n;
	return s->is_head ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct answer_ctx *a = p->data;

	if (h2_buf_add(&a->s->out, at, len))
		return -1;
	wake(a);
	return 0;
}

static int on_complete(http_parser *p)
{
	struct answer_ctx *a = p->data;

	if (!a->s->headed) /* the end of a 1xx head */
		return 0;
	a->s->done = 1;
	wake(a);
	return 0;
}

static const http_parser_settings answer_settings = {
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_headers,
	.on_body = on_body,
	.on_message_complete = on_complete,
};

int h2_stream_answer(struct h2_stream *s, nghttp2_session *ss, const char *b, size_t len)
{
	struct answer_ctx a = { s, ss };
	size_t done;

	if (s->broken)
		return -1;
	if (s->done)
		return 0; /* nothing follows an answer on a "Connection: close" request */
	if (!s->rp_ready)
		http_parser_init(&s->rp, HTTP_RESPONSE);
	s->rp_ready = 1;
	s->rp.data = &a; /* for this call only */
	done = http_parser_execute(&s->rp, &answer_settings, b, len);
	if ((HTTP_PARSER_ERRNO(&s->rp) != HPE_OK && !s->done) || (done != len && !s->done) ||
	    (!len && !s->done))
		s->broken = 1;
	return s->broken ? -1 : 0;
}

int h2_stream_refuse(struct h2_stream *s, nghttp2_session *ss, int status, const char *why)
{
	char text[600];
	int n = proxy_error_text(text, sizeof(text), status, why);

	if (n < 0)
		return -1;
	return h2_stream_answer(s, ss, text, (size_t)n);
}
