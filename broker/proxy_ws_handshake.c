/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_ws_handshake.c: a WebSocket's opening handshake (RFC 6455 4), checked both
 * ways. The guest's: one Upgrade: websocket on a GET in HTTP/1.1 with Connection: Upgrade, no
 * body, one 16-byte key, version 13 (anything else is refused before a rule is asked). The
 * upstream's 101: Upgrade, Connection, the key's Sec-WebSocket-Accept, no extension (none is
 * offered: permessage-deflate would hide messages from the scrubber) and no subprotocol the
 * guest did not offer. What follows the 101 is proxy_ws.c's. */
#include "broker/proxy_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

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
