/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_rewrite.c: what goes upstream — the placeholder tripwire and replacement, path
 * checks, and the rewritten request head (the secrets themselves: proxy_secret.c). */
#include "broker/proxy_internal.h"

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

/* Why a value cannot be a header field's (rules_field_value_ok). */
#define CTL_WHY "it holds a control character (only tab is allowed)"

static size_t name_run(const char *t, size_t len)
{
	size_t i = 0;

	while (i < len && (isalnum((unsigned char)t[i]) || t[i] == '_'))
		i++;
	return i;
}

/* Copies TEXT into OUT (when OUT is not NULL) with every placeholder replaced by its secret:
 * percent-encoded in the URL (PH_URL), checked for line breaks in a header (PH_HEADER), as
 * it is in a body (PH_BODY). A placeholder for a secret whose destinations do not
 * include this request blocks the whole request: that is the tripwire. */
int proxy_rewrite_placeholders(struct conn *c, const struct rules_req *q, const char *t, size_t len,
			       struct secbuf *out, int mode)
{
	while (len) {
		const char *at = memmem(t, len, RULES_PLACEHOLDER, RULES_PLACEHOLDER_N);
		const struct rules_secret *s;
		const struct secret_slot *sl;
		size_t nl;

		if (!at) {
			if (out)
				secbuf_add(out, t, len);
			return 0;
		}
		if (out)
			secbuf_add(out, t, (size_t)(at - t));
		len -= (size_t)(at - t) + RULES_PLACEHOLDER_N;
		t = at + RULES_PLACEHOLDER_N;
		nl = name_run(t, len);
		s = rules_find_secret(c->cfg->rules, t, nl);
		if (!s || !rules_secret_match(s, q)) {
			proxy_fail(c, 403,
				   "tripwire: placeholder %s%.*s may only be sent to its own "
				   "destinations; request to %s blocked",
				   RULES_PLACEHOLDER, (int)(nl > 64 ? 64 : nl), t, q->host);
			snprintf(c->rule, sizeof(c->rule), "tripwire:%.*s",
				 (int)(nl > 64 ? 64 : nl), t);
			return -1;
		}
		if (out && mode == PH_BODY && c->body_mode == BODY_STREAM) {
			proxy_fail(c, 403,
				   "placeholder %s%.*s in a body streamed with its length: a value "
				   "there would change the length",
				   RULES_PLACEHOLDER, (int)(nl > 64 ? 64 : nl), t);
			return -1;
		}
		if (out && s->kind == RULES_INJECT_AWS_SIGV4) {
			proxy_fail(
				c, 403,
				"placeholder %s%s: an AWS key signs requests, it is never placed "
				"in one",
				RULES_PLACEHOLDER, s->name);
			return -1;
		}
		if (out) {
			sl = proxy_secret_get(c, s);
			if (!sl) {
				proxy_secret_unavailable(c, s);
				return -1;
			}
			if (mode == PH_URL) {
				char *e = rules_pct_encode(sl->val, sl->len);

				if (!e)
					return -1;
				secbuf_str(out, e);
				OPENSSL_cleanse(e, strlen(e));
				free(e);
			} else {
				if (mode == PH_HEADER && !rules_field_value_ok(sl->val, sl->len)) {
					proxy_fail(c, 502,
						   "secret %s cannot travel in a header: %s",
						   s->name, CTL_WHY);
					return -1;
				}
				secbuf_add(out, sl->val, sl->len);
			}
		}
		t += nl;
		len -= nl;
	}
	return 0;
}

/* A path whose meaning could change after the prefix check is refused rather than
 * normalised: dot segments (also "..;x", which servlet containers read as ".."), encoded dots,
 * slashes, backslashes or NULs (an upstream that decodes before it resolves would see other
 * segments), and backslashes. */
