/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_response.c: relays the upstream's answer — parsed by http_parser, hop-by-hop
 * headers dropped, re-framed as chunked, every secret form scrubbed out of head and body.
 * A compressed body is decoded first and goes out whole at its end (proxy_decode.c). */
#include "broker/proxy_internal.h"
#include "broker/audit.h"

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

#include "lib/mono.h"

/* --- response --------------------------------------------------------------------------- */

/* Toward the guest: at once, or, while a compressed body is decoded, held until its end (so
 * neither chunk sizes nor timing follow the compressed stream's reads). */
static int out_write(struct conn *c, const void *b, size_t n)
{
	return c->dec ? proxy_decode_defer(c, b, n) : proxy_io_client_write(c, b, n);
}

static int obuf_put(void *arg, const uint8_t *b, size_t n)
{
	struct conn *c = arg;

	while (n) {
		size_t room = 16384 - c->olen, k = n < room ? n : room;

		memcpy(c->obuf + c->olen, b, k);
		c->olen += k;
		b += k;
		n -= k;
		if (c->olen == 16384) {
			char sz[16];
			/* The head is not a chunk; only body bytes are framed. */
			int l = c->client_10 || c->in_head
					? 0
					: snprintf(sz, sizeof(sz), "%zx\r\n", c->olen);

			if ((l && out_write(c, sz, (size_t)l)) || out_write(c, c->obuf, c->olen) ||
			    (l && out_write(c, "\r\n", 2)))
				return -EIO;
			c->olen = 0;
		}
	}
	return 0;
}

static int obuf_chunk(struct conn *c)
{
	char sz[16];
	int l;

	if (!c->olen)
		return 0;
	l = c->client_10 ? 0 : snprintf(sz, sizeof(sz), "%zx\r\n", c->olen);
	if ((l && out_write(c, sz, (size_t)l)) || out_write(c, c->obuf, c->olen) ||
	    (l && out_write(c, "\r\n", 2)))
		return -EIO;
	c->olen = 0;
	return 0;
}

static int rp_status(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	return c->resp.url_len + len > 256 ? -1
					   : proxy_head_append(&c->resp, at, len, &c->resp.url_len);
}

static int rp_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (!c->resp.n && !c->resp.in_value)
		c->resp.used++; /* keep the status text's NUL */
	return proxy_head_field(&c->resp, at, len) ? -1 : 0;
}

/* http_parser joins a folded line (obs-fold) to the value before it: the fold is refused, as
 * RFC 9112 5.2 lets a proxy do, since a secret split by one would pass the scrubber as two
 * halves. A value's second piece after a line end is a fold; after a read's end, more of it. */
static int rp_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->resp.in_value && (at > c->rp_read ? at[-1] : c->rp_read_last) == '\n') {
		proxy_fail(c, 502, "upstream %s sent a folded header line (obs-fold)", c->host);
		return -1;
	}
	return proxy_head_value(&c->resp, at, len);
}

static int rp_begin(http_parser *p)
{
	proxy_head_reset(&CONN(p)->resp);
	return 0;
}

static int resp_no_body(const struct conn *c, unsigned status)
{
	return c->is_head || status < 200 || status == 204 || status == 304;
}

static int put_secbuf(void *arg, const uint8_t *b, size_t n)
{
	secbuf_add(arg, b, n);
	return ((struct secbuf *)arg)->oom ? -ENOMEM : 0;
}

/* One header field of the response, scrubbed. A field whose name holds a secret is dropped:
 * a replacement there would not be a header name. */
static int put_field(struct conn *c, size_t i)
{
	size_t before = c->scrub.replaced;
	struct secbuf name = { 0 };
	int rc;

	rc = scrub_feed(&c->scrub, (const uint8_t *)c->resp.arena + c->resp.h[i].name_off,
			c->resp.h[i].name_len, put_secbuf, &name) ||
	     scrub_flush(&c->scrub, put_secbuf, &name);
	if (!rc && c->scrub.replaced == before)
		rc = obuf_put(c, (const uint8_t *)name.b, name.n) ||
		     obuf_put(c, (const uint8_t *)": ", 2) ||
		     scrub_feed(&c->scrub, (const uint8_t *)proxy_head_val(&c->resp, i),
				c->resp.h[i].val_len, obuf_put, c) ||
		     scrub_flush(&c->scrub, obuf_put, c) || obuf_put(c, (const uint8_t *)"\r\n", 2);
	secbuf_wipe(&name);
	return rc ? -1 : 0;
}

