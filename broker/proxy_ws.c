/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_ws.c: WebSockets (RFC 6455) through the broker. The guest's handshake is a
 * request like any other (decided, held for approval, credential injected, audited); the
 * upstream must accept it exactly as asked (101, the key's Sec-WebSocket-Accept, no
 * extension, so no permessage-deflate); then wslay frames both sides: the broker is the
 * guest's server and the upstream's client. Each message is relayed whole when it is
 * complete: from the upstream scrubbed as a body of its own, from the guest with placeholders
 * replaced toward the secret's destinations and tripped toward any other. Pings are answered
 * on each side by wslay; close codes pass through; one audit record per WebSocket. */
#include "broker/proxy_conn.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <wslay/wslay.h>

#include "broker/audit.h"
#include "lib/mono_ms.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_CLOSE_GRACE_MS                                                                          \
	5000 /* a close's answer, once one side has begun closing (or                              \
	      * --io-timeout, if that is shorter) */

/* Whether the comma-separated list V (N bytes) holds TOKEN, in any case. */
static int has_token(const char *v, size_t n, const char *token)
{
	size_t tl = strlen(token), i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && !strncasecmp(v + s, token, tl))
			return 1;
	}
	return 0;
}

/* The one field NAME of H, SIZE_MAX if absent, SIZE_MAX - 1 if there are more. */
static size_t one_field(const struct head *h, const char *name)
{
	size_t i, at = SIZE_MAX;

	for (i = 0; i < h->n; i++)
		if (proxy_head_is(h, i, name)) {
			if (at != SIZE_MAX)
				return SIZE_MAX - 1;
			at = i;
		}
	return at;
}

int proxy_ws_request(struct conn *c, const http_parser *p)
{
	size_t up = one_field(&c->req, "upgrade"), key = one_field(&c->req, "sec-websocket-key");
	size_t ver = one_field(&c->req, "sec-websocket-version");
	unsigned char raw[32];

	if (up >= SIZE_MAX - 1 ||
	    !has_token(proxy_head_val(&c->req, up), c->req.h[up].val_len, "websocket") ||
	    c->req.h[up].val_len > 32) {
		proxy_fail(c, 501,
			   "protocol upgrades other than one Upgrade: websocket are not "
			   "supported");
		return -1;
	}
	if (p->method != HTTP_GET || c->client_10 || !p->upgrade || c->has_body) {
		proxy_fail(c, 400,
			   "a WebSocket handshake is a GET in HTTP/1.1 with Connection: "
			   "Upgrade and no body");
		return -1;
	}
	/* The key is 16 random bytes in base64 (RFC 6455 4.1): 24 characters. */
	if (key >= SIZE_MAX - 1 || c->req.h[key].val_len != 24 ||
	    EVP_DecodeBlock(raw, (const unsigned char *)proxy_head_val(&c->req, key), 24) != 18 ||
	    proxy_head_val(&c->req, key)[22] != '=' || proxy_head_val(&c->req, key)[23] != '=') {
		proxy_fail(c, 400, "a WebSocket handshake needs one Sec-WebSocket-Key of 16 bytes");
		return -1;
	}
	if (ver >= SIZE_MAX - 1 || c->req.h[ver].val_len != 2 ||
	    memcmp(proxy_head_val(&c->req, ver), "13", 2)) {
		proxy_fail(c, 400, "a WebSocket handshake needs Sec-WebSocket-Version: 13");
		return -1;
	}
	memcpy(c->ws_key, proxy_head_val(&c->req, key), 24);
	c->ws_key[24] = '\0';
	c->ws = 1;
	return 0;
}

/* The 101's Sec-WebSocket-Protocol, if any, is one subprotocol the guest offered (RFC 6455
 * 4.1: a client fails the connection otherwise; not every client checks). */