int proxy_rewrite_path_ok(const char *p, size_t len)
{
	size_t i, seg = 0;

	for (i = 0; i <= len; i++) {
		if (i == len || p[i] == '/') {
			const char *semi = memchr(p + seg, ';', i - seg);
			size_t sl = (semi ? (size_t)(semi - p) : i) - seg;

			if ((sl == 1 && p[seg] == '.') ||
			    (sl == 2 && p[seg] == '.' && p[seg + 1] == '.'))
				return 0;
			seg = i + 1;
			continue;
		}
		if (p[i] == '\\')
			return 0;
		if (p[i] == '%' && i + 2 < len &&
		    (!strncasecmp(p + i, "%2e", 3) || !strncasecmp(p + i, "%2f", 3) ||
		     !strncasecmp(p + i, "%5c", 3) || !strncmp(p + i, "%00", 3)))
			return 0;
	}
	return len && p[0] == '/';
}

static int is_injected_field(const struct conn *c, const struct rules_secret **inj, size_t n_inj,
			     size_t i)
{
	size_t k;

	for (k = 0; k < n_inj; k++)
		if (inj[k]->kind != RULES_INJECT_QUERY && proxy_head_is(&c->req, i, inj[k]->field))
			return 1;
	return n_inj &&
	       (proxy_head_is(&c->req, i, "authorization") || proxy_head_is(&c->req, i, "cookie"));
}

/* The value of secret S for injection, rendered by its rule's template (caller wipes and frees
 * it); NULL, with the reason set where there is one to give, when it cannot be. */
static char *inject_value(struct conn *c, const struct rules_secret *s)
{
	const struct secret_slot *sl = proxy_secret_get(c, s);
	char *r;

	if (!sl) {
		proxy_secret_unavailable(c, s);
		return NULL;
	}
	r = rules_render(s, sl->val, sl->len);
	if (!r && s->kind != RULES_INJECT_QUERY)
		proxy_fail(c, 502, "secret %s cannot travel in a header: %s", s->name, CTL_WHY);
	return r;
}

static void wipe_str(char *r)
{
	OPENSSL_cleanse(r, strlen(r));
	free(r);
}

/* The request line's target: the path with placeholders replaced, then the query — the guest's
 * parameters minus any named like an injected one, then ours. */
static int head_target(struct conn *c, const struct rules_req *q, const char *query, size_t qlen,
		       const struct rules_secret **inj, size_t n_inj, struct secbuf *o)
{
	size_t i, j, k;
	int first = 1;

	if (proxy_rewrite_placeholders(c, q, q->path, strlen(q->path), o, PH_URL))
		return -1;
	for (i = 0; i < qlen;) {
		const char *end = memchr(query + i, '&', qlen - i);
		size_t pl = end ? (size_t)(end - (query + i)) : qlen - i, kl;
		int dropped = 0;

		kl = pl;
		for (j = 0; j < pl; j++)
			if (query[i + j] == '=') {
				kl = j;
				break;
			}
		for (k = 0; k < n_inj; k++)
			if (inj[k]->kind == RULES_INJECT_QUERY && strlen(inj[k]->field) == kl &&
			    !memcmp(inj[k]->field, query + i, kl))
				dropped = 1;
		if (pl && !dropped) {
			secbuf_str(o, first ? "?" : "&");
			first = 0;
			if (proxy_rewrite_placeholders(c, q, query + i, pl, o, PH_URL))
				return -1;
		}
		i += pl + 1;
	}
	for (k = 0; k < n_inj; k++) {
		char *r;

		if (inj[k]->kind != RULES_INJECT_QUERY)
			continue;
		if (!(r = inject_value(c, inj[k])))
			return -1;
		secbuf_str(o, first ? "?" : "&");
		first = 0;
		secbuf_str(o, inj[k]->field);
		secbuf_str(o, "=");
		secbuf_str(o, r);
		wipe_str(r);
	}
	return 0;
}

/* The version and Host: the destination the rule names, whatever the guest wrote. */
static void head_host(const struct conn *c, struct secbuf *o)
{
	char line[400];
	/* An IPv6 literal is bracketed in Host (RFC 3986 3.2.2), or its colons read as a port. */
	int v6 = strchr(c->dest->host, ':') != NULL;

	if (c->dest->port != rules_default_port(c->dest->scheme))
		snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s%s%s:%u\r\n", v6 ? "[" : "",
			 c->dest->host, v6 ? "]" : "", c->dest->port);
	else
		snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s%s%s\r\n", v6 ? "[" : "",
			 c->dest->host, v6 ? "]" : "");
	secbuf_str(o, line);
}