/* Fields the broker never relays: hop-by-hop and framing ones (Content-Encoding too: what is
 * relayed is never encoded, proxy_decode_plan), and as a trailer also those that route or
 * frame a message (RFC 9110 6.5.1), Content-Range and grpc-encoding among them: after the
 * body, they could only tell the guest's client to read what it has in another way. */
static int dropped(const struct conn *c, size_t i, int trailer)
{
	static const char *const head[] = { "connection",	 "keep-alive",
					    "transfer-encoding", "content-length",
					    "proxy-connection",	 "proxy-authenticate",
					    "trailer",		 "upgrade",
					    "content-encoding",	 NULL };
	static const char *const more[] = { "host", "te", "content-range", "grpc-encoding", NULL };
	size_t j;

	for (j = 0; head[j]; j++)
		if (proxy_head_is(&c->resp, i, head[j]))
			return 1;
	for (j = 0; trailer && more[j]; j++)
		if (proxy_head_is(&c->resp, i, more[j]))
			return 1;
	return 0;
}

static int rp_headers(http_parser *p)
{
	struct conn *c = CONN(p);
	char line[320];
	size_t i;
	int l;

	if (proxy_head_done(&c->resp))
		return -1;
	if (p->status_code == 101) { /* a WebSocket's handshake, exactly as asked, or refused */
		if (proxy_ws_accept_ok(c))
			return -1;
	} else if (p->status_code < 200) { /* interim responses are not forwarded */
		return 0;
	}
	if (p->status_code == 401)
		proxy_secret_unauthorized(c);
	if (!proxy_answer_head_ok(&c->resp)) {
		proxy_fail(c, 502, "upstream %s sent a malformed response head", c->host);
		return -1;
	}
	if (proxy_answer_partial(c, p->status_code) && proxy_answer_credential_host(c)) {
		proxy_fail(
			c, 502,
			"upstream %s sent a partial response (206 or Content-Range) from a host "
			"that receives credentials: ranges are refused there, the scrubber cannot "
			"see across them",
			c->host);
		return -1;
	}
	if (proxy_answer_grpc_compressed(c) && proxy_answer_credential_host(c)) {
		proxy_fail(c, 502,
			   "upstream %s sent compressed gRPC messages (grpc-encoding) from a host "
			   "that receives credentials: the scrubber cannot read them",
			   c->host);
		return -1;
	}
	if (proxy_decode_plan(c, !resp_no_body(c, p->status_code)) < 0)
		return -1;
	stream_frame_init(&c->frame, proxy_answer_framing(c));
	c->resp_long = c->frame.kind != STREAM_FRAME_NONE || proxy_answer_grpc(c);
	c->messages = 0;
	/* A decoded response starts only when it is complete (nothing has gone out yet). */
	c->resp_started = !c->dec;
	c->resp_headed = 1;
	c->in_head = 1;
	scrub_reset(&c->scrub);
	c->olen = 0;
	l = snprintf(line, sizeof(line), "HTTP/1.1 %u ", p->status_code);
	if (obuf_put(c, (const uint8_t *)line, (size_t)l) ||
	    scrub_feed(&c->scrub, (const uint8_t *)c->resp.arena, c->resp.url_len, obuf_put, c) ||
	    scrub_flush(&c->scrub, obuf_put, c) || obuf_put(c, (const uint8_t *)"\r\n", 2))
		return -1;
	for (i = 0; i < c->resp.n; i++)
		if (!dropped(c, i, 0) && put_field(c, i))
			return -1;
	if (c->client_10)
		c->close_after = 1;
	if (c->ws_open)
		l = snprintf(line, sizeof(line),
			     "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	else
		l = snprintf(line, sizeof(line), "%s%s\r\n",
			     resp_no_body(c, p->status_code) || c->client_10
				     ? ""
				     : "Transfer-Encoding: chunked\r\n",
			     c->close_after ? "Connection: close\r\n" : "");
	if (obuf_put(c, (const uint8_t *)line, (size_t)l))
		return -1;
	c->trailers_from = c->resp.n; /* fields parsed after this are the body's trailers */
	/* The head goes out raw (it is not a chunk). */
	if (out_write(c, c->obuf, c->olen))
		return -1;
	c->olen = 0;
	c->in_head = 0;
	/* 1: no body follows (HEAD, 204, 304), whatever Content-Length or Transfer-Encoding
	 * the upstream sent: bytes after such a head are not part of this response. */
	return resp_no_body(c, p->status_code) ? 1 : 0;
}

static int decoded(struct conn *c, const uint8_t *b, size_t n)
{
	return scrub_feed(&c->scrub, b, n, obuf_put, c);
}

static int rp_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (!c->resp_headed)
		return -1;
	/* Decoded bytes are framed in full 16 KiB chunks only: sizes follow the decoded length,
	 * never where the compressed reads ended. */
	if (c->dec)
		return proxy_decode_feed(c, (const uint8_t *)at, len, decoded) ? -1 : 0;
	/* Each message that ends in these bytes is matched and released whole, at once; the
	 * rest of the read waits at the fixed lag like any body. */
	while (len) {
		int end;
		size_t k = stream_frame_scan(&c->frame, (const uint8_t *)at, len, &end);

		if (k && scrub_feed(&c->scrub, (const uint8_t *)at, k, obuf_put, c))
			return -1;
		if (end) {
			if (scrub_flush(&c->scrub, obuf_put, c))
				return -1;
			c->messages++;
		}
		at += k;
		len -= k;
	}
	return obuf_chunk(c) ? -1 : 0;
}

