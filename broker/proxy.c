/* broker/proxy.c: serves one guest connection. The guest's request is parsed by http_parser,
 * decided against the rules at the end of its head, rewritten (proxy_rewrite.c) and streamed
 * to the upstream; the response comes back through proxy_response.c. CONNECT tunnels end here
 * too (proxy_tunnel.c), with a leaf from the session CA. */
#include "broker/proxy_conn.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "broker/mitm_ca.h"

_Static_assert(REQCHECK_URL_MAX == PROXY_MAX_URL, "reqcheck and the arena agree on URLs");
_Static_assert(REQCHECK_LINE_MAX > PROXY_MAX_HEAD, "a line as large as a head reaches the arena");
#include "broker/upstream_tls.h"
#include "lib/agent_proto.h"

static int rq_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->req.url_len + len > PROXY_MAX_URL ||
	    head_append(&c->req, at, len, &c->req.url_len)) {
		set_err(c, 400, "request URL longer than %d bytes", PROXY_MAX_URL);
		return -1;
	}
	return 0;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->head_seen)
		return 0; /* a trailer field: checked by reqcheck, never forwarded */
	if (!c->req.n && !c->req.in_value && c->req.url_len) {
		c->req.used++; /* keep the URL's NUL */
	}
	switch (on_hfield(&c->req, at, len)) {
	case 0:
		return 0;
	case -2:
		set_err(c, 400, "more than %d request headers", PROXY_MAX_HEADERS);
		return -1;
	default:
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->head_seen)
		return 0;
	if (on_hvalue(&c->req, at, len)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	return 0;
}

/* Forgets the last request: what the next one's record and answer start from. */
static void request_reset(struct conn *c)
{
	head_reset(&c->req);
	c->is_head = c->chunked_in = c->client_10 = c->expect_continue = 0;
	c->resp_started = c->resp_done = c->has_body = 0;
	c->connect_ok = c->serve_ca = c->head_seen = 0;
	hold_end(c);
	c->layer = c->outcome = NULL;
	c->secret_name[0] = c->approval_id[0] = 0;
	c->n_inj_names = 0;
	c->dest = NULL;
	c->port = 0;
	c->bytes_up = c->bytes_down = 0;
	c->method[0] = c->host[0] = c->rule[0] = 0;
	snprintf(c->log_path, sizeof(c->log_path), "-");
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
}

static int rq_begin(http_parser *p)
{
	struct conn *c = CONN(p);

	proxy_log_due(c); /* never happens: each request is recorded at its end */
	request_reset(c);
	c->audit_due = 1;
	/* The parser starts a message where reqcheck says a head starts, or the two disagree
	 * about where the last one ended. */
	if (c->rc.state != RC_HEAD && c->rc.state != RC_HEAD_DONE) {
		set_err(c, 400, "a request began inside the previous one's body");
		return -1;
	}
	return 0;
}

/* VAL is WANT (any case) but for trailing whitespace, which is not part of a field value. */
static int val_is(const char *val, size_t len, const char *want)
{
	while (len && (val[len - 1] == ' ' || val[len - 1] == '\t'))
		len--;
	return len == strlen(want) && !strncasecmp(val, want, len);
}

/* The head's framing and the headers the proxy acts on. Whatever a guest can frame one way
 * for the broker and another for an upstream is refused here: two framings, a length that is
 * not digits, a transfer coding other than chunked alone, chunked in HTTP/1.0. Then reqcheck
 * is told how the body ends. *HOST_HDR: the Host header's index, SIZE_MAX if none. */
static int head_framing(struct conn *c, const http_parser *p, size_t *host_hdr)
{
	size_t i, k, n_te = 0, n_cl = 0;

	*host_hdr = SIZE_MAX;
	for (i = 0; i < c->req.n; i++) {
		const char *v = hdr_val(&c->req, i);
		size_t vl = c->req.h[i].val_len;

		if (hdr_is(&c->req, i, "transfer-encoding")) {
			n_te++;
			if (!val_is(v, vl, "chunked")) {
				set_err(c, 400, "only Transfer-Encoding: chunked is accepted");
				return -1;
			}
		} else if (hdr_is(&c->req, i, "content-length")) {
			n_cl++;
			for (k = 0; k < vl && v[k] >= '0' && v[k] <= '9'; k++)
				;
			if (!k || k > 18 || !val_is(v + k, vl - k, "")) {
				set_err(c, 400, "Content-Length must be a decimal number");
				return -1;
			}
		} else if (hdr_is(&c->req, i, "expect")) {
			if (!val_is(v, vl, "100-continue")) {
				set_err(c, 400, "unsupported Expect header");
				return -1;
			}
			c->expect_continue = 1;
		} else if (hdr_is(&c->req, i, "upgrade")) {
			set_err(c, 501, "protocol upgrades are not supported");
			return -1;
		} else if (hdr_is(&c->req, i, "host")) {
			if (*host_hdr != SIZE_MAX) {
				set_err(c, 400, "more than one Host header");
				return -1;
			}
			*host_hdr = i;
		}
	}
	/* Two framings for one body is how requests are smuggled: refuse, never pick one. */
	if ((n_te && n_cl) || n_te > 1 || n_cl > 1) {
		set_err(c, 400,
			"conflicting body lengths (Content-Length and Transfer-Encoding, "
			"or either twice)");
		return -1;
	}
	if (n_te && c->client_10) {
		set_err(c, 400, "Transfer-Encoding in an HTTP/1.0 request");
		return -1;
	}
	c->chunked_in = n_te == 1;
	c->has_body = c->chunked_in || (n_cl && p->content_length > 0);
	reqcheck_framing(&c->rc, c->chunked_in,
			 n_cl && !c->chunked_in ? (uint64_t)p->content_length : 0);
	return 0;
}