static int protocol_offered(const struct conn *c)
{
	size_t i, at = one_field(&c->resp, "sec-websocket-protocol"), n;
	const char *v;

	if (at == SIZE_MAX)
		return 1;
	if (at == SIZE_MAX - 1)
		return 0;
	v = proxy_head_val(&c->resp, at);
	n = c->resp.h[at].val_len;
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (!n || n > 64 || memchr(v, ',', n))
		return 0;
	char want[65];
	memcpy(want, v, n);
	want[n] = '\0';
	for (i = 0; i < c->req.n; i++)
		if (proxy_head_is(&c->req, i, "sec-websocket-protocol") &&
		    has_token(proxy_head_val(&c->req, i), c->req.h[i].val_len, want))
			return 1;
	return 0;
}

int proxy_ws_accept_ok(struct conn *c)
{
	size_t up = one_field(&c->resp, "upgrade"),
	       acc = one_field(&c->resp, "sec-websocket-accept");
	size_t i;
	unsigned char md[20];
	char want[64], in[64];

	if (!c->ws) {
		proxy_fail(c, 502,
			   "upstream %s switched protocols for a request that asked for none",
			   c->host);
		return -1;
	}
	snprintf(in, sizeof(in), "%s%s", c->ws_key, WS_GUID);
	if (EVP_Digest(in, strlen(in), md, NULL, EVP_sha1(), NULL) != 1)
		return -1;
	EVP_EncodeBlock((unsigned char *)want, md, 20);
	for (i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "sec-websocket-extensions")) {
			/* None was offered (proxy_rewrite.c drops the guest's offer). */
			proxy_fail(c, 502,
				   "upstream %s accepted a WebSocket extension none offered",
				   c->host);
			return -1;
		}
	for (i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "connection") &&
		    has_token(proxy_head_val(&c->resp, i), c->resp.h[i].val_len, "upgrade"))
			break;
	if (up >= SIZE_MAX - 1 || i == c->resp.n ||
	    !has_token(proxy_head_val(&c->resp, up), c->resp.h[up].val_len, "websocket") ||
	    acc >= SIZE_MAX - 1 || c->resp.h[acc].val_len != strlen(want) ||
	    memcmp(proxy_head_val(&c->resp, acc), want, strlen(want))) {
		proxy_fail(c, 502,
			   "upstream %s answered the WebSocket handshake wrongly (RFC 6455 "
			   "4.2.2: Upgrade, Connection, Sec-WebSocket-Accept)",
			   c->host);
		return -1;
	}
	if (!protocol_offered(c)) {
		proxy_fail(c, 502,
			   "upstream %s chose a WebSocket subprotocol the client did not offer",
			   c->host);
		return -1;
	}
	c->ws_open = 1;
	return 0;
}

/* --- the relay ------------------------------------------------------------------------- */

struct ws_side {
	struct ws_relay *r;
	wslay_event_context_ptr ctx;
	int guest;   /* the guest's side: the broker is its server */
	int gone;    /* its transport ended or failed */
	int pending; /* bytes are known to be waiting (poll said so) */
	/* A close for this side that waits for its queued messages to go out first (wslay sends
	 * control frames ahead of messages, and nothing after a close). */
	int close_due;
	uint16_t close_code;
	uint8_t close_why[123];
	size_t close_n;
};

struct ws_relay {
	struct conn *c;
	struct ws_side g, u;
	const uint8_t *early; /* the upstream's bytes read with its 101 */
	size_t early_n;
	int tripped;	    /* a guest message carried a placeholder toward the wrong host */
	int told_g, told_u; /* the side was told the other failed */
	struct secbuf ubuf; /* toward the upstream, written once per round (up_flush) */
	const char *closed_by;
};

static void close_when_drained(struct ws_side *s);

/* What is queued for S goes out, then a close that waited for it. */
static void side_send(struct ws_side *s)
{
	for (int k = 0; k < 2 && !s->gone; k++) {
		if (wslay_event_want_write(s->ctx) && wslay_event_send(s->ctx))
			s->gone = 1;
		close_when_drained(s);
	}
}

/* What wslay framed toward the upstream, in one write. */
static int up_flush(struct ws_relay *r)
{
	int rc = r->ubuf.n ? proxy_io_up_write(r->c, r->ubuf.b, r->ubuf.n) : 0;

	secbuf_wipe(&r->ubuf);
	return rc;
}

