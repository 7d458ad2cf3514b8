/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_ws.c: a WebSocket (RFC 6455) through the broker, once its handshake is done
 * (proxy_ws_handshake.c). Debian's wslay frames both sides: the broker is the guest's server
 * and the upstream's client. Each message is relayed whole when it is complete: from the
 * upstream scrubbed as a body of its own, from the guest with placeholders replaced toward the
 * secret's destinations and tripped toward any other. Pings are answered on each side by
 * wslay; close codes pass through, a close waiting for the messages before it; one audit
 * record per WebSocket (docs/THREAT-MODEL.md "WebSockets"). */
#include "broker/proxy_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <wslay/wslay.h>

#include "broker/audit.h"
#include "lib/mono.h"

/* A close's answer, once one side has begun closing (or --io-timeout, if that is shorter). */
#define WS_CLOSE_GRACE_MS 5000

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
	int64_t quiet_since;   /* the last round that moved bytes */
	int64_t closing_since; /* a side began to close (0: none has) */
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

/* Whether the upstream's close payload A (its code, then its reason) holds a secret as a whole. */
static int in_code(struct ws_relay *r, const struct wslay_event_on_msg_recv_arg *a)
{
	struct secbuf whole = { 0 };
	size_t replaced = r->c->scrub.replaced;
	int found =
		translate(r, 0, a->msg, a->msg_length, &whole) || r->c->scrub.replaced != replaced;

	secbuf_wipe(&whole);
	return found;
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
		 * frame's room goes without its text. From the upstream, the code's two bytes
		 * and the reason are scrubbed as one too: a secret may begin in the code. */
		if (why && (translate(r, s->guest, why, wn, &out) || out.n > 123 ||
			    c->scrub.replaced != replaced || (!s->guest && in_code(r, a))))
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

/* The relay's state, made once the 101 went to the guest. */
static struct ws_relay *relay_new(struct conn *c)
{
	struct ws_relay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	*r = (struct ws_relay){
		.c = c, .early = c->ws_early, .early_n = c->ws_early_n, .quiet_since = mono_ms()
	};
	if (side_init(r, &r->g, 1) || side_init(r, &r->u, 0)) {
		if (r->g.ctx)
			wslay_event_context_free(r->g.ctx);
		free(r);
		return NULL;
	}
	return r;
}

/* The relay's end: its outcome and who closed it for the record, its state freed. What is
 * still queued (a last close) goes out first when FLUSH is set. */
static void relay_end(struct conn *c, int flush, const char *outcome)
{
	struct ws_relay *r = c->wsr;

	if (flush) {
		side_send(&r->g);
		side_send(&r->u);
		if (!r->u.gone)
			up_flush(r);
		proxy_io_client_flush(c);
	}
	secbuf_wipe(&r->ubuf);
	c->ws_stats.closed_by = r->closed_by ? r->closed_by : "broker";
	if (c->cut && c->cut->set) /* the loop took it: its hang-up was the broker's doing */
		c->ws_stats.closed_by = "broker";
	if (r->tripped)
		c->ws_stats.closed_by = "tripwire";
	if (!c->outcome)
		c->outcome = outcome ? outcome
			     : side_done(&r->g) && side_done(&r->u) && !r->g.gone && !r->u.gone
				     ? AUDIT_OUTCOME_ANSWERED
			     : r->g.gone ? AUDIT_OUTCOME_GUEST_CLOSED
					 : AUDIT_OUTCOME_CUT;
	wslay_event_context_free(r->g.ctx);
	wslay_event_context_free(r->u.ctx);
	free(r);
	c->wsr = NULL;
	c->up_keep = 0;
}

void proxy_ws_free(struct conn *c, const char *outcome)
{
	if (c->wsr)
		relay_end(c, 0, outcome);
}

/* The WebSocket, after the 101 went to the guest, until both sides closed (0), or until it has
 * been quiet both ways for the worker's linger (PROXY_RELAY_PARKED: the loop waits on both
 * sides without a thread, and calls this again). */
int proxy_ws_relay(struct conn *c)
{
	struct ws_relay *r = c->wsr;
	int grace = c->cfg->io_timeout_ms < WS_CLOSE_GRACE_MS
			    ? (c->cfg->io_timeout_ms > 0 ? c->cfg->io_timeout_ms : 0)
			    : WS_CLOSE_GRACE_MS;
	int bound = c->cfg->stream_idle_ms > 0 ? c->cfg->stream_idle_ms : 1000;

	if (!r && !(r = c->wsr = relay_new(c))) {
		c->outcome = AUDIT_OUTCOME_CUT;
		return 0;
	}
	while (!(side_done(&r->g) && side_done(&r->u))) {
		int64_t now = mono_ms();
		int64_t quiet_ms = r->quiet_since + bound - now;
		int park;

		/* One side failed without a close: the other is told, with the code that says
		 * so (a close already queued there stays; wslay queues one close per side). */
		if (side_failed(&r->g) && !r->told_u) {
			r->told_u = 1;
			if (!r->closed_by)
				r->closed_by = r->g.gone ? "guest" : "broker";
			side_close(&r->u, WSLAY_CODE_GOING_AWAY, NULL, 0);
		}
		if (side_failed(&r->u) && !r->told_g) {
			r->told_g = 1;
			if (!r->closed_by)
				r->closed_by = r->u.gone ? "upstream" : "broker";
			side_close(&r->g, WSLAY_CODE_INTERNAL_SERVER_ERROR,
				   (const uint8_t *)"the upstream's connection failed", 32);
		}
		if (!r->closing_since && (side_closing(&r->g) || side_closing(&r->u)))
			r->closing_since = now;
		if (r->closing_since) {
			if (now - r->closing_since >= grace)
				break;
			quiet_ms = grace - (now - r->closing_since);
		}
		/* The guest hung up: the upstream gets its close and is not waited for, since no
		 * one is left to hear its answer (the record is written at once). */
		if (r->g.gone && (r->u.gone || wslay_event_get_close_sent(r->u.ctx)))
			break;
		if (quiet_ms < 0 || r->g.gone)
			quiet_ms = 0;
		/* Quiet past the linger, and not closing: waited out without a thread. */
		park = !r->closing_since && c->linger_ms >= 0 && quiet_ms > c->linger_ms;
		int got = round_trip(r, park ? c->linger_ms : (int)quiet_ms);

		if (got < 0)
			break;
		if (got) {
			r->quiet_since = mono_ms();
		} else if (park) {
			c->stream_due_ms = now + quiet_ms;
			return PROXY_RELAY_PARKED;
		} else if (!r->closing_since) { /* silent both ways past the stream's bound */
			r->closed_by = "broker";
			c->outcome = AUDIT_OUTCOME_IDLE;
			close_both(r, WSLAY_CODE_GOING_AWAY, "idle");
		}
	}
	relay_end(c, 1, NULL);
	return 0;
}