/* The guest's fields but those of the hop, the framing and the credentials, placeholders
 * replaced; then the injected fields. */
static int head_fields(struct conn *c, const struct rules_req *q, const struct rules_secret **inj,
		       size_t n_inj, struct secbuf *o)
{
	static const char *const drop[] = { "host",
					    "proxy-authorization",
					    "proxy-connection",
					    "connection",
					    "keep-alive",
					    "te",
					    "trailer",
					    "upgrade",
					    "transfer-encoding",
					    "content-length",
					    "expect",
					    "accept-encoding",
					    NULL };
	size_t i, j, k;

	for (i = 0; i < c->req.n; i++) {
		for (j = 0; drop[j] && !proxy_head_is(&c->req, i, drop[j]); j++)
			;
		if (drop[j] || is_injected_field(c, inj, n_inj, i))
			continue;
		/* A WebSocket's extensions are not offered: permessage-deflate would hide its
		 * messages from the scrubber (proxy_ws.c). */
		if (c->ws && proxy_head_is(&c->req, i, "sec-websocket-extensions"))
			continue;
		/* A part of an answer hides the rest of it from the scrubber: with a credential
		 * in the request, whole answers only. */
		if (n_inj &&
		    (proxy_head_is(&c->req, i, "range") || proxy_head_is(&c->req, i, "if-range")))
			continue;
		/* Nor compressed gRPC messages: without the guest's list a server sends none. */
		if (n_inj && proxy_head_is(&c->req, i, "grpc-accept-encoding"))
			continue;
		secbuf_add(o, c->req.arena + c->req.h[i].name_off, c->req.h[i].name_len);
		secbuf_str(o, ": ");
		if (proxy_rewrite_placeholders(c, q, proxy_head_val(&c->req, i),
					       c->req.h[i].val_len, o, PH_HEADER))
			return -1;
		secbuf_str(o, "\r\n");
	}
	for (k = 0; k < n_inj; k++) {
		char *r;

		if (inj[k]->kind == RULES_INJECT_QUERY || inj[k]->kind == RULES_INJECT_AWS_SIGV4)
			continue; /* in the target; signed (proxy_aws.c) */
		if (!(r = inject_value(c, inj[k])))
			return -1;
		secbuf_str(o, inj[k]->field);
		secbuf_str(o, ": ");
		secbuf_str(o, r);
		secbuf_str(o, "\r\n");
		wipe_str(r);
	}
	return 0;
}

/* What the broker itself says about the body and the answer it takes. */
static void head_framing(const struct conn *c, struct secbuf *o)
{
	char line[64];

	/* Only bytes the scrubber can read come back: no compression (proxy_response.c decodes
	 * or refuses what an upstream sends anyway). */
	secbuf_str(o, "Accept-Encoding: identity\r\n");
	if (c->ws)
		secbuf_str(o, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
	/* A held body's length is known only at its end (proxy_body_finish). */
	if (c->body_mode == BODY_CHUNKED)
		secbuf_str(o, "Transfer-Encoding: chunked\r\n");
	else if (c->body_mode == BODY_NONE && c->cl_zero) /* S3 takes no PUT without a length */
		secbuf_str(o, "Content-Length: 0\r\n");
	else if (c->body_mode == BODY_STREAM) {
		snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
			 (unsigned long long)c->rq.content_length);
		secbuf_str(o, line);
	}
	if (c->body_mode != BODY_BUFFER)
		secbuf_str(o, "\r\n");
}

/* Builds the request for the upstream: origin-form target with placeholders replaced and the
 * query credential injected, filtered headers, injected headers, the body's framing. */
int proxy_rewrite_head(struct conn *c, const struct rules_req *q, const char *query, size_t qlen,
		       const struct rules_secret **inj, size_t n_inj, struct secbuf *o)
{
	secbuf_str(o, c->method);
	secbuf_str(o, " ");
	if (head_target(c, q, query, qlen, inj, n_inj, o))
		return -1;
	head_host(c, o);
	if (head_fields(c, q, inj, n_inj, o))
		return -1;
	head_framing(c, o);
	return o->oom ? -1 : 0;
}