/* Whether TLS on a side holds bytes it has read but not yet returned. */
static int tls_pending(SSL *ssl)
{
	return ssl && SSL_has_pending(ssl);
}

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
	struct ws_side *s = user;
	struct conn *c = s->r->c;
	ssize_t n;

	(void)flags;
	if (!s->guest && s->r->early_n) {
		n = (ssize_t)(len < s->r->early_n ? len : s->r->early_n);
		memcpy(buf, s->r->early, (size_t)n);
		s->r->early += n;
		s->r->early_n -= (size_t)n;
		return n;
	}
	/* One read per time poll said there are bytes (or TLS holds some): never a wait. */
	if (!s->pending && !tls_pending(s->guest ? c->cl_ssl : c->up_ssl)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	s->pending = 0;
	n = s->guest ? proxy_io_client_read(c, buf, len) : proxy_io_up_read(c, buf, len);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	s->gone = 1;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct ws_side *s = user;
	struct conn *c = s->r->c;

	(void)flags;
	if (!s->guest) { /* gathered: a frame's head and payload go out in one TLS record */
		secbuf_add(&s->r->ubuf, data, len);
		if (!s->r->ubuf.oom)
			return (ssize_t)len;
	}
	if (!s->guest || proxy_io_client_write(c, data, len)) {
		s->gone = 1;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return (ssize_t)len;
}

static int ws_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
	(void)user;
	if (RAND_bytes(buf, (int)len) != 1) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return 0;
}

static int put_secbuf(void *arg, const uint8_t *b, size_t n)
{
	secbuf_add(arg, b, n);
	return ((struct secbuf *)arg)->oom ? -ENOMEM : 0;
}

/* S is told to close with CODE and WHY once what is queued for it has gone (the first close
 * asked for wins). */
static void side_close(struct ws_side *s, uint16_t code, const uint8_t *why, size_t n)
{
	if (s->close_due || s->gone)
		return;
	s->close_due = 1;
	s->close_code = code;
	s->close_n = code && n <= sizeof(s->close_why) ? n : 0;
	if (s->close_n)
		memcpy(s->close_why, why, s->close_n);
}

/* A close that was due goes into wslay's queue once the messages before it have gone. */
static void close_when_drained(struct ws_side *s)
{
	if (s->close_due == 1 && !s->gone && !wslay_event_get_queued_msg_count(s->ctx)) {
		s->close_due = 2;
		wslay_event_queue_close(s->ctx, s->close_code, s->close_why, s->close_n);
	}
}

/* Both sides are told to close with CODE (a broker's own reason, no secret in it). */
static void close_both(struct ws_relay *r, uint16_t code, const char *why)
{
	side_close(&r->g, code, (const uint8_t *)why, strlen(why));
	side_close(&r->u, code, (const uint8_t *)why, strlen(why));
}

/* What a message from one side becomes toward the other: from the upstream scrubbed whole,
 * from the guest with placeholders replaced. -1: tripped (the reason is in the connection). */
static int translate(struct ws_relay *r, int from_guest, const uint8_t *m, size_t n,
		     struct secbuf *out)
{
	struct conn *c = r->c;

	if (from_guest)
		return proxy_rewrite_placeholders(c, &c->q, (const char *)m, n, out, PH_BODY) ||
				       out->oom
			       ? -1
			       : 0;
	/* After a flush the matcher starts afresh: each message is a body of its own. */
	return scrub_feed(&c->scrub, m, n, put_secbuf, out) ||
			       scrub_flush(&c->scrub, put_secbuf, out)
		       ? -1
		       : 0;
}

