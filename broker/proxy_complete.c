/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_complete.c: what happens when a request has arrived whole — the session CA's
 * certificate served, a held request decided, the body finished, the answer relayed (once
 * more on a reused connection the upstream had closed), a WebSocket carried to its end, and
 * the record written. proxy.c calls it from http_parser's on_message_complete; a relay that
 * went quiet parks (c->stream) and is carried on later by proxy_complete_resume. */
#include "broker/proxy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker/mitm_ca.h"

/* The session CA's certificate (public): how bulkhead-init learns what to trust. */
static int serve_ca(struct conn *c)
{
	const char *pem = mitm_ca_pem(c->cfg->mitm);
	char head[200];
	int l = snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/x-pem-file\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 strlen(pem));

	if (proxy_io_client_write(c, head, (size_t)l) ||
	    (!c->is_head && proxy_io_client_write(c, pem, strlen(pem))))
		return -1;
	c->resp_done = 1; /* answered whole: its record says so */
	proxy_audit_log(c, 200);
	c->served++;
	return 0;
}

/* The WebSocket relayed on (c->ws_open): parked again, or carried to its end and recorded. */
static int websocket(struct conn *c)
{
	if (proxy_ws_relay(c) == PROXY_RELAY_PARKED) {
		c->stream = STREAM_WS;
		return -1;
	}
	proxy_io_up_close(c);
	proxy_audit_log(c, 101);
	c->served++;
	c->close_after = 1;
	return -1;
}

/* What follows the answer's relay (RC, proxy_response_relay): a parked relay waits, a failed
 * one ends the connection, a WebSocket is carried on; the record is written. -1 stops the
 * parser, as proxy_request_complete. */
static int answered(struct conn *c, int rc)
{
	if (rc == PROXY_RELAY_PARKED) {
		c->stream = STREAM_ANSWER;
		return -1;
	}
	if (rc) {
		if (rc == -EAGAIN && !c->resp_started)
			proxy_fail(c, 502, "upstream %s closed the connection", c->host);
		proxy_io_up_close(c);
		if (!c->resp_started)
			return -1;
		c->close_after = 1;
		proxy_audit_log(c, c->rp.status_code);
		return -1;
	}
	/* The connection is a WebSocket's now, to its end: one record for all of it. */
	if (c->ws_open)
		return websocket(c);
	if (!c->up_keep)
		proxy_io_up_close(c);
	proxy_audit_log(c, (int)c->rp.status_code);
	c->served++;
	return c->close_after ? -1 : 0;
}

int proxy_request_complete(http_parser *p)
{
	struct conn *c = CONN(p);
	int rc;

	if (c->connect_ok)
		return 0; /* the tunnel starts once the parser has stopped (proxy_serve) */
	/* The parser ends the message where reqcheck says the body ends, or they disagree. */
	if (c->rc.state != RC_DONE) {
		proxy_fail(c, 400, "the request ended where its framing says it does not");
		return -1;
	}
	reqcheck_next(&c->rc);
	if (c->serve_ca) {
		if (!c->cfg->mitm) {
			proxy_fail(c, 404, "this broker has no session CA");
			return -1;
		}
		if (!http_should_keep_alive(p))
			c->close_after = 1; /* stops the parser; not an error */
		return serve_ca(c) || c->close_after ? -1 : 0;
	}
	if (c->err_status || (c->up_fd < 0 && !c->hold))
		return -1;
	if (c->hold) {
		/* Decided now: approved (or no longer covered) goes on, like any request. */
		if (proxy_hold_decide(c))
			return -1;
		if (c->up_fd < 0 || c->up_dest != c->dest) {
			proxy_io_up_close(c);
			if (proxy_io_up_open(c))
				return -1;
		}
	}
	if (proxy_body_finish(c))
		return -1;
	if (!http_should_keep_alive(p))
		c->close_after = 1;
	rc = proxy_response_relay(c);
	if (rc == -EAGAIN && (!c->has_body || c->body_mode == BODY_BUFFER)) {
		/* The upstream closed the idle connection we reused; one fresh attempt (a held
		 * body can be sent again; a streamed one is gone). */
		proxy_io_up_close(c);
		if (proxy_io_up_open(c) ||
		    (c->body_mode == BODY_BUFFER
			     ? proxy_body_send_held(c)
			     : proxy_io_up_write(c, c->up_head, c->up_head_len)))
			return -1;
		rc = proxy_response_relay(c);
	}
	return answered(c, rc);
}

int proxy_complete_resume(struct conn *c)
{
	int s = c->stream;

	c->stream = STREAM_NONE;
	return s == STREAM_WS ? websocket(c) : answered(c, proxy_response_resume(c));
}

void proxy_complete_abandon(struct conn *c, const char *outcome)
{
	int s = c->stream;

	c->stream = STREAM_NONE;
	if (s == STREAM_WS) {
		proxy_ws_free(c, outcome);
		proxy_io_up_close(c);
		proxy_audit_log(c, 101);
	} else if (s == STREAM_ANSWER) {
		proxy_decode_free(c);
		proxy_io_up_close(c);
		if (!c->outcome)
			c->outcome = outcome;
		proxy_audit_log(c, (int)c->rp.status_code);
	}
}
