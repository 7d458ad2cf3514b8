/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_decode.c: a response body the broker cannot read is never relayed. The broker
 * asks upstreams for identity; an answer compressed anyway with gzip or deflate is decoded
 * (bounded), scrubbed and relayed whole without Content-Encoding; any other content coding,
 * stacked codings, or a transfer coding other than chunked end in a 502. */
#include "broker/proxy_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <zlib.h>

struct proxy_decode {
	z_stream z;
	int gzip;	/* else deflate (zlib format, or raw as some servers send it) */
	int started;	/* inflate initialised */
	int ended;	/* the (last) compressed stream ended */
	uint8_t first0; /* deflate: the first byte, kept until the second tells the format */
	int have0;
	size_t decoded;
	struct secbuf out; /* everything for the guest, released at the end of the message */
};

/* Splits a coding list ("gzip, chunked") and calls FN on each name; returns FN's first
 * non-zero answer. */
static int each_coding(const char *v, size_t len, int (*fn)(const char *, size_t, void *),
		       void *arg)
{
	size_t i = 0;

	while (i < len) {
		size_t s, e;
		int rc;

		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < len && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s && (rc = fn(v + s, e - s, arg)))
			return rc;
	}
	return 0;
}

struct codings {
	int n;	       /* content codings other than identity */
	int kind;      /* the last one: 1 gzip, 2 deflate, 3 another */
	char name[24]; /* a known name for the message, never the upstream's own text */
};

static int content_coding(const char *c, size_t n, void *arg)
{
	static const char *const known[] = { "br",  "zstd",	    "compress", "x-compress",
					     "exi", "pack200-gzip", NULL };
	struct codings *k = arg;
	size_t i;

	if (n == 8 && !strncasecmp(c, "identity", 8))
		return 0;
	k->n++;
	k->kind = (n == 4 && !strncasecmp(c, "gzip", 4)) || (n == 6 && !strncasecmp(c, "x-gzip", 6))
			  ? 1
		  : n == 7 && !strncasecmp(c, "deflate", 7) ? 2
							    : 3;
	snprintf(k->name, sizeof(k->name), "an unknown coding");
	for (i = 0; known[i]; i++)
		if (strlen(known[i]) == n && !strncasecmp(c, known[i], n))
			snprintf(k->name, sizeof(k->name), "%s", known[i]);
	return 0;
}

static int transfer_coding(const char *c, size_t n, void *arg)
{
	(void)arg;
	return !(n == 7 && !strncasecmp(c, "chunked", 7));
}

int proxy_decode_plan(struct conn *c, int has_body)
{
	struct codings k = { 0, 0, "" };
	size_t i;

	proxy_decode_free(c);
	for (i = 0; i < c->resp.n; i++) {
		if (proxy_head_is(&c->resp, i, "transfer-encoding") &&
		    each_coding(proxy_head_val(&c->resp, i), c->resp.h[i].val_len, transfer_coding,
				NULL)) {
			proxy_fail(
				c, 502,
				"upstream %s used a transfer coding other than chunked; the broker "
				"relays only bodies it can read",
				c->host);
			return -1;
		}
		if (proxy_head_is(&c->resp, i, "content-encoding"))
			each_coding(proxy_head_val(&c->resp, i), c->resp.h[i].val_len,
				    content_coding, &k);
	}
	if (!k.n || !has_body)
		return 0;
	if (k.n > 1 || k.kind == 3) {
		proxy_fail(
			c, 502,
			"upstream %s answered with Content-Encoding %s although the broker asked "
			"for "
			"identity; the broker decodes only one gzip or deflate layer and never "
			"relays bytes it cannot inspect",
			c->host, k.n > 1 ? "with stacked codings" : k.name);
		return -1;
	}
	c->dec = calloc(1, sizeof(*c->dec));
	if (!c->dec)
		return -1;
	c->dec->gzip = k.kind == 1;
	return 1;
}