static void ws_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
		       void *user)
{
	struct ws_side *s = user, *peer = s->guest ? &s->r->u : &s->r->g;
	struct ws_relay *r = s->r;
	struct conn *c = r->c;
	struct secbuf out = { 0 };
	size_t replaced = c->scrub.replaced;

	(void)ctx;
	if (a->opcode == WSLAY_TEXT_FRAME || a->opcode == WSLAY_BINARY_FRAME) {
		if (translate(r, s->guest, a->msg, a->msg_length, &out)) {
			if (s->guest) {
				r->tripped = 1;
				close_both(r, WSLAY_CODE_POLICY_VIOLATION,
					   "a placeholder toward a host its secret may not go to");
			} else {
				close_both(r, WSLAY_CODE_INTERNAL_SERVER_ERROR, "out of memory");
			}
		} else {
			struct wslay_event_msg m = { a->opcode, (const uint8_t *)out.b, out.n };

			if (s->guest)
				c->ws_stats.messages_out++;
			else
				c->ws_stats.messages_in++;
			wslay_event_queue_msg(peer->ctx, &m);
		}
	} else if (a->opcode == WSLAY_CONNECTION_CLOSE) {
		const uint8_t *why = a->msg_length > 2 ? a->msg + 2 : NULL;
		size_t wn = a->msg_length > 2 ? a->msg_length - 2 : 0;

		if (!r->closed_by)
			r->closed_by = s->guest ? "guest" : "upstream";
		c->ws_stats.close_code = a->status_code;
		/* The reason crosses like a message; one that changed or grew past a close
		 * frame's room goes without its text. */
		if (why && (translate(r, s->guest, why, wn, &out) || out.n > 123 ||
			    c->scrub.replaced != replaced))
			out.n = 0;
		if (s->guest && r->c->err_status)
			r->tripped = 1;
		side_close(peer, a->status_code, (const uint8_t *)out.b, out.n);
	}
	secbuf_wipe(&out);
}

static int side_init(struct ws_relay *r, struct ws_side *s, int guest)
{
	static const struct wslay_event_callbacks cb = {
		.recv_callback = ws_recv,
		.send_callback = ws_send,
		.genmask_callback = ws_genmask,
		.on_msg_recv_callback = ws_message,
	};
	int rc;

	s->r = r;
	s->guest = guest;
	rc = guest ? wslay_event_context_server_init(&s->ctx, &cb, s)
		   : wslay_event_context_client_init(&s->ctx, &cb, s);
	if (rc)
		return -1;
	wslay_event_config_set_max_recv_msg_length(s->ctx, PROXY_WS_MESSAGE_MAX);
	return 0;
}

/* A side failed: its transport is gone, or it stopped reading without a close from its
 * peer (a protocol error, a message past PROXY_WS_MESSAGE_MAX). */
static int side_failed(const struct ws_side *s)
{
	return s->gone ||
	       (!wslay_event_get_read_enabled(s->ctx) && !wslay_event_get_close_received(s->ctx));
}

/* A side is finished when its transport is gone or its close handshake is complete. */
static int side_done(const struct ws_side *s)
{
	return s->gone ||
	       (wslay_event_get_close_sent(s->ctx) &&
		(wslay_event_get_close_received(s->ctx) || !wslay_event_get_read_enabled(s->ctx)));
}

/* A side is closing once it reads no more (a close received, queued or sent, a failure). */
static int side_closing(const struct ws_side *s)
{
	return s->gone || s->close_due || !wslay_event_get_read_enabled(s->ctx) ||
	       wslay_event_get_close_sent(s->ctx) || wslay_event_get_close_received(s->ctx);
}

/* One round: what is queued goes out; then at most MS of waiting for either side's bytes,
 * which are read and framed. Returns how many sides had bytes (0: MS passed in silence). */