/* decide() on the request; the secrets to inject into INJ. Every injected secret is named in
 * the audit record (and, joined, to a person asked to approve). */
static int decide_request(struct conn *c, int port, const char *path, int https_url,
			  const struct rules_secret **inj, size_t *n_inj)
{
	struct decide_req dq = {
		c->method, c->host, port, path, https_url, NULL, DECIDE_GIT_REFS_UNKNOWN
	};
	struct decision d;
	size_t i, at = 0;

	decide(c->cfg->policy, c->cfg->rules, &dq, &d);
	snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
	c->layer = layer_name(d.layer);
	for (i = 0; i < d.n_inject; i++) {
		c->inj_names[i] = d.inject[i]->name;
		at += (size_t)snprintf(c->secret_name + at, sizeof(c->secret_name) - at, "%s%s",
				       i ? "," : "", d.inject[i]->name);
		if (at >= sizeof(c->secret_name))
			at = sizeof(c->secret_name) - 1;
	}
	c->n_inj_names = d.n_inject;
	if (d.verdict == VERDICT_DENY) {
		set_err(c, 403, "%s", d.why);
		return -1;
	}
	c->dest = d.dest;
	*n_inj = d.n_inject;
	memcpy(inj, d.inject, d.n_inject * sizeof(inj[0]));
	/* Held: a person decides (or, for a push rule, the body must be read first). */
	c->hold = d.verdict == VERDICT_APPROVAL || d.needs_body;
	c->req_https = https_url;
	c->hold_needs_body = d.verdict != VERDICT_APPROVAL;
	return 0;
}

