/* SPDX-License-Identifier: Apache-2.0 */
/* broker/session.c: one session (see session.h): its rules, audit log and CA, and its listener
 * in the broker's connection loop (loop.h). The loop holds a reference until it has closed
 * the session's last connection; the last one to let go frees the session. */
#include "broker/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/audit.h"
#include "broker/mitm_ca.h"
#include "broker/tls_resume.h"

struct broker_session {
	char id[BROKER_SESSION_ID_MAX + 1];
	struct rules rules;
	struct proxy_config cfg;
	struct audit *audit;
	pthread_mutex_t audit_lock;
	struct loop_session *ls; /* its listener and connections, in the broker's loop */
	pthread_mutex_t lock;	 /* guards refs */
	unsigned refs;		 /* the session itself, and the loop until it lets go */
	struct hold_budget hold; /* what this session's held requests take */
	struct hold_budget buf;	 /* what its bodies buffered whole take */
	struct hold_budget h2;	 /* its HTTP/2 streams served at once (a thread each) */
	/* The loop's records this second, and those it left out (loop_note). */
	time_t note_sec;
	unsigned note_n, note_dropped;
};

int broker_session_id_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (!n || n > BROKER_SESSION_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '-'))
			return 0;
	return 1;
}

static void note_append(struct broker_session *s, const char *rule, const char *path, int status,
			const char *outcome, uint64_t time_ms);

static void session_free(struct broker_session *s)
{
	int rc;

	if (s->audit && s->note_dropped) {
		char path[96];

		snprintf(path, sizeof(path),
			 "- (%u more like it in its last second, not recorded "
			 "one by one)",
			 s->note_dropped);
		note_append(s, "limit:records", path, 503, AUDIT_OUTCOME_OVER_LIMIT, 0);
	}
	rc = s->audit ? audit_close(s->audit) : 0;

	if (rc < 0)
		fprintf(stderr, "bulkhead-broker: session %s: closing the audit log: %s\n", s->id,
			strerror(-rc));
	mitm_ca_free(s->cfg.mitm);
	tls_resume_free(s->cfg.resume);
	if (s->cfg.secrets && s->cfg.secrets->session_end)
		s->cfg.secrets->session_end(s->cfg.secrets->arg, &s->rules);
	rules_free(&s->rules);
	hold_budget_destroy(&s->hold);
	hold_budget_destroy(&s->buf);
	hold_budget_destroy(&s->h2);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->audit_lock);
	free(s);
}

static void session_put(struct broker_session *s)
{
	unsigned left;

	pthread_mutex_lock(&s->lock);
	left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (!left)
		session_free(s);
}

/* A connection the loop refused or closed, recorded like a request: no method, host or
 * path, the broker's own status, and the limit that was reached as its rule. A guest can make
 * refusals as fast as it can connect: past NOTE_PER_S records in a second, the rest of that
 * second are counted, and one record says how many were left out (with the next record, a
 * second after the last when none follows (loop_flush), or when the session ends). */
#define NOTE_PER_S 20
static void note_append(struct broker_session *s, const char *rule, const char *path, int status,
			const char *outcome, uint64_t time_ms)
{
	struct audit_record r = {
		.session = s->id,
		.method = "-",
		.host = "-",
		.path = path,
		.rule = rule,
		.decision = "error",
		.status = status,
		.outcome = outcome,
		.time_ms = time_ms,
	};
	int rc = audit_append(s->audit, &r);

	if (rc < 0)
		proxy_audit_failed(s->id, rc);
}

/* Unix time in milliseconds: the one clock a record's second is both counted and stamped
 * by (time() reads a coarser clock that can still say the last second when the record's stamp
 * says the next). */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A past second's count, written once that second is over (the lock held). */
static void note_count(struct broker_session *s, uint64_t ms)
{
	char path[96];
	time_t now = (time_t)(ms / 1000);

	if (now == s->note_sec)
		return;
	if (s->note_dropped) {
		snprintf(path, sizeof(path),
			 "- (%u more like it in that second, not recorded one by one)",
			 s->note_dropped);
		note_append(s, "limit:records", path, 503, AUDIT_OUTCOME_OVER_LIMIT, ms);
	}
	s->note_sec = now;
	s->note_n = s->note_dropped = 0;
}

static void loop_flush(void *arg)
{
	struct broker_session *s = arg;

	if (!s->audit)
		return;
	pthread_mutex_lock(&s->audit_lock);
	note_count(s, now_ms());
	pthread_mutex_unlock(&s->audit_lock);
}