/* The last chunk and the trailer fields after it (gRPC's status travels there), scrubbed like
 * the head's, less the ones dropped(). */
static int last_chunk(struct conn *c)
{
	size_t i;

	if (proxy_head_done(&c->resp) || !proxy_answer_head_ok(&c->resp) ||
	    out_write(c, "0\r\n", 3))
		return -1; /* a malformed trailer cuts the answer: its head has gone out */
	c->in_head = 1;	   /* the fields go out raw, not as a chunk */
	for (i = c->trailers_from; i < c->resp.n; i++)
		if (!dropped(c, i, 1) && put_field(c, i))
			return -1;
	if (obuf_put(c, (const uint8_t *)"\r\n", 2) || out_write(c, c->obuf, c->olen))
		return -1;
	c->olen = 0;
	c->in_head = 0;
	return 0;
}

static int rp_complete(http_parser *p)
{
	struct conn *c = CONN(p);

	if (!c->resp_headed) /* an interim 1xx: the real response follows */
		return 0;
	if (c->dec && proxy_decode_finish(c))
		return -1;
	if (scrub_flush(&c->scrub, obuf_put, c) || obuf_chunk(c))
		return -1;
	if (!resp_no_body(c, p->status_code) && !c->client_10 && last_chunk(c))
		return -1;
	if (c->dec) {
		c->resp_started = 1;
		if (proxy_decode_release(c))
			return -1;
	}
	c->resp_done = 1;
	c->up_keep = http_should_keep_alive(p);
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings rp_settings = {
	.on_message_begin = rp_begin,
	.on_status = rp_status,
	.on_header_field = rp_field,
	.on_header_value = rp_value,
	.on_headers_complete = rp_headers,
	.on_body = rp_body,
	.on_message_complete = rp_complete,
};

/* A new answer: parsed from its first byte. */
static void relay_begin(struct conn *c)
{
	/* A close without TLS close_notify (as many servers end a body framed by the close) is
	 * the end of the stream, not a failure: the parser then ends a close-framed body, whose
	 * held tail is flushed, and still refuses a body cut short of its length or last chunk. */
	if (c->up_ssl)
		SSL_set_options(c->up_ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
	http_parser_init(&c->rp, HTTP_RESPONSE);
	c->rp.data = c;
	c->up_keep = 0;
	c->resp_headed = 0;
	stream_frame_init(&c->frame, STREAM_FRAME_NONE); /* the last answer's framing is over */
	c->resp_long = 0;
	c->rp_got = 0;
	c->rp_head_until = 0;
	c->up_last_ms = mono_ms();
}

/* How long the upstream may stay silent now, in ms from its last bytes (-1: no bound).
 * Between a streamed answer's messages that may be far longer than --io-timeout (an MCP
 * server's GET stream); the guest's hang-up ends the wait. */
static int quiet_bound(const struct conn *c)
{
	int ms = c->resp_long && c->cfg->stream_idle_ms > 0 ? c->cfg->stream_idle_ms
							    : c->cfg->io_timeout_ms;

	return ms > 0 ? ms : -1;
}

/* Relays until the answer is complete (0), fails (-EAGAIN, -EIO), or, once it has begun, has
 * been silent for the worker's linger (PROXY_RELAY_PARKED: c->stream_due_ms is when its
 * deadline passes; the loop waits on both sides without a thread and calls relay() again). */
static int relay(struct conn *c)
{
	char buf[16384];

	while (!c->resp_done) {
		int64_t now = mono_ms(), left = INT64_MAX, head_left, ms;
		int bound = quiet_bound(c), by_deadline, w;
		ssize_t n;
		size_t done;

		if (bound >= 0)
			left = c->up_last_ms + bound - now;
		head_left = c->rp_head_until ? c->rp_head_until - now : INT64_MAX;
		if (head_left <= 0) {
			proxy_fail(c, 504, "upstream %s did not send its answer's head within %d s",
				   c->host, c->cfg->head_timeout_ms / 1000);
			return -EIO;
		}
		by_deadline = head_left < left;
		ms = by_deadline ? head_left : left;
		if (c->rp_got && c->linger_ms >= 0 && ms > c->linger_ms) {
			/* Begun: a silence past the linger is waited out without a thread. */
			w = proxy_io_up_wait(c, c->linger_ms);
			if (w == 0) {
				c->stream_due_ms = ms == INT64_MAX ? 0 : now + ms;
				return PROXY_RELAY_PARKED;
			}
		} else if (ms == INT64_MAX) {
			w = 1; /* no bound: the read waits */
		} else {
			w = ms > 0 ? proxy_io_up_wait(c, (int)(ms > INT32_MAX ? INT32_MAX : ms))
				   : 0;
		}
		n = w > 0 ? proxy_io_up_read(c, buf, sizeof(buf)) : -1;
		if (n != -1)
			c->up_last_ms = mono_ms();
		if (n == PROXY_IO_AGAIN)
			continue;
		if (w < 0 && !c->outcome)
			c->outcome = AUDIT_OUTCOME_GUEST_CLOSED;
		if (w == 0 && by_deadline)
			continue; /* the head's deadline, answered above */

		if (n < 0 || (n == 0 && !c->rp_got)) {
			if (!c->rp_got && c->up_reused)
				return -EAGAIN;
			if (!c->resp_started)
				proxy_fail(
					c, 502,
					c->dec ? "upstream %s closed before its compressed answer "
						 "was complete"
					       : "upstream %s closed or failed before answering",
					c->host);
			return -EIO;
		}
		c->rp_got = 1;
		/* A head, however it trickles in (interim heads too), has --head-timeout from its
		 * first byte: --io-timeout alone bounds only silence. */
		if (!c->resp_headed && !c->rp_head_until && c->cfg->head_timeout_ms > 0)
			c->rp_head_until = mono_ms() + c->cfg->head_timeout_ms;
		c->rp_read = buf;
		done = http_parser_execute(&c->rp, &rp_settings, buf, (size_t)n);
		if (n > 0)
			c->rp_read_last = buf[n - 1];
		if (c->resp_headed)
			c->rp_head_until = 0;
		if (c->resp_done) {
			if (done != (size_t)n)
				c->up_keep =
					0; /* bytes beyond the response: do not trust it again */
			if (done < (size_t)n && c->ws_open) { /* a WebSocket's first frames */
				free(c->ws_early);
				if (!(c->ws_early = malloc((size_t)n - done)))
					return -EIO;
				memcpy(c->ws_early, buf + done, (size_t)n - done);
				c->ws_early_n = (size_t)n - done;
			}
			break;
		}
		if (HTTP_PARSER_ERRNO(&c->rp) != HPE_OK || n == 0) {
			if (!c->resp_started)
				proxy_fail(c, 502, "upstream %s sent a malformed response (%s)",
					   c->host,
					   http_errno_description(HTTP_PARSER_ERRNO(&c->rp)));
			return -EIO;
		}
	}
	return 0;
}

/* Relays one response (proxy_internal.h). */
int proxy_response_relay(struct conn *c)
{
	relay_begin(c);
	return proxy_response_resume(c);
}

int proxy_response_resume(struct conn *c)
{
	int rc = relay(c);

	if (rc != PROXY_RELAY_PARKED)
		proxy_decode_free(c);
	return rc;
}