static int rq_headers(http_parser *p)
{
	struct conn *c = CONN(p);
	const struct rules_secret *inj[DECIDE_MAX_INJECT];
	struct rules_req q;
	struct secbuf o = { 0 };
	char path[PROXY_MAX_URL + 1], scheme[8];
	const char *url = c->req.arena + c->req.url_off, *query = "";
	size_t i, n_inj = 0, qlen = 0, host_hdr = SIZE_MAX;
	int port = -1, https_url, reused;

	c->head_seen = 1;
	if (c->rc.state != RC_HEAD_DONE) {
		set_err(c, 400, "the request head ended where its grammar says it does not");
		return -1;
	}
	if (head_done(&c->req)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	snprintf(c->method, sizeof(c->method), "%s", http_method_str(p->method));
	c->client_10 = p->http_major == 1 && p->http_minor == 0;
	c->is_head = p->method == HTTP_HEAD;
	if (p->method == HTTP_CONNECT)
		return proxy_connect(c);
	if (head_framing(c, p, &host_hdr))
		return -1;

	switch (proxy_target(c, url, scheme, &port, path, &query, &qlen)) {
	case 1:
		return 0; /* the session CA's certificate, answered at the end of the request */
	case 0:
		break;
	default:
		return -1;
	}
	https_url = !strcmp(scheme, "https");
	c->port = port >= 0 ? port : https_url ? 443 : 80;
	if (host_hdr == SIZE_MAX && c->cl_ssl) {
		set_err(c, 400, "a request in a tunnel needs a Host header");
		return -1;
	}
	if (host_hdr != SIZE_MAX &&
	    !proxy_host_header_ok(hdr_val(&c->req, host_hdr), c->host, c->port)) {
		/* Host must name the target's authority: a mismatch is a confused or lying
		 * client (in a tunnel: the CONNECT's host, which the TLS name also matched). */
		set_err(c, 400, "the Host header does not match the %s",
			c->cl_ssl ? "CONNECT host" : "URL");
		return -1;
	}
	q.method = c->method;
	q.host = c->host;
	q.port = port;
	q.path = path;
	proxy_log_target(c, scheme, port, path);
	if (!path_ok(path, strlen(path))) {
		set_err(c, 400, "dot segments, encoded slashes or backslashes in the path");
		return -1;
	}
	if (decide_request(c, port, path, https_url, inj, &n_inj))
		return -1;
	/* Every secret the rules name is scrubbed from every response, whichever host sent it
	 * (a host may echo what another request carried), so all are loaded, once. */
	for (i = 0; i < c->cfg->rules->n_secrets; i++)
		secret_get(c, &c->cfg->rules->secrets[i]);
	/* Tripwire first, over everything the guest sent (also headers we drop). */
	if (placeholders(c, &q, url, c->req.url_len, NULL, PH_URL))
		return -1;
	for (i = 0; i < c->req.n; i++)
		if (placeholders(c, &q, hdr_val(&c->req, i), c->req.h[i].val_len, NULL, PH_HEADER))
			return -1;
	/* The body is decided as it streams (proxy_body.c), against the same request. */
	snprintf(c->q_path, sizeof(c->q_path), "%s", path);
	c->q = q;
	c->q.path = c->q_path;
	body_plan(c, n_inj);
	if (build_head(c, &q, query, qlen, inj, n_inj, &o)) {
		secbuf_wipe(&o);
		set_err(c, 502, "cannot build the upstream request");
		return -1;
	}
	if (c->up_head) {
		OPENSSL_cleanse(c->up_head, c->up_head_len);
		free(c->up_head);
	}
	c->up_head = o.b;
	c->up_head_len = o.n;
	if (c->hold) {
		/* Nothing reaches the upstream, not even a connection, before the decision. */
		hold_begin(c);
		if (c->expect_continue && !c->client_10 &&
		    client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
			return -1;
		return 0;
	}
	reused = c->up_fd >= 0 && c->up_dest == c->dest;
	if (!reused) {
		up_close(c);
		if (upstream_open(c))
			return -1;
	}
	c->up_reused = reused;
	/* A held body's head goes out with it, at the end of the request (body_finish). */
	if (c->body_mode != BODY_BUFFER && up_write(c, c->up_head, c->up_head_len)) {
		up_close(c);
		if (!reused || upstream_open(c) || up_write(c, c->up_head, c->up_head_len)) {
			set_err(c, 502, "cannot send the request to %s", c->host);
			return -1;
		}
	}
	if (c->expect_continue && !c->client_10 &&
	    client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
		return -1;
	return 0;
}

static int rq_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->err_status || (c->up_fd < 0 && !c->hold))
		return -1;
	if (c->hold)
		hold_body(c, at, len);
	return body_feed(c, at, len, 0);
}

/* The session CA's certificate (public): how bulkhead-init learns what to trust. */
static int serve_ca(struct conn *c)
{
	const char *pem = mitm_ca_pem(c->cfg->mitm);
	char head[200];
	int l = snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/x-pem-file\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 strlen(pem));

	if (client_write(c, head, (size_t)l) || (!c->is_head && client_write(c, pem, strlen(pem))))
		return -1;
	proxy_log(c, 200);
	c->served++;
	return 0;
}

static int rq_complete(http_parser *p)
{
	struct conn *c = CONN(p);
	int rc;

	if (c->connect_ok)
		return 0; /* the tunnel starts once the parser has stopped (proxy_serve) */
	/* The parser ends the message where reqcheck says the body ends, or they disagree. */
	if (c->rc.state != RC_DONE) {
		set_err(c, 400, "the request ended where its framing says it does not");
		return -1;
	}
	reqcheck_next(&c->rc);
	if (c->serve_ca) {
		if (!c->cfg->mitm) {
			set_err(c, 404, "this broker has no session CA");
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
		if (hold_decide(c))
			return -1;
		if (c->up_fd < 0 || c->up_dest != c->dest) {
			up_close(c);
			if (upstream_open(c))
				return -1;
		}
	}
	if (body_finish(c))
		return -1;
	if (!http_should_keep_alive(p))
		c->close_after = 1;
	rc = relay_response(c);
	if (rc == -EAGAIN && (!c->has_body || c->body_mode == BODY_BUFFER)) {
		/* The upstream closed the idle connection we reused; one fresh attempt (a held
		 * body can be sent again; a streamed one is gone). */
		up_close(c);
		if (upstream_open(c) ||
		    (c->body_mode == BODY_BUFFER ? body_send_held(c)
						 : up_write(c, c->up_head, c->up_head_len)))
			return -1;
		rc = relay_response(c);
	}
	if (rc) {
		if (rc == -EAGAIN && !c->resp_started)
			set_err(c, 502, "upstream %s closed the connection", c->host);
		up_close(c);
		if (!c->resp_started)
			return -1;
		c->close_after = 1;
		proxy_log(c, c->rp.status_code);
		return -1;
	}
	if (!c->up_keep)
		up_close(c);
	proxy_log(c, (int)c->rp.status_code);
	c->served++;
	return c->close_after ? -1 : 0;
}

static const http_parser_settings rq_settings = {
	.on_message_begin = rq_begin,
	.on_url = rq_url,
	.on_header_field = rq_field,
	.on_header_value = rq_value,
	.on_headers_complete = rq_headers,
	.on_body = rq_body,
	.on_message_complete = rq_complete,
};

static void send_error(struct conn *c)
{
	static const struct {
		int code;
		const char *text;
	} texts[] = { { 400, "Bad Request" },	     { 403, "Forbidden" },
		      { 404, "Not Found" },	     { 413, "Content Too Large" },
		      { 501, "Not Implemented" },    { 502, "Bad Gateway" },
		      { 503, "Service Unavailable" } };
	const char *text = "Error";
	char buf[640];
	size_t i;
	int l;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].code == c->err_status)
			text = texts[i].text;
	l = snprintf(buf, sizeof(buf),
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\nbulkhead: %s\n",
		     c->err_status, text, strlen(c->err_msg) + 11, c->err_msg);
	client_write(c, buf, (size_t)l < sizeof(buf) ? (size_t)l : sizeof(buf) - 1);
}

