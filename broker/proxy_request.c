/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_request.c: a request's head, once http_parser has read it — its framing, where
 * it goes, the decision, the placeholder tripwire, the head the upstream gets, then holding it
 * for a person or sending it. One function per phase; proxy_request_headers runs them in
 * order and stops at the first refusal (the reason is in the connection, proxy_fail). */
#include "broker/proxy_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "broker/reqpath.h"

/* VAL is WANT (any case) but for trailing whitespace, which is not part of a field value. */
static int val_is(const char *val, size_t len, const char *want)
{
	while (len && (val[len - 1] == ' ' || val[len - 1] == '\t'))
		len--;
	return len == strlen(want) && !strncasecmp(val, want, len);
}

/* Headers some frameworks read as the request's real method. */
static int method_override(const struct head *h, size_t i)
{
	static const char *const names[] = { "x-http-method-override", "x-http-method",
					     "x-method-override", "x-method", "x-original-method" };

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (proxy_head_is(h, i, names[k]))
			return 1;
	return 0;
}

/* Whether the (canonical) query has a parameter named "_method", in any case: Rails, Laravel
 * and Symfony read it as the request's real method. */
static int query_method_override(const char *q, size_t n)
{
	static const char name[] = "_method";
	size_t k = sizeof(name) - 1;

	for (size_t i = 0; i < n;) {
		size_t end = i;
		while (end < n && q[end] != '&' && q[end] != ';')
			end++;
		if (end - i >= k && !strncasecmp(q + i, name, k) &&
		    (end - i == k || q[i + k] == '='))
			return 1;
		i = end + 1;
	}
	return 0;
}

/* The head's framing and the headers the proxy acts on. Whatever a guest can frame one way
 * for the broker and another for an upstream is refused here: two framings, a length that is
 * not digits, a transfer coding other than chunked alone, chunked in HTTP/1.0. Then reqcheck
 * is told how the body ends. *HOST_HDR: the Host header's index, SIZE_MAX if none. */
static int head_framing(struct conn *c, const http_parser *p, size_t *host_hdr)
{
	size_t i, k, n_te = 0, n_cl = 0;
	int upgrade = 0;

	*host_hdr = SIZE_MAX;
	for (i = 0; i < c->req.n; i++) {
		const char *v = proxy_head_val(&c->req, i);
		size_t vl = c->req.h[i].val_len;

		if (proxy_head_is(&c->req, i, "transfer-encoding")) {
			n_te++;
			if (!val_is(v, vl, "chunked")) {
				proxy_fail(c, 400, "only Transfer-Encoding: chunked is accepted");
				return -1;
			}
		} else if (proxy_head_is(&c->req, i, "content-length")) {
			n_cl++;
			for (k = 0; k < vl && v[k] >= '0' && v[k] <= '9'; k++)
				;
			if (!k || k > 18 || !val_is(v + k, vl - k, "")) {
				proxy_fail(c, 400, "Content-Length must be a decimal number");
				return -1;
			}
		} else if (proxy_head_is(&c->req, i, "expect")) {
			if (!val_is(v, vl, "100-continue")) {
				proxy_fail(c, 400, "unsupported Expect header");
				return -1;
			}
			c->expect_continue = 1;
		} else if (method_override(&c->req, i)) {
			/* The upstream would act on a method the decision never saw. */
			proxy_fail(c, 400, "method override headers are not accepted");
			return -1;
		} else if (proxy_head_is(&c->req, i, "upgrade")) {
			upgrade = 1; /* a WebSocket, or refused (proxy_ws_request) */
		} else if (proxy_head_is(&c->req, i, "host")) {
			if (*host_hdr != SIZE_MAX) {
				proxy_fail(c, 400, "more than one Host header");
				return -1;
			}
			*host_hdr = i;
		}
	}
	/* Two framings for one body is how requests are smuggled: refuse, never pick one. */
	if ((n_te && n_cl) || n_te > 1 || n_cl > 1) {
		proxy_fail(c, 400,
			   "conflicting body lengths (Content-Length and Transfer-Encoding, "
			   "or either twice)");
		return -1;
	}
	if (n_te && c->client_10) {
		proxy_fail(c, 400, "Transfer-Encoding in an HTTP/1.0 request");
		return -1;
	}
	c->chunked_in = n_te == 1;
	c->cl_zero = n_cl && !c->chunked_in && p->content_length == 0;
	c->has_body = c->chunked_in || (n_cl && p->content_length > 0);
	if (upgrade && proxy_ws_request(c, p))
		return -1;
	reqcheck_framing(&c->rc, c->chunked_in,
			 n_cl && !c->chunked_in ? (uint64_t)p->content_length : 0);
	return 0;
}

/* One request as the phases of its head see it (proxy_request_headers). */
struct request_plan {
	const char *url, *query;
	size_t qlen, host_hdr, n_inj;
	char scheme[8], path[PROXY_MAX_URL + 1], qbuf[PROXY_MAX_URL + 1];
	int port, https_url;
	struct rules_req q;
	const struct rules_secret *inj[DECIDE_MAX_INJECT];
};

