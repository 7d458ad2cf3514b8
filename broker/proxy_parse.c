/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_parse.c: the guest's requests as http_parser reads them: the URL and head
 * into the bounded arena (proxy_head.c), each over its bound refused with 400, a body fed
 * on (held or streamed), and each request's end. proxy.c runs the parser with these. */
#include "broker/proxy_internal.h"

#include "lib/mono.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rq_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->req.url_len + len > PROXY_MAX_URL ||
	    proxy_head_append(&c->req, at, len, &c->req.url_len)) {
		proxy_fail(c, 400, "request URL longer than %d bytes", PROXY_MAX_URL);
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
	switch (proxy_head_field(&c->req, at, len)) {
	case 0:
		return 0;
	case -2:
		proxy_fail(c, 400, "more than %d request headers", PROXY_MAX_HEADERS);
		return -1;
	default:
		proxy_fail(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->head_seen)
		return 0;
	if (proxy_head_value(&c->req, at, len)) {
		proxy_fail(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	return 0;
}

/* Forgets the last request: what the next one's record and answer start from. */
void proxy_request_reset(struct conn *c)
{
	proxy_head_reset(&c->req);
	if (c->cfg->secrets && c->cfg->secrets->generation) { /* a changed vault: read again */
		unsigned gen = c->cfg->secrets->generation(c->cfg->secrets->arg);

		if (gen != c->secrets_gen)
			proxy_secret_scrub_anew(c);
		c->secrets_gen = gen;
	}
	c->is_head = c->chunked_in = c->client_10 = c->expect_continue = c->cl_zero = 0;
	c->resp_started = c->resp_done = c->has_body = 0;
	c->connect_ok = c->serve_ca = c->head_seen = 0;
	proxy_hold_end(c);
	proxy_body_budget_end(c);
	c->layer = c->outcome = c->decision = NULL;
	c->have_target = 0;
	c->ws = c->ws_open = 0;
	memset(&c->ws_stats, 0, sizeof(c->ws_stats));
	free(c->ws_early);
	c->ws_early = NULL;
	c->ws_early_n = 0;
	c->secret_name[0] = c->approval_id[0] = 0;
	c->n_inj_names = 0;
	c->aws = NULL;
	c->dest = NULL;
	c->port = 0;
	c->bytes_up = c->bytes_down = 0;
	c->method[0] = c->host[0] = c->rule[0] = 0;
	snprintf(c->log_path, sizeof(c->log_path), "-");
	c->t0_ns = mono_ns();
}

static int rq_begin(http_parser *p)
{
	struct conn *c = CONN(p);

	proxy_audit_due(c); /* never happens: each request is recorded at its end */
	proxy_request_reset(c);
	c->audit_due = 1;
	/* The parser starts a message where reqcheck says a head starts, or the two disagree
	 * about where the last one ended. */
	if (c->rc.state != RC_HEAD && c->rc.state != RC_HEAD_DONE) {
		proxy_fail(c, 400, "a request began inside the previous one's body");
		return -1;
	}
	return 0;
}

static int rq_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->err_status || (c->up_fd < 0 && !c->hold))
		return -1;
	if (c->hold && proxy_hold_body(c, at, len))
		return -1;
	return proxy_body_feed(c, at, len, 0);
}

/* The request's end: a held one gives its memory and budget back as soon as it is over. */
static int rq_complete(http_parser *p)
{
	int rc = proxy_request_complete(p);

	proxy_hold_end(CONN(p));
	return rc;
}

const http_parser_settings proxy_rq_settings = {
	.on_message_begin = rq_begin,
	.on_url = rq_url,
	.on_header_field = rq_field,
	.on_header_value = rq_value,
	.on_headers_complete = proxy_request_headers,
	.on_body = rq_body,
	.on_message_complete = rq_complete,
};