/* Feeds what one read returned (N bytes, 0 at the end of the stream, -1 on failure) through
 * reqcheck and the parser, stretch by stretch. Returns 0 to read on, -1 to end the
 * connection (with the error answered and recorded when it can still be). */
static int serve_bytes(struct conn *c, const char *buf, ssize_t n)
{
	size_t off = 0;

	if (n < 0) {
		c->outcome = errno == EAGAIN || errno == EWOULDBLOCK ? AUDIT_OUTCOME_GUEST_TIMEOUT
								     : AUDIT_OUTCOME_GUEST_RESET;
		return -1;
	}
	if (n == 0 && c->audit_due)
		c->outcome = AUDIT_OUTCOME_GUEST_CLOSED;
	do {
		ssize_t k = n ? reqcheck_feed(&c->rc, buf + off, (size_t)n - off) : 0;
		size_t done;

		if (k < 0) {
			/* Refused before the parser saw this request: its record and answer
			 * must not carry the last request's state. */
			if (!c->audit_due)
				request_reset(c);
			set_err(c, 400, "%s", c->rc.why);
		} else if (n && !k) /* reqcheck waits for a callback the parser did not make */
			set_err(c, 400, "the request's framing is ambiguous");
		if (c->err_status)
			break;
		done = http_parser_execute(&c->rq, &rq_settings, buf + off, (size_t)k);
		off += (size_t)k;
		if (c->connect_ok && !c->err_status && HTTP_PARSER_ERRNO(&c->rq) == HPE_OK) {
			if (proxy_tunnel_start(c, off != (size_t)n))
				break;
			http_parser_init(&c->rq, HTTP_REQUEST);
			c->rq.data = c;
			reqcheck_init(&c->rc);
			return 0;
		}
		if (c->err_status || HTTP_PARSER_ERRNO(&c->rq) != HPE_OK || done != (size_t)k) {
			if (!c->err_status && !c->close_after)
				set_err(c, 400, "malformed HTTP request: %s",
					http_errno_description(HTTP_PARSER_ERRNO(&c->rq)));
			break;
		}
	} while (off < (size_t)n);
	if (c->err_status && !c->resp_started) {
		send_error(c);
		proxy_log(c, c->err_status);
	}
	return c->err_status || c->close_after || n == 0 ? -1 : 0;
}

unsigned long proxy_serve(const struct proxy_config *cfg, int fd, unsigned long conn_id)
{
	struct conn *c = calloc(1, sizeof(*c));
	char buf[16384];
	unsigned long served = 0;

	if (!c) {
		close(fd);
		return 0;
	}
	c->cfg = cfg;
	c->fd = fd;
	c->id = conn_id;
	c->up_fd = -1;
	scrub_init(&c->scrub);
	c->secrets = calloc(cfg->rules->n_secrets + 1, sizeof(*c->secrets));
	if (!c->secrets)
		goto out;
	set_timeouts(fd, cfg->io_timeout_ms);
	clock_gettime(CLOCK_MONOTONIC, &c->t0); /* for a connection that fails before a request */
	http_parser_init(&c->rq, HTTP_REQUEST);
	c->rq.data = c;
	reqcheck_init(&c->rc);
	while (!serve_bytes(c, buf, client_read(c, buf, sizeof(buf))))
		;
	/* A request the guest abandoned after its head went upstream is recorded too. */
	proxy_log_due(c);
	client_flush(c);
out:
	served = c->served;
	up_close(c);
	tlsup_close(c->cl_ssl);
	free(c->up_head);
	secrets_wipe(c);
	secbuf_wipe(&c->body_buf);
	hold_end(c);
	scrub_free(&c->scrub);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
	close(fd);
	return served;
}