/* The head as a whole: where reqcheck says it ends, within the arena; its method. */
static int head_begin(struct conn *c, const http_parser *p)
{
	c->head_seen = 1;
	if (c->rc.state != RC_HEAD_DONE) {
		proxy_fail(c, 400, "the request head ended where its grammar says it does not");
		return -1;
	}
	if (proxy_head_done(&c->req)) {
		proxy_fail(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	snprintf(c->method, sizeof(c->method), "%s", http_method_str(p->method));
	c->client_10 = p->http_major == 1 && p->http_minor == 0;
	c->is_head = p->method == HTTP_HEAD;
	return 0;
}

/* The target in its one canonical spelling (reqpath.h): what every rule is matched against and
 * what the upstream gets, so the two cannot read it differently. */
static int request_canon(struct conn *c, struct request_plan *r)
{
	char raw[PROXY_MAX_URL + 1];
	const char *why;

	snprintf(raw, sizeof(raw), "%s", r->path);
	if (reqpath_canon_path(raw, strlen(raw), r->path, &why) ||
	    reqpath_canon_query(r->query, r->qlen, r->qbuf, &why)) {
		proxy_target_log(c, r->scheme, r->port, raw);
		proxy_fail(c, 400, "%s", why);
		return -1;
	}
	r->query = r->qbuf;
	r->qlen = strlen(r->qbuf);
	if (query_method_override(r->query, r->qlen)) {
		proxy_target_log(c, r->scheme, r->port, r->path);
		proxy_fail(c, 400, "a method override in the query (_method) is refused");
		return -1;
	}
	r->q.method = c->method;
	r->q.host = c->host;
	r->q.port = r->port;
	r->q.path = r->path;
	proxy_target_log(c, r->scheme, r->port, r->path);
	if (!proxy_rewrite_path_ok(r->path, strlen(r->path))) {
		proxy_fail(c, 400, "dot segments, encoded slashes or backslashes in the path");
		return -1;
	}
	return 0;
}

/* Where the request goes: its target, a Host header that names the same authority, and a
 * path whose meaning cannot change upstream. 1: the request asks for the session CA's
 * certificate (answered at the end of the request). */
static int request_target(struct conn *c, struct request_plan *r)
{
	switch (proxy_target(c, r->url, r->scheme, &r->port, r->path, &r->query, &r->qlen)) {
	case 1:
		return 1;
	case 0:
		break;
	default:
		return -1;
	}
	r->https_url = !strcmp(r->scheme, "https");
	c->port = r->port >= 0 ? r->port : r->https_url ? 443 : 80;
	if (r->host_hdr == SIZE_MAX && c->in_tunnel) {
		proxy_fail(c, 400, "a request in a tunnel needs a Host header");
		return -1;
	}
	if (r->host_hdr != SIZE_MAX &&
	    !proxy_target_host_ok(proxy_head_val(&c->req, r->host_hdr), c->host, c->port)) {
		/* Host must name the target's authority: a mismatch is a confused or lying
		 * client (in a tunnel: the CONNECT's host, which the TLS name also matched). */
		proxy_fail(c, 400, "the Host header does not match the %s",
			   c->in_tunnel ? "CONNECT host" : "URL");
		return -1;
	}
	return request_canon(c, r);
}

/* decide() on the request; the secrets to inject into r->inj. Every injected secret is named
 * in the audit record (and, joined, to a person asked to approve). */
static int request_decide(struct conn *c, struct request_plan *r)
{
	struct decide_req dq = {
		c->method, c->host, r->port, r->path, r->https_url, NULL, DECIDE_GIT_REFS_UNKNOWN
	};
	struct decision d;
	size_t i, at = 0;

	decide(c->cfg->policy, c->cfg->rules, &dq, &d);
	snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
	c->layer = decide_layer_name(d.layer);
	for (i = 0; i < d.n_inject; i++) {
		c->inj_names[i] = d.inject[i]->name;
		c->inj[i] = d.inject[i];
		at += (size_t)snprintf(c->secret_name + at, sizeof(c->secret_name) - at, "%s%s",
				       i ? "," : "", d.inject[i]->name);
		if (at >= sizeof(c->secret_name))
			at = sizeof(c->secret_name) - 1;
	}
	c->n_inj_names = d.n_inject;
	c->decision = d.verdict == VERDICT_DENY ? "deny" : "allow";
	if (d.verdict == VERDICT_DENY) {
		proxy_fail(c, 403, "%s", d.why);
		return -1;
	}
	c->dest = d.dest;
	r->n_inj = d.n_inject;
	memcpy(r->inj, d.inject, d.n_inject * sizeof(r->inj[0]));
	/* Held: a person decides (or, for a push rule, the body must be read first). */
	c->hold = d.verdict == VERDICT_APPROVAL || d.needs_body;
	c->req_https = r->https_url;
	c->hold_needs_body = d.verdict != VERDICT_APPROVAL;
	return 0;
}

/* The tripwire, over everything the guest sent (also headers that are dropped): a placeholder
 * toward a host its secret may not go to blocks the request. */
static int request_tripwire(struct conn *c, const struct request_plan *r)
{
	size_t i;

	/* Every secret the rules name is scrubbed from every response, whichever host sent it
	 * (a host may echo what another request carried), so all are loaded. */
	proxy_secret_scrub_all(c);
	/* The URL as sent and as canonical: decoding may spell a placeholder out. */
	if (proxy_rewrite_placeholders(c, &r->q, r->url, c->req.url_len, NULL, PH_URL) ||
	    proxy_rewrite_placeholders(c, &r->q, r->path, strlen(r->path), NULL, PH_URL) ||
	    proxy_rewrite_placeholders(c, &r->q, r->query, r->qlen, NULL, PH_URL))
		return -1;
	for (i = 0; i < c->req.n; i++)
		if (proxy_rewrite_placeholders(c, &r->q, proxy_head_val(&c->req, i),
					       c->req.h[i].val_len, NULL, PH_HEADER))
			return -1;
	return 0;
}

/* The head the upstream will get (kept, to send again once on a reused connection), and how
 * the body will follow it. */
static int request_upstream_head(struct conn *c, struct request_plan *r)
{
	struct secbuf o = { 0 };

	/* The body is decided as it streams (proxy_body.c), against the same request. */
	snprintf(c->q_path, sizeof(c->q_path), "%s", r->path);
	c->q = r->q;
	c->q.path = c->q_path;
	proxy_body_plan(c, r->n_inj);
	if (proxy_rewrite_head(c, &r->q, r->query, r->qlen, r->inj, r->n_inj, &o)) {
		secbuf_wipe(&o);
		proxy_fail(c, 502, "cannot build the upstream request");
		return -1;
	}
	if (c->up_head) {
		OPENSSL_cleanse(c->up_head, c->up_head_len);
		free(c->up_head);
	}
	c->up_head = o.b;
	c->up_head_len = o.n;
	/* Signed now, unless the body it hashes must be whole first (proxy_body_send_held). */
	return c->aws && c->body_mode != BODY_BUFFER ? proxy_aws_sign(c) : 0;
}

/* A held request waits for its decision with nothing sent upstream; any other goes now, on the
 * connection to the same destination if one is open. */
static int request_hold_or_send(struct conn *c)
{
	int reused;

	if (c->hold) {
		/* Nothing reaches the upstream, not even a connection, before the decision. */
		if (proxy_hold_begin(c))
			return -1;
		if (c->expect_continue && !c->client_10 &&
		    proxy_io_client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
			return -1;
		return 0;
	}
	reused = c->up_fd >= 0 && c->up_dest == c->dest;
	if (!reused) {
		proxy_io_up_close(c);
		if (proxy_io_up_open(c))
			return -1;
	}
	c->up_reused = reused;
	/* A held body's head goes out with it, at the end of the request (proxy_body_finish). */
	if (c->body_mode != BODY_BUFFER && proxy_io_up_write(c, c->up_head, c->up_head_len)) {
		proxy_io_up_close(c);
		if (!reused || proxy_io_up_open(c) ||
		    proxy_io_up_write(c, c->up_head, c->up_head_len)) {
			proxy_fail(c, 502, "cannot send the request to %s", c->host);
			return -1;
		}
	}
	if (c->expect_continue && !c->client_10 &&
	    proxy_io_client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
		return -1;
	return 0;
}

int proxy_request_headers(http_parser *p)
{
	struct conn *c = CONN(p);
	struct request_plan r = {
		.url = c->req.arena + c->req.url_off, .query = "", .host_hdr = SIZE_MAX, .port = -1
	};
	int rc;

	c->tls_deadline_ms = 0; /* the head is whole: its records' deadline is kept */
	if (head_begin(c, p))
		return -1;
	/* Nothing goes out that cannot be recorded: room for this request's record is set
	 * aside now, or it is refused. */
	if (c->cfg->audit && !c->audit_reserved) {
		char why[160];

		if (audit_reserve(c->cfg->audit, why, sizeof(why))) {
			proxy_fail(c, 503, "%s; nothing is forwarded until it can be", why);
			return -1;
		}
		c->audit_reserved = 1;
	}
	if (p->method == HTTP_CONNECT)
		return proxy_tunnel_connect(c);
	if (head_framing(c, p, &r.host_hdr))
		return -1;
	rc = request_target(c, &r);
	if (rc)
		return rc > 0 ? 0 : -1;
	if (request_decide(c, &r) || request_tripwire(c, &r) ||
	    proxy_aws_check(c, r.path, r.query, r.qlen, r.inj, r.n_inj) ||
	    request_upstream_head(c, &r))
		return -1;
	return request_hold_or_send(c);
}
