/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_hold.c: a request an approval rule covers is held whole — head and body, with
 * the SHA-256 of both as the guest sent them — and nothing reaches the upstream, not even a
 * connection, until a person has said yes (broker/approvals.c). A git push rule needs the
 * refs the push updates, which its body holds: such a request is held until its body is in,
 * then decided again with them. */
#include "broker/proxy_internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define HOLD_MAX_REFS 64

static void md_add(struct conn *c, const void *b, size_t n)
{
	if (c->hold_md)
		EVP_DigestUpdate(c->hold_md, b, n);
}

/* Takes N more bytes (and, with REQ, the request) from the hold budgets; past either, the
 * request is answered 503 at once. */
static int take(struct conn *c, size_t n, int req)
{
	const char *which = "";

	if (!hold_budget_take(c->cfg->hold_session, c->cfg->hold_total, n, req ? 1 : 0, &which)) {
		c->hold_bytes += n;
		c->hold_counted |= req;
		return 0;
	}
	proxy_fail(c, 503, "the %s's budget for requests held for approval is spent; try later",
		   which);
	c->decision = "deny";
	c->outcome = AUDIT_OUTCOME_OVER_BUDGET;
	return -1;
}

int proxy_hold_begin(struct conn *c)
{
	size_t i;

	if (take(c, c->req.used, 1))
		return -1;

	c->hold_raw_n = 0;
	c->hold_raw = malloc(PROXY_HOLD_RAW);
	if (!c->hold_raw) {
		proxy_fail(c, 503, "out of memory to hold the request");
		return -1;
	}
	c->hold_md = EVP_MD_CTX_new();
	if (c->hold_md && EVP_DigestInit_ex(c->hold_md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c->hold_md);
		c->hold_md = NULL;
	}
	/* The request line and headers as received, in order; then the body. */
	md_add(c, c->method, strlen(c->method));
	md_add(c, " ", 1);
	md_add(c, c->req.arena + c->req.url_off, c->req.url_len);
	md_add(c, " HTTP/1.1\r\n", 11);
	for (i = 0; i < c->req.n; i++) {
		md_add(c, c->req.arena + c->req.h[i].name_off, c->req.h[i].name_len);
		md_add(c, ": ", 2);
		md_add(c, proxy_head_val(&c->req, i), c->req.h[i].val_len);
		md_add(c, "\r\n", 2);
	}
	md_add(c, "\r\n", 2);
	return 0;
}

int proxy_hold_body(struct conn *c, const char *at, size_t len)
{
	size_t room = PROXY_HOLD_RAW - c->hold_raw_n, k = len < room ? len : room;

	if (take(c, len, 0))
		return -1;
	md_add(c, at, len);
	memcpy(c->hold_raw + c->hold_raw_n, at, k);
	c->hold_raw_n += k;
	return 0;
}

void proxy_hold_end(struct conn *c)
{
	if (c->hold_bytes || c->hold_counted) {
		/* The held body's memory goes with its budget. */
		secbuf_wipe(&c->body_buf);
		hold_budget_give(c->cfg->hold_session, c->cfg->hold_total, c->hold_bytes,
				 c->hold_counted ? 1 : 0);
		c->hold_bytes = 0;
		c->hold_counted = 0;
	}
	EVP_MD_CTX_free(c->hold_md);
	c->hold_md = NULL;
	c->hold = c->hold_needs_body = 0;
	free(c->hold_raw);
	c->hold_raw = NULL;
	c->hold_raw_n = 0;
}

/* The ref updates at the start of a receive-pack body: pkt-lines "OLD NEW REF[\0caps]\n" up
 * to a flush packet. Each line is copied into LINES as "OLD NEW REF". Returns how many, or
 * -1 when the start of the body is not that (then the push is held for a person anyway). */
static int push_refs(const char *b, size_t n, char lines[][300], size_t max)
{
	size_t off = 0, k = 0;

	while (off + 4 <= n && k < max) {
		char hex[5], *end;
		unsigned long len;
		const char *pl;
		size_t pn;

		memcpy(hex, b + off, 4);
		hex[4] = '\0';
		len = strtoul(hex, &end, 16);
		if (*end)
			return -1;
		if (len == 0)
			return (int)k; /* flush: the commands end here */
		if (len < 4 || off + len > n)
			return -1;
		pl = b + off + 4;
		pn = strnlen(pl, len - 4); /* the capabilities follow a NUL on the first line */
		while (pn && pl[pn - 1] == '\n')
			pn--;
		if (pn < 83 || pn > 299 || pl[40] != ' ' || pl[81] != ' ')
			return -1;
		memcpy(lines[k], pl, pn);
		lines[k][pn] = '\0';
		k++;
		off += len;
	}
	return -1;
}

