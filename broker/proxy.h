/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy.h: one guest connection to the broker — HTTP/1.1 forward-proxy requests in
 * absolute form, decided by the rules, credentials injected, responses scrubbed. */
#ifndef BULKHEAD_BROKER_PROXY_H
#define BULKHEAD_BROKER_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "broker/audit.h"
#include "broker/hold_budget.h"
#include "broker/approvals.h"
#include "broker/mitm_ca.h"
#include "broker/policy.h"
#include "broker/proxy_limits.h"
#include "broker/rules.h"

#include <pthread.h>

/* Where secret values come from (the vault, or a test file). get() returns 0 and a malloc'd
 * value the caller wipes and frees, -ENOENT when S is unknown, or another negative errno with
 * one line in why (never a value): for a typed vault entry, the value is the access token the
 * broker obtained (token_cache.h). */
#define SECRET_PEEK 1 /* get(): only what is known without asking anyone (-ENOENT otherwise) */
struct secret_source {
	/* FLAGS: SECRET_PEEK or 0; *UNTIL_MS (monotonic) is left as it is for a value valid
	 * until the generation changes, or set to when it must be asked for again. */
	int (*get)(void *arg, const struct rules_secret *s, int flags, uint8_t **val, size_t *len,
		   int64_t *until_ms, char *why, size_t whylen);
	void *arg;
	/* Where values can change while the broker runs (a vault replaced on disk, a token
	 * refreshed): a number that changes when they may have, asked once per request. NULL: they
	 * never change. */
	unsigned (*generation)(void *arg);
	/* The same number as another request made it, without looking for a change: asked at
	 * each read from an upstream, so that a stream open across a change scrubs the new
	 * values. NULL with generation NULL. */
	unsigned (*current)(void *arg);
	/* The values NAME held before (replaced, removed), for the scrubber: the first one with a
	 * serial over AFTER, as get() returns values; -ENOENT when there is none. May be NULL. */
	int (*retired)(void *arg, const char *name, unsigned after, unsigned *serial, uint8_t **val,
		       size_t *len);
	/* An upstream answered 401 to a request that carried VAL for S. May be NULL. */
	void (*unauthorized)(void *arg, const struct rules_secret *s, const uint8_t *val,
			     size_t len);
	/* For the audit record: S's kind ("static", "oauth2-refresh", ...) and, when VAL (what
	 * the request carried) is an obtained token, its id and expiry (Unix seconds; 0: none
	 * known). May be NULL: static. */
	void (*describe)(void *arg, const struct rules_secret *s, const uint8_t *val, size_t len,
			 const char **kind, char id[24], int64_t *expires);
	/* The session whose rules are R ended: what was obtained for it alone is revoked. May be
	 * NULL. */
	void (*session_end)(void *arg, const struct rules *r);
};

struct proxy_config {
	const struct rules *rules;
	const struct secret_source *secrets;
	SSL_CTX *tls; /* verified upstream TLS (upstream_tls.h) */
	struct tls_resume
		*resume;      /* this session's upstream TLS sessions, or NULL (tls_resume.h) */
	struct mitm_ca *mitm; /* the session CA for CONNECT (mitm_ca.h), or NULL: no CONNECT */
	const struct policy *policy; /* the global policy (policy.h), or NULL: none */
	struct approvals *approvals; /* where held requests wait (approvals.h) */
	int io_timeout_ms;	     /* idle time allowed on either side */
	int connect_timeout_ms;	     /* per upstream address */
	int log;		     /* one line per request on stderr */
	/* The audit log (broker/audit.h), or NULL; appends are serialised by audit_lock. */
	struct audit *audit;
	pthread_mutex_t *audit_lock;
	const char *session; /* session id in audit records */
	/* What requests held for approval may take: this session's and the broker's. */
	struct hold_budget *hold_session, *hold_total;
	/* What bodies buffered whole may take (a request's re-measured body, a decoded answer):
	 * this session's and the broker's (bytes only). */
	struct hold_budget *buf_session, *buf_total;
	/* HTTP/2 streams served at once, each on a thread of its own (h2_threads.c): this
	 * session's (H2_STREAMS_SESSION) and the broker's (H2_STREAMS_TOTAL); counts only. */
	struct hold_budget *h2_session, *h2_total;
	int head_timeout_ms; /* a request's whole head must arrive within this */
	int stream_idle_ms;  /* a streamed answer's upstream may be silent this long (else io) */
};