static int start(struct proxy_decode *d, uint8_t b0, uint8_t b1)
{
	/* zlib format: CMF (method 8) and FLG with CMF*256+FLG a multiple of 31. */
	int zlib = (b0 & 0x0f) == 8 && ((b0 << 8) | b1) % 31 == 0;

	if (inflateInit2(&d->z, d->gzip ? 15 + 16 : zlib ? 15 : -15) != Z_OK)
		return -1;
	d->started = 1;
	return 0;
}

static int inflate_some(struct conn *c, const uint8_t *in, size_t n,
			int (*sink)(struct conn *, const uint8_t *, size_t))
{
	struct proxy_decode *d = c->dec;
	uint8_t buf[16384];

	d->z.next_in = (Bytef *)in;
	d->z.avail_in = (uInt)n;
	for (;;) {
		uInt in_before = d->z.avail_in;
		size_t got;
		int rc;

		if (d->ended) {
			if (!d->z.avail_in)
				return 0;
			/* Concatenated gzip members are one body; anything after a deflate
			 * stream is not. */
			if (!d->gzip || inflateReset(&d->z) != Z_OK)
				return -EPROTO;
			d->ended = 0;
		}
		d->z.next_out = buf;
		d->z.avail_out = sizeof(buf);
		rc = inflate(&d->z, Z_NO_FLUSH);
		got = sizeof(buf) - d->z.avail_out;
		d->decoded += got;
		if (d->decoded > PROXY_DECODED_MAX)
			return -EFBIG;
		if (got && sink(c, buf, got))
			return -EIO;
		if (rc == Z_STREAM_END) {
			d->ended = 1;
			continue;
		}
		if (rc == Z_BUF_ERROR && !d->z.avail_in)
			return 0; /* wants more input */
		if (rc != Z_OK || (!got && d->z.avail_in == in_before))
			return -EPROTO;
		if (!d->z.avail_in && d->z.avail_out)
			return 0;
	}
}

static void decode_error(struct conn *c, int rc)
{
	if (rc == -EFBIG)
		proxy_fail(c, 502, "upstream %s sent a compressed body larger than %d MiB decoded",
			   c->host, PROXY_DECODED_MAX >> 20);
	else if (rc != -EIO)
		proxy_fail(c, 502, "upstream %s sent a corrupt compressed body", c->host);
}

int proxy_decode_feed(struct conn *c, const uint8_t *in, size_t n,
		      int (*sink)(struct conn *, const uint8_t *, size_t))
{
	struct proxy_decode *d = c->dec;
	int rc;

	if (!n)
		return 0;
	if (!d->started) {
		if (!d->gzip && !d->have0) { /* deflate needs two bytes to tell its format */
			d->first0 = in[0];
			d->have0 = 1;
			in++;
			n--;
			if (!n)
				return 0;
		}
		if (start(d, d->gzip ? 0 : d->first0, in[0]))
			return -1;
		if (d->have0 && (rc = inflate_some(c, &d->first0, 1, sink))) {
			decode_error(c, rc);
			return -1;
		}
	}
	if ((rc = inflate_some(c, in, n, sink))) {
		decode_error(c, rc);
		return -1;
	}
	return 0;
}

int proxy_decode_finish(struct conn *c)
{
	struct proxy_decode *d = c->dec;

	if ((d->started || d->have0) && !d->ended) {
		proxy_fail(c, 502, "upstream %s sent a truncated compressed body", c->host);
		return -1;
	}
	return 0;
}

int proxy_decode_defer(struct conn *c, const void *b, size_t n)
{
	if (proxy_body_budget(c, n))
		return -1;
	secbuf_add(&c->dec->out, b, n);
	return c->dec->out.oom ? -ENOMEM : 0;
}

int proxy_decode_release(struct conn *c)
{
	struct proxy_decode *d = c->dec;

	return proxy_io_client_write(c, d->out.b, d->out.n);
}

void proxy_decode_free(struct conn *c)
{
	if (!c->dec)
		return;
	if (c->dec->started)
		inflateEnd(&c->dec->z);
	secbuf_wipe(&c->dec->out);
	free(c->dec);
	c->dec = NULL;
}