static int round_trip(struct ws_relay *r, int ms)
{
	struct conn *c = r->c;
	struct ws_side *sides[2] = { &r->g, &r->u };
	struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
			       { .fd = c->up_fd, .events = POLLIN } };
	int ready[2], i, n, got = 0;

	for (i = 0; i < 2; i++)
		side_send(sides[i]);
	if (up_flush(r))
		r->u.gone = 1;
	if (proxy_io_client_flush(c))
		r->g.gone = 1;
	for (i = 0; i < 2; i++) {
		int on = !sides[i]->gone && wslay_event_want_read(sides[i]->ctx);

		ready[i] =
			on && (i ? r->early_n || tls_pending(c->up_ssl) : tls_pending(c->cl_ssl));
		if (!on)
			p[i].fd = -1;
		if (ready[i])
			ms = 0;
	}
	n = poll(p, 2, ms);
	if (n < 0 && errno != EINTR)
		return -1;
	for (i = 0; i < 2; i++) {
		sides[i]->pending = n > 0 && p[i].fd >= 0 && p[i].revents;
		if (!ready[i] && !sides[i]->pending)
			continue;
		got++;
		/* A failure with the transport intact is the peer's protocol error: wslay has
		 * queued its close (RFC 6455 7.1.7) and reads no more (side_failed). */
		wslay_event_recv(sides[i]->ctx);
	}
	return got;
}

/* The whole WebSocket, after the 101 went to the guest; EARLY: the upstream's first bytes. */
int proxy_ws_relay(struct conn *c, const uint8_t *early, size_t early_n)
{
	struct ws_relay r = { .c = c, .early = early, .early_n = early_n };
	int64_t closing_since = 0;
	int grace = c->cfg->io_timeout_ms < WS_CLOSE_GRACE_MS
			    ? (c->cfg->io_timeout_ms > 0 ? c->cfg->io_timeout_ms : 0)
			    : WS_CLOSE_GRACE_MS;

	if (side_init(&r, &r.g, 1) || side_init(&r, &r.u, 0)) {
		if (r.g.ctx)
			wslay_event_context_free(r.g.ctx);
		c->outcome = AUDIT_OUTCOME_CUT;
		return -1;
	}
	while (!(side_done(&r.g) && side_done(&r.u))) {
		int quiet_ms = c->cfg->stream_idle_ms > 0 ? c->cfg->stream_idle_ms : 1000;
		int64_t now = mono_ms();

		/* One side failed without a close: the other is told, with the code that says
		 * so (a close already queued there stays; wslay queues one close per side). */
		if (side_failed(&r.g) && !r.told_u) {
			r.told_u = 1;
			if (!r.closed_by)
				r.closed_by = r.g.gone ? "guest" : "broker";
			side_close(&r.u, WSLAY_CODE_GOING_AWAY, NULL, 0);
		}
		if (side_failed(&r.u) && !r.told_g) {
			r.told_g = 1;
			if (!r.closed_by)
				r.closed_by = r.u.gone ? "upstream" : "broker";
			side_close(&r.g, WSLAY_CODE_INTERNAL_SERVER_ERROR,
				   (const uint8_t *)"the upstream's connection failed", 32);
		}
		if (!closing_since && (side_closing(&r.g) || side_closing(&r.u)))
			closing_since = now;
		if (closing_since) {
			if (now - closing_since >= grace)
				break;
			quiet_ms = (int)(grace - (now - closing_since));
		}
		int got = round_trip(&r, quiet_ms);

		if (got < 0)
			break;
		if (!got && !closing_since) { /* silent both ways past the stream's bound */
			r.closed_by = "broker";
			c->outcome = AUDIT_OUTCOME_IDLE;
			close_both(&r, WSLAY_CODE_GOING_AWAY, "idle");
		}
	}
	/* What is still queued (a last close) goes out before the connections end. */
	side_send(&r.g);
	side_send(&r.u);
	if (!r.u.gone)
		up_flush(&r);
	secbuf_wipe(&r.ubuf);
	proxy_io_client_flush(c);
	c->ws_stats.closed_by = r.closed_by ? r.closed_by : "broker";
	if (r.tripped)
		c->ws_stats.closed_by = "tripwire";
	if (!c->outcome)
		c->outcome = side_done(&r.g) && side_done(&r.u) && !r.g.gone && !r.u.gone
				     ? AUDIT_OUTCOME_ANSWERED
			     : r.g.gone ? AUDIT_OUTCOME_GUEST_CLOSED
					: AUDIT_OUTCOME_CUT;
	wslay_event_context_free(r.g.ctx);
	wslay_event_context_free(r.u.ctx);
	c->up_keep = 0;
	return 0;
}