static void loop_note(void *arg, int status, const char *outcome, const char *rule)
{
	struct broker_session *s = arg;

	if (!s->audit)
		return;
	uint64_t ms = now_ms();

	pthread_mutex_lock(&s->audit_lock);
	note_count(s, ms);
	/* An eviction closes one of this session's own connections, so it comes no faster
	 * than they were opened: each is recorded, never counted in with refusals of another
	 * rule (the count's record says "more like it"). */
	if (!strcmp(outcome, AUDIT_OUTCOME_EVICTED))
		note_append(s, rule, "-", status, outcome, ms);
	else if (s->note_n++ < NOTE_PER_S)
		note_append(s, rule, "-", status, outcome, ms);
	else
		s->note_dropped++;
	pthread_mutex_unlock(&s->audit_lock);
}

static void loop_release(void *arg)
{
	session_put(arg);
}

/* The first record of a late-bound session's log: what was bound, before any request. */
static int bind_record(struct broker_session *s, const struct broker_bind *b, char *err,
		       size_t errlen)
{
	char path[96];
	struct audit_record r = {
		.session = s->id,
		.method = "BIND",
		.host = "-",
		.path = path,
		.rule = "bind",
		.decision = "allow",
		.layer = "scope",
		.outcome = AUDIT_OUTCOME_BOUND,
	};
	int rc;

	snprintf(path, sizeof(path), "scope-sha256:%s", b->scope_sha256);
	rc = s->audit ? audit_append(s->audit, &r) : 0;
	if (rc < 0)
		snprintf(err, errlen, "the binding's audit record: %s", strerror(-rc));
	return rc;
}

struct broker_session *broker_session_start(const struct broker_common *common, const char *id,
					    struct rules *rules, int listen_fd,
					    const char *audit_path, const struct broker_bind *bind,
					    char *err, size_t errlen)
{
	struct broker_session *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		rules_free(rules);
		close(listen_fd);
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->rules = *rules;
	memset(rules, 0, sizeof(*rules));
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->audit_lock, NULL);
	hold_budget_init(&s->hold, common->hold_session_bytes, common->hold_session_reqs);
	hold_budget_init(&s->buf, common->buf_session_bytes, SIZE_MAX);
	hold_budget_init(&s->h2, SIZE_MAX, H2_STREAMS_SESSION);
	if (audit_path && audit_open(audit_path, &s->audit, err, errlen) < 0)
		goto fail;
	if (s->audit)
		audit_set_quota(s->audit, common->audit_quota);
	s->cfg = (struct proxy_config){
		.rules = &s->rules,
		.secrets = common->secrets,
		.tls = common->tls,
		.io_timeout_ms = common->io_timeout_ms,
		.connect_timeout_ms = common->connect_timeout_ms,
		.log = common->log,
		.audit = s->audit,
		.audit_lock = &s->audit_lock,
		.session = s->id,
		.policy = common->policy,
		.approvals = common->approvals,
		.hold_session = &s->hold,
		.hold_total = common->hold_total,
		.buf_session = &s->buf,
		.buf_total = common->buf_total,
		.h2_session = &s->h2,
		.h2_total = common->h2_total,
		.head_timeout_ms = common->head_timeout_ms,
		.stream_idle_ms = common->stream_idle_ms,
	};
	/* The session CA for CONNECT: made here, never written anywhere; the guest fetches its
	 * certificate through the proxy and trusts nothing else. A late-bound session's was made
	 * by its supervisor, and its guest trusts it already. */
	s->cfg.mitm = bind ? mitm_ca_import(bind->ca_pem, MITM_CA_LIFETIME_S, err, errlen)
			   : mitm_ca_new(s->id, MITM_CA_LIFETIME_S, err, errlen);
	if (!s->cfg.mitm || (bind && bind_record(s, bind, err, errlen) < 0))
		goto fail;
	/* Without it, every upstream connection is a full handshake: slower, never wrong. */
	s->cfg.resume = tls_resume_new();
	struct loop_client cl = { &s->cfg, s->id, s, loop_note, loop_flush, loop_release };
	s->refs++; /* the loop's, given back by loop_release */
	s->ls = loop_listen(common->loop, listen_fd, &cl);
	if (!s->ls) {
		s->refs--;
		snprintf(err, errlen, "out of memory");
		session_free(s);
		return NULL;
	}
	return s;
fail:
	close(listen_fd);
	session_free(s);
	return NULL;
}

void broker_session_end(struct broker_session *s)
{
	/* The loop stops accepting and cuts every connection; it lets go once the last is
	 * gone. Held requests are denied: nothing of a session outlives it. */
	loop_unlisten(s->ls);
	if (s->cfg.approvals)
		approvals_session_end(s->cfg.approvals, s->id);
	session_put(s);
}