/* One guest connection's state, kept between the requests it sends (proxy_internal.h). */
struct conn;

/* The connection FD's state (FD stays the caller's: proxy_conn_free does not close it), or
 * NULL when out of memory. */
struct conn *proxy_conn_new(const struct proxy_config *cfg, int fd, unsigned long conn_id);
/* Serves requests until the connection ends or misbehaves (PROXY_DONE: free it and close
 * its socket), or until it has been silent LINGER_MS between two requests, or YIELD (when
 * given) is above 0 there (PROXY_IDLE: its upstream connection closed, it may wait without a
 * thread and be served again once readable; LINGER_MS < 0: never idle). CUT (when given) is
 * how another thread takes the connection away: it writes WHY, then SET, then shuts the
 * socket's reading side; the end of stream that follows is answered 503 WHY unless an answer
 * has begun. */
struct proxy_cut {
	char why[240];
	const char *outcome; /* the record's outcome then (AUDIT_OUTCOME_EVICTED, _CUT) */
	const char *rule;    /* and its rule when no decision named one ("limit:fair_share") */
	_Atomic int set;
	_Atomic int recorded; /* the worker wrote the request's record with that outcome */
};
enum { PROXY_DONE, PROXY_IDLE, PROXY_STREAM };
int proxy_conn_serve(struct conn *c, int linger_ms, const _Atomic unsigned *yield,
		     struct proxy_cut *cut);
/* PROXY_STREAM: an answer (a stream of events, say) or a WebSocket was relayed until both its
 * sides stayed quiet LINGER_MS; it waits without a thread until the upstream socket *UP_FD is
 * readable, or the guest's socket is (*GUEST_READS: a WebSocket's) or hangs up (otherwise), or
 * *DUE_MS passes (monotonic ms, 0: never): then proxy_conn_serve() runs it on. Returns 1 and
 * those for such a connection, else 0. */
int proxy_conn_stream(const struct conn *c, int *up_fd, int *guest_reads, int64_t *due_ms);
/* Ends a parked stream (a session's end, an eviction): its one audit record, with OUTCOME. */
void proxy_conn_stream_end(struct conn *c, const char *outcome);
/* 1 when an idle connection carries nothing a fresh proxy_conn_new() would not (no TLS of a
 * CONNECT tunnel ends in it, no upstream connection is kept): it may be freed while it
 * waits, and made anew. */
int proxy_conn_stateless(const struct conn *c);
/* An audit record of SESSION that could not be written (RC, a negative errno), said on the host
 * at most once a second. */
void proxy_audit_failed(const char *session, int rc);
/* Wipes and frees C (NULL: nothing). */
void proxy_conn_free(struct conn *c);

/* Serves the connection FD until it ends or misbehaves, then closes it. One bad connection
 * never affects another: all state is local to this call. Returns the requests answered. */
unsigned long proxy_serve(const struct proxy_config *cfg, int fd, unsigned long conn_id);

/* The answer to a request the broker will not serve: STATUS, "Connection: close", a 503's
 * Retry-After, and "bulkhead: WHY" as the body. Returns its length, or -1 when LEN is short. */
int proxy_error_text(char *buf, size_t len, int status, const char *why);
/* The same, in the error body an AWS SDK reads: S3's XML (XML) or the JSON protocols'. */
int proxy_error_aws_text(char *buf, size_t len, int status, const char *why, int xml);
/* Reads and drops what FD holds unread (at most 64 KiB, without waiting), before an answer
 * and a close: a Unix socket closed with unread bytes resets its peer. */
void proxy_drop_unread(int fd);

#endif
