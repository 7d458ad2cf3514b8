/* broker/proxy.c: serves one guest connection. The guest's request is parsed by http_parser,
 * decided against the rules at the end of its head, rewritten (proxy_rewrite.c) and streamed
 * to the upstream; the response comes back through proxy_response.c. CONNECT tunnels end here
 * too, with a leaf from the session CA. */
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
#include <arpa/inet.h>
#include <openssl/err.h>

#include "broker/mitm_ca.h"
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

	if (on_hvalue(&c->req, at, len)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	return 0;
}

static int rq_begin(http_parser *p)
{
	struct conn *c = CONN(p);

	head_reset(&c->req);
	c->is_head = c->chunked_in = c->client_10 = c->expect_continue = 0;
	c->resp_started = c->resp_done = c->has_body = 0;
	c->connect_ok = c->serve_ca = 0;
	hold_end(c);
	c->layer = NULL;
	c->secret_name[0] = c->approval_id[0] = 0;
	c->dest = NULL;
	c->bytes_up = c->bytes_down = 0;
	c->method[0] = c->host[0] = c->rule[0] = 0;
	snprintf(c->log_path, sizeof(c->log_path), "-");
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	return 0;
}

static void log_target(struct conn *c, const char *scheme, int port, const char *path)
{
	size_t i;

	/* A longer target is cut in the log and the audit record, never in the request. */
	if (snprintf(c->log_path, sizeof(c->log_path), "%s://%s%s%.0d%s", scheme, c->host,
		     port >= 0 ? ":" : "", port >= 0 ? port : 0, path) >= (int)sizeof(c->log_path))
		strcpy(c->log_path + sizeof(c->log_path) - 4, "...");
	for (i = 0; c->log_path[i]; i++)
		if (!isprint((unsigned char)c->log_path[i]) || c->log_path[i] == ' ')
			c->log_path[i] = '?';
}

/* Where the request goes: scheme, host (into c->host), port (-1: the scheme's default),
 * path and query. Absolute form to the proxy, origin form inside a tunnel. Returns 0, 1 for
 * the CA route, or -1 with the error set. */
static int request_target(struct conn *c, const char *url, char scheme[8], int *port,
			  char path[PROXY_MAX_URL + 1], const char **query, size_t *qlen)
{
	struct http_parser_url u;
	size_t i;

	http_parser_url_init(&u);
	if (http_parser_parse_url(url, c->req.url_len, 0, &u)) {
		set_err(c, 400, "malformed request target");
		return -1;
	}
	if (u.field_set & (1 << UF_USERINFO)) {
		set_err(c, 400, "credentials in the URL are not accepted");
		return -1;
	}
	if (u.field_set & (1 << UF_PATH)) {
		memcpy(path, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
		path[u.field_data[UF_PATH].len] = 0;
	} else {
		strcpy(path, "/");
	}
	if (u.field_set & (1 << UF_QUERY)) {
		*query = url + u.field_data[UF_QUERY].off;
		*qlen = u.field_data[UF_QUERY].len;
	}
	if (c->cl_ssl) {
		if (u.field_set & ((1 << UF_SCHEMA) | (1 << UF_HOST))) {
			set_err(c, 400, "requests in a tunnel use origin form (/path)");
			return -1;
		}
		strcpy(scheme, "https");
		snprintf(c->host, sizeof(c->host), "%s", c->tun_host);
		*port = c->tun_port == 443 ? -1 : c->tun_port;
		return 0;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) && !(u.field_set & (1 << UF_HOST)) &&
	    !strcmp(path, BROKER_CA_PATH) && !*qlen && !c->has_body &&
	    (!strcmp(c->method, "GET") || c->is_head)) {
		snprintf(c->log_path, sizeof(c->log_path), "%s", BROKER_CA_PATH);
		snprintf(c->rule, sizeof(c->rule), "session-ca");
		c->serve_ca = 1;
		return 1;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST))) {
		set_err(c, 400, "the proxy needs an absolute URL (http://host/path)");
		return -1;
	}
	if (u.field_data[UF_SCHEMA].len > 5 || u.field_data[UF_HOST].len > RULES_HOST_MAX ||
	    !u.field_data[UF_HOST].len) {
		set_err(c, 400, "bad scheme or host in the URL");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_SCHEMA].len; i++)
		scheme[i] = (char)tolower((unsigned char)url[u.field_data[UF_SCHEMA].off + i]);
	scheme[i] = 0;
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		set_err(c, 400, "only http:// and https:// URLs are proxied");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_HOST].len; i++)
		c->host[i] = (char)tolower((unsigned char)url[u.field_data[UF_HOST].off + i]);
	c->host[i] = 0;
	*port = -1;
	if (u.field_set & (1 << UF_PORT)) {
		*port = u.port;
		if (!*port) {
			set_err(c, 400, "port 0 in the URL");
			return -1;
		}
	}
	return 0;
}

