/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_audit.c: the record of each request — one audit line (broker/audit.h) and one
 * log line, written exactly once per request whatever ends it: an answer, the broker's own
 * refusal, or the guest going away after the head (with its credential) went upstream. A
 * request is due a record from its first byte (rq_begin); proxy_audit_log() writes it and clears
 * that, and the connection's end writes any record still due. */
#include "broker/proxy_internal.h"

#include "lib/mono.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

/* The path and query as the guest sent them — before any credential was injected, so no
 * secret's value can be in them — or, for a request refused before its URL was read, the
 * path part of log_path. Host and port have their own fields in the audit record. The record
 * keeps the first AUDIT_FIELD_MAX bytes; target_sha() tells longer ones apart. */
static const char *target_path(const struct conn *c)
{
	const char *auth = strstr(c->log_path, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;

	if (c->have_target && c->req.url_len)
		return c->target_off < c->req.url_len
			       ? c->req.arena + c->req.url_off + c->target_off
			       : "/";
	return path ? path : c->log_path;
}

/* SHA-256 (hex) of the whole request target as sent; "" when there is none. */
static void target_sha(const struct conn *c, char hex[65])
{
	static const char hexd[] = "0123456789abcdef";
	unsigned char md[32];
	unsigned i;

	hex[0] = '\0';
	if (!c->have_target || !c->req.url_len ||
	    EVP_Digest(c->req.arena + c->req.url_off, c->req.url_len, md, NULL, EVP_sha256(),
		       NULL) != 1)
		return;
	for (i = 0; i < 32; i++) {
		hex[2 * i] = hexd[md[i] >> 4];
		hex[2 * i + 1] = hexd[md[i] & 15];
	}
	hex[64] = '\0';
}

static const char *outcome(const struct conn *c, int status)
{
	if (c->outcome)
		return c->outcome;
	if (c->resp_done)
		return AUDIT_OUTCOME_ANSWERED;
	if (c->resp_started && !c->err_status)
		return status ? AUDIT_OUTCOME_CUT : AUDIT_OUTCOME_GUEST_CLOSED;
	return c->err_status ? AUDIT_OUTCOME_REFUSED : AUDIT_OUTCOME_CUT;
}

/* A record that could not be written, said on the host at most once a second (a full disk
 * would otherwise add a line per request). */
void proxy_audit_failed(const char *session, int rc)
{
	static _Atomic long last;
	int64_t now_s = mono_ms() / 1000;

	if (now_s == last)
		return;
	last = now_s;
	fprintf(stderr,
		"bulkhead-broker: session %s: audit log write failed: %s (requests are "
		"refused until it can be written)\n",
		session, strerror(-rc));
}

/* Who, where, which rule and secret *names*, what was decided and how it ended; never a
 * value (the broker never hands the audit log one). */
static void audit_request(struct conn *c, int status, uint64_t duration_us)
{
	const struct proxy_config *cfg = c->cfg;
	/* The broker's own decision, never the upstream's answer: "error" is a request refused
	 * before any rule was asked (malformed, a slow head, inconsistent). */
	const char *decision = c->decision ? c->decision : c->serve_ca ? "allow" : "error";
	char sha[65];

	if (!cfg->audit)
		return;
	if (strncmp(c->rule, "tripwire:", 9) == 0)
		decision = "tripwire";
	target_sha(c, sha);
	struct audit_cred creds[DECIDE_MAX_INJECT];
	char ids[DECIDE_MAX_INJECT][24];
	size_t n_creds = 0;
	const struct secret_source *src = cfg->secrets;

	for (size_t i = 0; src && src->describe && i < c->n_inj_names; i++) {
		struct audit_cred *a = &creds[n_creds++];

		const struct secret_slot *sl = &c->secrets[c->inj[i] - cfg->rules->secrets];

		a->name = c->inj[i]->name;
		src->describe(src->arg, c->inj[i], sl->state == 1 ? sl->val : NULL, sl->len,
			      &a->kind, ids[n_creds - 1], &a->expires_at);
		a->token_id = ids[n_creds - 1][0] ? ids[n_creds - 1] : NULL;
	}
	struct audit_record r = {
		.session = cfg->session,
		.method = c->method[0] ? c->method : "-",
		.host = c->host[0] ? c->host : "-",
		.port = c->dest	      ? c->dest->port
			: c->port > 0 ? (unsigned)c->port
				      : 0,
		.path = target_path(c),
		.target_sha256 = sha[0] ? sha : NULL,
		.rule = c->rule[0] ? c->rule : NULL,
		.secrets = c->inj_names,
		.n_secrets = c->n_inj_names,
		.decision = decision,
		.layer = c->layer,
		.approval = c->approval_id[0] ? c->approval_id : NULL,
		.status = status,
		.outcome = outcome(c, status),
		.bytes_out = c->bytes_up,
		.bytes_in = c->bytes_down,
		.duration_us = duration_us,
		.ws = c->ws_open ? &c->ws_stats : NULL,
		.creds = creds,
		.n_creds = n_creds,
	};
	pthread_mutex_lock(cfg->audit_lock);
	int rc = audit_append(cfg->audit, &r);
	pthread_mutex_unlock(cfg->audit_lock);
	if (rc < 0)
		proxy_audit_failed(cfg->session, rc);
}

void proxy_audit_log(struct conn *c, int status)
{
	double ms;
	char ws[120] = "";

	c->audit_due = 0;
	/* Taken away by the loop (another session's need, its own session's end): that is how
	 * it ended, whatever the guest's side then showed; and the loop need not record it. */
	if (c->cut && c->cut->set) {
		c->outcome = c->cut->outcome ? c->cut->outcome : AUDIT_OUTCOME_EVICTED;
		if (!c->rule[0] && c->cut->rule)
			snprintf(c->rule, sizeof(c->rule), "%s", c->cut->rule);
		c->cut->recorded = 1;
	}
	ms = (double)(mono_ns() - c->t0_ns) / 1e6;
	audit_request(c, status, (uint64_t)(ms * 1000));
	proxy_audit_release(c); /* its room is used now */
	if (!c->cfg->log)
		return;
	if (c->ws_open)
		snprintf(ws, sizeof(ws), " websocket out=%lu in=%lu close=%d by=%s",
			 c->ws_stats.messages_out, c->ws_stats.messages_in, c->ws_stats.close_code,
			 c->ws_stats.closed_by ? c->ws_stats.closed_by : "broker");
	fprintf(stderr,
		"bulkhead-broker: conn=%lu %s %s -> %d rule=%s up=%zu down=%zu scrubbed=%zu "
		"messages=%lu forms=%zu ms=%.2f%s%s%s%s%s\n",
		c->id, c->method[0] ? c->method : "-", c->log_path, status,
		c->rule[0] ? c->rule : "-", c->bytes_up, c->bytes_down, c->scrub.replaced,
		c->messages, c->scrub.n_pats, ms, c->err_status ? " why=" : "",
		c->err_status ? c->err_msg : "", c->outcome ? " outcome=" : "",
		c->outcome ? c->outcome : "", ws);
}

void proxy_audit_release(struct conn *c)
{
	if (c->audit_reserved) {
		c->audit_reserved = 0;
		audit_release(c->cfg->audit);
	}
}

void proxy_audit_due(struct conn *c)
{
	if (c->audit_due)
		proxy_audit_log(c, c->resp_started ? (int)c->rp.status_code : 0);
}
