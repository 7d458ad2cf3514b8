/* broker/proxy_audit.c: the record of each request — one audit line (broker/audit.h) and one
 * log line, written exactly once per request whatever ends it: an answer, the broker's own
 * refusal, or the guest going away after the head (with its credential) went upstream. A
 * request is due a record from its first byte (rq_begin); proxy_audit_log() writes it and clears
 * that, and the connection's end writes any record still due. */
#include "broker/proxy_conn.h"

#include <stdio.h>
#include <string.h>

/* The path part of log_path ("scheme://host[:port]/path"): host and port have
 * their own fields in the audit record. */
static const char *target_path(const struct conn *c)
{
	const char *auth = strstr(c->log_path, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;
	return path ? path : c->log_path;
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

/* Who, where, which rule and secret *names*, what was decided and how it ended; never a
 * value (the broker never hands the audit log one). */
static void audit_request(struct conn *c, int status, uint64_t duration_us)
{
	const struct proxy_config *cfg = c->cfg;
	const char *decision = "allow";
	/* A refusal that could not be sent (the guest had gone) still decided the request. */
	int st = status ? status : c->err_status;

	if (!cfg->audit)
		return;
	if (strncmp(c->rule, "tripwire:", 9) == 0)
		decision = "tripwire";
	else if (st == 403)
		decision = "deny";
	else if (st >= 400 || (st == 0 && !c->dest))
		decision = "error";
	struct audit_record r = {
		.session = cfg->session,
		.method = c->method[0] ? c->method : "-",
		.host = c->host[0] ? c->host : "-",
		.port = c->dest	      ? c->dest->port
			: c->port > 0 ? (unsigned)c->port
				      : 0,
		.path = target_path(c),
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
	};
	pthread_mutex_lock(cfg->audit_lock);
	int rc = audit_append(cfg->audit, &r);
	pthread_mutex_unlock(cfg->audit_lock);
	if (rc < 0)
		fprintf(stderr, "bulkhead-broker: audit log write failed: %s\n", strerror(-rc));
}

void proxy_audit_log(struct conn *c, int status)
{
	struct timespec t1;
	double ms;

	c->audit_due = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - c->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - c->t0.tv_nsec) / 1e6;
	audit_request(c, status, (uint64_t)(ms * 1000));
	if (!c->cfg->log)
		return;
	fprintf(stderr,
		"bulkhead-broker: conn=%lu %s %s -> %d rule=%s up=%zu down=%zu scrubbed=%zu "
		"ms=%.2f%s%s%s%s\n",
		c->id, c->method[0] ? c->method : "-", c->log_path, status,
		c->rule[0] ? c->rule : "-", c->bytes_up, c->bytes_down, c->scrub.replaced, ms,
		c->err_status ? " why=" : "", c->err_status ? c->err_msg : "",
		c->outcome ? " outcome=" : "", c->outcome ? c->outcome : "");
}

void proxy_audit_due(struct conn *c)
{
	if (c->audit_due)
		proxy_audit_log(c, c->resp_started ? (int)c->rp.status_code : 0);
}
