/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_body.c: request bodies on their way upstream. Placeholders a guest program
 * holds (BULKHEAD_SECRET_<name>) are replaced here too, toward the secret's own destinations
 * only; anywhere else they trip and the request is blocked. The body is scanned as it
 * streams: a placeholder cut by a read boundary waits in a small window for the next bytes.
 *
 * A replacement changes the body's length, so the framing toward the upstream is chosen at
 * the head: a Content-Length body up to PROXY_BODY_BUFFER is held and sent with its new
 * length; a longer one toward a destination that has secrets goes chunked; chunked stays
 * chunked; a body toward a destination without secrets streams as it came (a placeholder
 * there can only trip, so its length never changes). */
#include "broker/proxy_internal.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

void proxy_body_plan(struct conn *c, size_t n_inj)
{
	if (c->hold)
		c->body_mode = BODY_BUFFER; /* nothing, not even the head, before the decision */
	else if (!c->has_body)
		c->body_mode = BODY_NONE;
	else if (c->aws && !c->aws_payload[0])
		c->body_mode = BODY_BUFFER; /* hashed whole, then signed */
	else if (c->chunked_in)
		c->body_mode = BODY_CHUNKED;
	else if (c->rq.content_length <= PROXY_BODY_BUFFER)
		c->body_mode = BODY_BUFFER;
	else /* S3 takes no chunked PUT: a signed body keeps its length (and no placeholder) */
		c->body_mode = n_inj && !c->aws ? BODY_CHUNKED : BODY_STREAM;
	c->carry_n = 0;
	/* The last request's held body had its secrets in it. */
	if (c->body_buf.n)
		OPENSSL_cleanse(c->body_buf.b, c->body_buf.n);
	c->body_buf.n = 0;
}

/* How much of WIN (n bytes) can be decided now: all of it but a placeholder whose name may
 * go on in the next bytes, or a tail that could begin the marker. */
static size_t safe_cut(const char *win, size_t n)
{
	const char *p = win, *last = NULL;
	size_t k;

	while ((p = memmem(p, n - (size_t)(p - win), RULES_PLACEHOLDER, RULES_PLACEHOLDER_N))) {
		last = p;
		p += RULES_PLACEHOLDER_N;
	}
	if (last) {
		size_t off = (size_t)(last - win) + RULES_PLACEHOLDER_N, run = off;

		while (run < n && ((win[run] >= 'a' && win[run] <= 'z') ||
				   (win[run] >= 'A' && win[run] <= 'Z') ||
				   (win[run] >= '0' && win[run] <= '9') || win[run] == '_'))
			run++;
		/* Longer than any name: it trips now, whatever follows. */
		if (run == n && run - off <= RULES_NAME_MAX)
			return (size_t)(last - win);
	}
	for (k = n < RULES_PLACEHOLDER_N - 1 ? n : RULES_PLACEHOLDER_N - 1; k; k--)
		if (!memcmp(win + n - k, RULES_PLACEHOLDER, k))
			return n - k;
	return n;
}

static int body_out(struct conn *c, const char *b, size_t n)
{
	char sz[24];
	int l;

	if (!n)
		return 0;
	switch (c->body_mode) {
	case BODY_BUFFER:
		if (c->body_buf.n + n > (c->hold ? PROXY_HOLD_MAX : PROXY_BODY_GROWN_MAX)) {
			proxy_fail(c, 413, "request body larger than %d bytes %s",
				   c->hold ? PROXY_HOLD_MAX : PROXY_BODY_GROWN_MAX,
				   c->hold  ? "cannot be held for approval"
				   : c->aws ? "cannot be hashed to be signed (an SDK that sends "
					      "x-amz-content-sha256 streams it)"
					    : "with its secrets replaced");
			return -1;
		}
		if (!c->hold && proxy_body_budget(c, n))
			return -1;
		secbuf_add(&c->body_buf, b, n);
		if (c->body_buf.oom) {
			proxy_fail(c, 503, "out of memory for the request body");
			return -1;
		}
		return 0;
	case BODY_CHUNKED:
		l = snprintf(sz, sizeof(sz), "%zx\r\n", n);
		if (proxy_io_up_write(c, sz, (size_t)l) || proxy_io_up_write(c, b, n) ||
		    proxy_io_up_write(c, "\r\n", 2))
			break;
		return 0;
	default:
		if (proxy_io_up_write(c, b, n))
			break;
		return 0;
	}
	proxy_fail(c, 502, "upstream %s stopped reading the request body", c->host);
	return -1;
}

int proxy_body_feed(struct conn *c, const char *at, size_t len, int final)
{
	do {
		size_t take = sizeof(c->carry) - c->carry_n, n, cut;
		struct secbuf o = { 0 };
		int rc;

		if (take > len)
			take = len;
		if (take)
			memcpy(c->carry + c->carry_n, at, take);
		at += take;
		len -= take;
		n = c->carry_n + take;
		cut = final && !len ? n : safe_cut(c->carry, n);
		rc = proxy_rewrite_placeholders(c, &c->q, c->carry, cut, &o, PH_BODY);
		if (!rc && o.oom) {
			proxy_fail(c, 503, "out of memory for the request body");
			rc = -1;
		}
		if (!rc)
			rc = body_out(c, o.b, o.n);
		secbuf_wipe(&o);
		if (rc)
			return -1;
		memmove(c->carry, c->carry + cut, n - cut);
		c->carry_n = n - cut;
	} while (len);
	return 0;
}

/* The held body: its head goes out now, with the length the replacements gave it. */
int proxy_body_send_held(struct conn *c)
{
	char line[64];
	int l = snprintf(line, sizeof(line), "Content-Length: %zu\r\n\r\n", c->body_buf.n);

	if (c->aws && proxy_aws_sign(c))
		return -1;
	return proxy_io_up_write(c, c->up_head, c->up_head_len) ||
			       proxy_io_up_write(c, line, (size_t)l) ||
			       proxy_io_up_write(c, c->body_buf.b ? c->body_buf.b : "",
						 c->body_buf.n)
		       ? -1
		       : 0;
}

int proxy_body_finish(struct conn *c)
{
	if (proxy_body_feed(c, NULL, 0, 1))
		return -1;
	OPENSSL_cleanse(c->carry, sizeof(c->carry));
	if (c->body_mode == BODY_CHUNKED && proxy_io_up_write(c, "0\r\n\r\n", 5))
		goto fail;
	if (c->body_mode != BODY_BUFFER)
		return 0;
	if (!proxy_body_send_held(c))
		return 0;
	if (c->up_reused) { /* the upstream had closed the connection we reused */
		proxy_io_up_close(c);
		if (!proxy_io_up_open(c) && !proxy_body_send_held(c))
			return 0;
	}
fail:
	proxy_fail(c, 502, "upstream %s stopped reading the request body", c->host);
	return -1;
}

int proxy_body_budget(struct conn *c, size_t n)
{
	const char *which;

	if (!hold_budget_take(c->cfg->buf_session, c->cfg->buf_total, n, 0, &which)) {
		c->buf_taken += n;
		return 0;
	}
	proxy_fail(c, 503, "the %s's budget for bodies buffered whole is spent; try again later",
		   which);
	c->outcome = AUDIT_OUTCOME_OVER_BUDGET;
	return -1;
}

void proxy_body_budget_end(struct conn *c)
{
	if (!c->buf_taken)
		return;
	hold_budget_give(c->cfg->buf_session, c->cfg->buf_total, c->buf_taken, 0);
	c->buf_taken = 0;
}