/* 1 when the Host header value HV names HOST and PORT (the port may be left out). */
static int host_matches(const char *hv, const char *host, int port)
{
	const char *name = hv, *end, *colon;
	char *stop = NULL;
	long hp = -1;

	if (*hv == '[') { /* an IPv6 literal */
		name = hv + 1;
		end = strchr(name, ']');
		colon = end && end[1] == ':' ? end + 1 : NULL;
		if (!end || (end[1] && !colon))
			return 0;
	} else {
		colon = strrchr(hv, ':');
		end = colon ? colon : hv + strlen(hv);
	}
	if (colon) {
		hp = strtol(colon + 1, &stop, 10);
		if (!isdigit((unsigned char)colon[1]) || *stop || hp < 1 || hp > 65535)
			return 0;
	}
	return (size_t)(end - name) == strlen(host) && !strncasecmp(name, host, strlen(host)) &&
	       (hp < 0 || hp == port);
}

/* CONNECT host:port — allowed when an https rule names that host and port; the request
 * lines inside the tunnel are then decided one by one like any other. */
static int connect_request(struct conn *c)
{
	const char *url = c->req.arena + c->req.url_off;
	struct http_parser_url u;
	size_t i;

	snprintf(c->rule, sizeof(c->rule), "connect");
	http_parser_url_init(&u);
	if (c->cl_ssl) {
		set_err(c, 400, "CONNECT inside a tunnel");
		return -1;
	}
	if (http_parser_parse_url(url, c->req.url_len, 1, &u) ||
	    u.field_data[UF_HOST].len > RULES_HOST_MAX || !u.field_data[UF_HOST].len || !u.port) {
		set_err(c, 400, "CONNECT needs host:port");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_HOST].len; i++)
		c->host[i] = (char)tolower((unsigned char)url[u.field_data[UF_HOST].off + i]);
	c->host[i] = 0;
	c->tun_port = u.port;
	log_target(c, "https", u.port, "");
	if (!c->cfg->mitm) {
		set_err(c, 501, "CONNECT is not available: this broker has no session CA");
		return -1;
	}
	struct decision d;

	decide_connect(c->cfg->policy, c->cfg->rules, c->host, u.port, &d);
	snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
	c->layer = layer_name(d.layer);
	if (d.verdict != VERDICT_ALLOW) {
		set_err(c, 403, "%s", d.why);
		return -1;
	}
	snprintf(c->tun_host, sizeof(c->tun_host), "%s", c->host);
	c->connect_ok = 1;
	return 0;
}

