/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_h2_stream.c: libFuzzer target for the HTTP/1.1 text the broker writes for an
 * HTTP/2 stream's request (broker/h2_stream.c), the text every rule and credential is then
 * judged on. nghttp2 checks fields before they get there; this target does not rely on it:
 * any bytes at all are handed to h2_stream_field.
 *
 * The input: a flags byte (bit 0: the HEADERS frame ends the stream), then fields, each a
 * name length byte, the name, a value length byte, the value. Checks, whenever the head is
 * taken and http_parser reads it (else the stream's thread refuses it too): the text is one
 * request head and nothing after it (a body, if one is coming, comes after), whose method
 * and target are the :method and :path given, whose Host is the :authority (or host), and
 * whose fields are exactly the regular fields given, in order, then the broker's own
 * (Cookie joined, Transfer-Encoding, Connection): no field, line or request more. */
#include "broker/h2_stream.h"

#include <http_parser.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 64

struct field {
	const uint8_t *name, *val;
	size_t nlen, vlen;
};

struct parsed {
	char url[H2_HEAD_MAX];
	size_t url_len;
	char f[MAXF * 2][H2_HEAD_MAX];
	size_t len[MAXF * 2];
	size_t n;
	int heads, messages;
};

static int p_url(http_parser *p, const char *at, size_t len)
{
	struct parsed *r = p->data;

	if (r->url_len + len > sizeof(r->url))
		abort();
	memcpy(r->url + r->url_len, at, len);
	r->url_len += len;
	return 0;
}

/* One call per name and per value: the text is parsed in one piece. Names at even places,
 * values at odd ones; a name with no value callback has an empty one. */
static int push(struct parsed *r, const char *at, size_t len)
{
	if (r->n == MAXF * 2 || len > H2_HEAD_MAX)
		abort();
	memcpy(r->f[r->n], at, len);
	r->len[r->n++] = len;
	return 0;
}

static int p_field(http_parser *p, const char *at, size_t len)
{
	struct parsed *r = p->data;

	if (r->n % 2)
		push(r, "", 0);
	return push(r, at, len);
}

static int p_value(http_parser *p, const char *at, size_t len)
{
	struct parsed *r = p->data;

	if (r->n % 2 == 0)
		abort();
	return push(r, at, len);
}

static int p_begin(http_parser *p)
{
	((struct parsed *)p->data)->messages++;
	return 0;
}

static int p_headers(http_parser *p)
{
	struct parsed *r = p->data;

	if (r->n % 2)
		push(r, "", 0);
	r->heads++;
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = p_begin,
	.on_url = p_url,
	.on_header_field = p_field,
	.on_header_value = p_value,
	.on_headers_complete = p_headers,
};

static int is(const struct field *f, const char *name)
{
	return f->nlen == strlen(name) && !memcmp(f->name, name, f->nlen);
}

static int same(const char *a, size_t an, const void *b, size_t bn)
{
	return an == bn && !memcmp(a, b, an);
}

/* Parsed field K (name, then value) is NAME: VALUE. */
static void expect(const struct parsed *r, size_t k, const void *name, size_t nlen, const void *val,
		   size_t vlen)
{
	if (2 * k + 1 >= r->n || !same(r->f[2 * k], r->len[2 * k], name, nlen) ||
	    !same(r->f[2 * k + 1], r->len[2 * k + 1], val, vlen))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct field in[MAXF];
	size_t n = 0, i = 1;
	const struct field *method = NULL, *path = NULL, *auth = NULL, *host = NULL;
	char why[200];

	if (!size)
		return 0;
	while (i < size && n < MAXF) {
		struct field f;

		f.nlen = data[i++];
		if (i + f.nlen >= size)
			break;
		f.name = data + i;
		i += f.nlen;
		f.vlen = data[i++];
		if (i + f.vlen > size)
			break;
		f.val = data + i;
		i += f.vlen;
		in[n++] = f;
	}
	struct h2_stream *s = h2_stream_new(1);
	if (!s)
		return 0;
	int bad = 0;
	for (i = 0; i < n && !bad; i++)
		bad = h2_stream_field(s, in[i].name, in[i].nlen, in[i].val, in[i].vlen) != 0;
	if (bad || h2_stream_head(s, data[0] & 1, why, sizeof(why))) {
		h2_stream_free(s);
		return 0;
	}
	/* The head was taken: what the fields were, as h2_stream.c must have read them. */
	for (i = 0; i < n; i++) {
		if (is(&in[i], ":method"))
			method = &in[i];
		else if (is(&in[i], ":path"))
			path = &in[i];
		else if (is(&in[i], ":authority"))
			auth = &in[i];
		else if (is(&in[i], "host"))
			host = &in[i];
	}
	if (!method || !path || (!auth && !host))
		abort();
	static struct parsed r;
	memset(&r, 0, sizeof(r));
	http_parser p;
	http_parser_init(&p, HTTP_REQUEST);
	p.data = &r;
	size_t done = http_parser_execute(&p, &settings, s->rq.p, s->rq.len);
	if (HTTP_PARSER_ERRNO(&p) != HPE_OK) { /* refused as HTTP/1.1: the thread refuses it */
		h2_stream_free(s);
		return 0;
	}
	/* One request head, and the whole text is it. */
	if (r.messages != 1 || r.heads != 1 || done != s->rq.len)
		abort();
	if (strcmp(http_method_str((enum http_method)p.method), s->method) ||
	    !same((const char *)method->val, method->vlen, s->method, strlen(s->method)) ||
	    !same(r.url, r.url_len, path->val, path->vlen))
		abort();
	size_t k = 0;
	const struct field *h = auth ? auth : host;
	expect(&r, k++, "Host", 4, h->val, h->vlen);
	static char cookie[H2_HEAD_MAX];
	size_t clen = 0; /* every cookie value, joined by "; " (RFC 9113 8.2.3) */
	for (i = 0; i < n; i++) {
		if (in[i].nlen && in[i].name[0] == ':')
			continue;
		if (is(&in[i], "host"))
			continue;
		if (is(&in[i], "cookie")) {
			if (clen && in[i].vlen) {
				memcpy(cookie + clen, "; ", 2);
				clen += 2;
			}
			memcpy(cookie + clen, in[i].val, in[i].vlen);
			clen += in[i].vlen;
			continue;
		}
		expect(&r, k++, in[i].name, in[i].nlen, in[i].val, in[i].vlen);
	}
	if (clen)
		expect(&r, k++, "Cookie", 6, cookie, clen);
	if (s->rq_chunked)
		expect(&r, k++, "Transfer-Encoding", 17, "chunked", 7);
	expect(&r, k++, "Connection", 10, "close", 5);
	if (r.n != 2 * k)
		abort();
	h2_stream_free(s);
	return 0;
}