static void summarize(const struct conn *c, char *out, size_t len)
{
	size_t i, n = c->hold_raw_n < len - 1 ? c->hold_raw_n : len - 1;

	if (n > 240)
		n = 240;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c->hold_raw[i];

		out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '.';
	}
	out[i] = '\0';
}

/* Whether a held request no longer waits: its connection was taken for another session (the
 * loop's cut), or the guest closed it (a hang-up, not a half close: a client may shut its
 * sending side and still wait for the answer). */
static int held_withdrawn(void *arg)
{
	struct conn *c = arg;
	struct pollfd p = { .fd = c->fd, .events = 0 };

	if (c->cut && c->cut->set)
		return 1;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

int proxy_hold_decide(struct conn *c)
{
	static const char hexd[] = "0123456789abcdef";
	char refs[HOLD_MAX_REFS][300], summary[256], sha[2 * EVP_MAX_MD_SIZE + 1] = "";
	const char *ref_names[HOLD_MAX_REFS], *ref_lines[HOLD_MAX_REFS];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0, i;
	int n_refs = push_refs(c->hold_raw, c->hold_raw_n, refs, HOLD_MAX_REFS);
	char reason[256];
	enum approval_outcome out;

	for (i = 0; n_refs > 0 && i < (unsigned)n_refs; i++) {
		ref_lines[i] = refs[i];
		ref_names[i] = refs[i] + 82;
	}
	if (c->hold_needs_body) {
		/* A push rule: decide again, now that the pushed refs are known. */
		struct decide_req dq = { c->method,
					 c->host,
					 c->q.port,
					 c->q.path,
					 c->req_https,
					 ref_names,
					 n_refs > 0 ? (size_t)n_refs : 0 };
		struct decision d;

		decide(c->cfg->policy, c->cfg->rules, &dq, &d);
		if (n_refs >= 0 && d.verdict == VERDICT_ALLOW)
			return 0; /* no rule covers these refs */
		if (d.verdict == VERDICT_DENY) {
			c->decision = "deny";
			proxy_fail(c, 403, "%s", d.why);
			return -1;
		}
		if (d.verdict == VERDICT_APPROVAL)
			snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
		c->layer = decide_layer_name(LAYER_APPROVAL);
	}
	if (!c->cfg->approvals) {
		c->decision = "deny";
		proxy_fail(c, 403, "needs approval (%s), and this broker takes none", c->rule);
		return -1;
	}
	if (c->hold_md && EVP_DigestFinal_ex(c->hold_md, md, &mdlen) == 1)
		for (i = 0; i < mdlen; i++) {
			sha[2 * i] = hexd[md[i] >> 4];
			sha[2 * i + 1] = hexd[md[i] & 15];
		}
	sha[2 * mdlen] = '\0';
	summarize(c, summary, sizeof(summary));
	struct approval_info info = {
		.session = c->cfg->session,
		.method = c->method,
		.url = c->log_path,
		.rule = c->rule,
		.secret = c->secret_name[0] ? c->secret_name : NULL,
		.summary = summary,
		.sha256 = sha,
		.git_refs = n_refs > 0 ? ref_lines : NULL,
		.n_git_refs = n_refs > 0 ? (size_t)n_refs : 0,
	};
	if (c->cfg->log)
		fprintf(stderr, "bulkhead-broker: conn=%lu %s %s held for approval (%s)\n", c->id,
			c->method, c->log_path, c->rule);
	out = approvals_wait(c->cfg->approvals, &info,
			     c->cfg->policy ? c->cfg->policy->approval_ttl_seconds
					    : POLICY_DEFAULT_APPROVAL_TTL,
			     held_withdrawn, c, c->approval_id, reason, sizeof(reason));
	c->layer = decide_layer_name(LAYER_APPROVAL);
	if (out == APPROVAL_APPROVED)
		return 0;
	c->decision = "deny";
	if (out == APPROVAL_WITHDRAWN && c->cut && c->cut->set) {
		/* Taken for another session while it waited: the guest hears why. */
		c->outcome = AUDIT_OUTCOME_EVICTED;
		proxy_fail(c, 503, "approval %s withdrawn: %s", c->approval_id, c->cut->why);
		return -1;
	}
	if (out == APPROVAL_WITHDRAWN) {
		c->outcome = AUDIT_OUTCOME_GUEST_CLOSED;
		proxy_fail(c, 503, "approval %s withdrawn: the guest closed its connection",
			   c->approval_id);
		return -1;
	}
	proxy_fail(c, 403, "approval %s %s: %s", c->approval_id,
		   out == APPROVAL_EXPIRED ? "expired" : "denied", reason);
	return -1;
}