static int rq_headers(http_parser *p)
{
	struct conn *c = CONN(p);
	const struct rules_secret *inj[DECIDE_MAX_INJECT];
	struct rules_req q;
	struct sb o = { 0 };
	char path[PROXY_MAX_URL + 1], scheme[8];
	const char *url = c->req.arena + c->req.url_off, *query = "";
	size_t i, n_inj = 0, n_te = 0, n_cl = 0, qlen = 0, host_hdr = SIZE_MAX;
	int port = -1, https_url, reused;

	if (head_done(&c->req)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	snprintf(c->method, sizeof(c->method), "%s", http_method_str(p->method));
	c->client_10 = p->http_major == 1 && p->http_minor == 0;
	c->is_head = p->method == HTTP_HEAD;
	if (p->method == HTTP_CONNECT)
		return connect_request(c);
	for (i = 0; i < c->req.n; i++) {
		if (hdr_is(&c->req, i, "transfer-encoding")) {
			n_te++;
			if (strcasecmp(hdr_val(&c->req, i), "chunked")) {
				set_err(c, 400, "only Transfer-Encoding: chunked is accepted");
				return -1;
			}
		} else if (hdr_is(&c->req, i, "content-length")) {
			n_cl++;
		} else if (hdr_is(&c->req, i, "expect")) {
			if (strcasecmp(hdr_val(&c->req, i), "100-continue")) {
				set_err(c, 400, "unsupported Expect header");
				return -1;
			}
			c->expect_continue = 1;
		} else if (hdr_is(&c->req, i, "upgrade")) {
			set_err(c, 501, "protocol upgrades are not supported");
			return -1;
		} else if (hdr_is(&c->req, i, "host")) {
			if (host_hdr != SIZE_MAX) {
				set_err(c, 400, "more than one Host header");
				return -1;
			}
			host_hdr = i;
		}
	}
	/* Two framings for one body is how requests are smuggled: refuse, never pick one. */
	if ((n_te && n_cl) || n_te > 1 || n_cl > 1) {
		set_err(c, 400,
			"conflicting body lengths (Content-Length and Transfer-Encoding, "
			"or either twice)");
		return -1;
	}
	c->chunked_in = n_te == 1;
	c->has_body = c->chunked_in || (n_cl && p->content_length > 0);

	switch (request_target(c, url, scheme, &port, path, &query, &qlen)) {
	case 1:
		return 0; /* the session CA's certificate, answered at the end of the request */
	case 0:
		break;
	default:
		return -1;
	}
	https_url = !strcmp(scheme, "https");
	if (host_hdr == SIZE_MAX && c->cl_ssl) {
		set_err(c, 400, "a request in a tunnel needs a Host header");
		return -1;
	}
	if (host_hdr != SIZE_MAX && !host_matches(hdr_val(&c->req, host_hdr), c->host,
						  port >= 0   ? port
						  : https_url ? 443
							      : 80)) {
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
	log_target(c, scheme, port, path);
	if (!path_ok(path, strlen(path))) {
		set_err(c, 400, "dot segments, encoded slashes or backslashes in the path");
		return -1;
	}
	{
		struct decide_req dq = {
			c->method, c->host, port, path, https_url, NULL, DECIDE_GIT_REFS_UNKNOWN
		};
		struct decision d;

		decide(c->cfg->policy, c->cfg->rules, &dq, &d);
		snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
		c->layer = layer_name(d.layer);
		if (d.n_inject)
			snprintf(c->secret_name, sizeof(c->secret_name), "%s", d.inject[0]->name);
		if (d.verdict == VERDICT_DENY) {
			set_err(c, 403, "%s", d.why);
			return -1;
		}
		c->dest = d.dest;
		n_inj = d.n_inject;
		memcpy(inj, d.inject, n_inj * sizeof(inj[0]));
		/* Held: a person decides (or, for a push rule, the body must be read first). */
		c->hold = d.verdict == VERDICT_APPROVAL || d.needs_body;
		c->req_https = https_url;
		c->hold_needs_body = d.verdict != VERDICT_APPROVAL;
	}
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
		sb_wipe(&o);
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

/* --- request ------------------------------------------------------------------------------ */

/* The path part of log_path ("scheme://host[:port]/path"): host and port have
 * their own fields in the audit record. */
static const char *target_path(const struct conn *c)
{
	const char *auth = strstr(c->log_path, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;
	return path ? path : c->log_path;
}

/* One audit record per request: who, where, which rule and secret *name*, what was
 * decided; never a value (the broker never hands the audit log one). */
static void audit_request(struct conn *c, int status, uint64_t duration_us)
{
	const struct proxy_config *cfg = c->cfg;
	if (!cfg->audit)
		return;
	const char *secret = c->secret_name[0] ? c->secret_name : NULL, *decision = "allow";
	if (strncmp(c->rule, "tripwire:", 9) == 0)
		decision = "tripwire";
	else if (status == 403)
		decision = "deny";
	else if (status >= 400 || status == 0)
		decision = "error";
	struct audit_record r = {
		.session = cfg->session,
		.method = c->method[0] ? c->method : "-",
		.host = c->host[0] ? c->host : "-",
		.port = c->dest ? c->dest->port : c->tun_port,
		.path = target_path(c),
		.rule = c->rule[0] ? c->rule : NULL,
		.secret = secret,
		.decision = decision,
		.layer = c->layer,
		.approval = c->approval_id[0] ? c->approval_id : NULL,
		.status = status,
		.bytes_out = c->bytes_up,
		.bytes_in = c->bytes_down,
		.duration_us = duration_us,
	};
	pthread_mutex_lock(cfg->audit_lock);
	int rc = audit_append(cfg->audit, &r);
	pthread_mutex_unlock(cfg->audit_lock);
	if (rc < 0)
		fprintf(stderr, "bulkhead-broker: audit log write failed: %s\n", strerror(-rc));
}

static void log_line(struct conn *c, int status)
{
	struct timespec t1;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - c->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - c->t0.tv_nsec) / 1e6;
	audit_request(c, status, (uint64_t)(ms * 1000));
	if (!c->cfg->log)
		return;
	fprintf(stderr,
		"bulkhead-broker: conn=%lu %s %s -> %d rule=%s up=%zu down=%zu scrubbed=%zu "
		"ms=%.2f%s%s\n",
		c->id, c->method[0] ? c->method : "-", c->log_path, status,
		c->rule[0] ? c->rule : "-", c->bytes_up, c->bytes_down, c->scrub.replaced, ms,
		c->err_status ? " why=" : "", c->err_status ? c->err_msg : "");
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
	log_line(c, 200);
	c->served++;
	return 0;
}

static int rq_complete(http_parser *p)
{
	struct conn *c = CONN(p);
	int rc;

	if (c->connect_ok)
		return 0; /* the tunnel starts once the parser has stopped (proxy_serve) */
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
		log_line(c, c->rp.status_code);
		return -1;
	}
	if (!c->up_keep)
		up_close(c);
	log_line(c, (int)c->rp.status_code);
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

/* After "200 Connection established" the guest's TLS handshake ends here, with a leaf for the
 * CONNECT host; the name the guest asked for (SNI) must be that host. */
static int tunnel_start(struct conn *c, int early_bytes)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	unsigned char ip[16];
	char why[300];
	const char *sni;
	SSL_CTX *ctx;
	int is_ip = inet_pton(AF_INET, c->tun_host, ip) == 1 ||
		    inet_pton(AF_INET6, c->tun_host, ip) == 1;

	c->connect_ok = 0;
	if (early_bytes) {
		set_err(c, 400, "bytes sent before the CONNECT was answered");
		return -1;
	}
	ctx = mitm_leaf_ctx(c->cfg->mitm, c->tun_host, why, sizeof(why));
	if (!ctx) {
		set_err(c, 502, "%s", why);
		return -1;
	}
	c->cl_ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (!c->cl_ssl || SSL_set_fd(c->cl_ssl, c->fd) != 1) {
		set_err(c, 502, "cannot set up TLS toward the guest");
		return -1;
	}
	/* The 200 goes out in clear: the guest's TLS starts after it. */
	{
		SSL *tls = c->cl_ssl;

		c->cl_ssl = NULL;
		if (client_write(c, ok, sizeof(ok) - 1) || client_flush(c)) {
			SSL_free(tls);
			return -1;
		}
		c->cl_ssl = tls;
	}
	c->resp_started = 1; /* from here on an error cannot be an HTTP answer to the CONNECT */
	ERR_clear_error();
	if (SSL_accept(c->cl_ssl) != 1) {
		snprintf(c->err_msg, sizeof(c->err_msg), "TLS handshake with the guest failed: %s",
			 ERR_reason_error_string(ERR_peek_last_error())
				 ? ERR_reason_error_string(ERR_peek_last_error())
				 : "connection closed");
		c->err_status = 502;
		ERR_clear_error();
		SSL_free(c->cl_ssl);
		c->cl_ssl = NULL;
		log_line(c, 502);
		return -1;
	}
	c->resp_started = 0;
	sni = SSL_get_servername(c->cl_ssl, TLSEXT_NAMETYPE_host_name);
	if (is_ip ? sni != NULL : !sni || strcasecmp(sni, c->tun_host)) {
		set_err(c, 400, "the TLS server name (%.64s) does not match the CONNECT host %s",
			sni ? sni : "none", c->tun_host);
		snprintf(c->rule, sizeof(c->rule), "sni-mismatch");
		return -1;
	}
	log_line(c, 200);
	return 0;
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
	for (;;) {
		ssize_t n = client_read(c, buf, sizeof(buf));
		size_t done;

		if (n < 0)
			break;
		done = http_parser_execute(&c->rq, &rq_settings, buf, (size_t)n);
		if (c->connect_ok && !c->err_status && HTTP_PARSER_ERRNO(&c->rq) == HPE_OK) {
			if (tunnel_start(c, done != (size_t)n)) {
				if (c->err_status && !c->resp_started) {
					send_error(c);
					log_line(c, c->err_status);
				}
				break;
			}
			http_parser_init(&c->rq, HTTP_REQUEST);
			c->rq.data = c;
			continue;
		}
		if (c->err_status || HTTP_PARSER_ERRNO(&c->rq) != HPE_OK || done != (size_t)n) {
			if (!c->err_status && !c->close_after)
				set_err(c, 400, "malformed HTTP request: %s",
					http_errno_description(HTTP_PARSER_ERRNO(&c->rq)));
			if (c->err_status && !c->resp_started) {
				send_error(c);
				log_line(c, c->err_status);
			}
			break;
		}
		if (n == 0)
			break;
	}
	client_flush(c);
out:
	served = c->served;
	up_close(c);
	tlsup_close(c->cl_ssl);
	free(c->up_head);
	secrets_wipe(c);
	sb_wipe(&c->body_buf);
	hold_end(c);
	scrub_free(&c->scrub);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
	close(fd);
	return served;
}
