/* SPDX-License-Identifier: Apache-2.0 */
/* broker/session.h: one session inside the broker — its rules, audit log, session CA and the
 * socket its guest's connections arrive on. Which socket a connection came in on is the only
 * thing that says which session it belongs to; nothing the guest sends does. */
#ifndef BULKHEAD_BROKER_SESSION_H
#define BULKHEAD_BROKER_SESSION_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "broker/approvals.h"
#include "broker/loop.h"
#include "broker/policy.h"
#include "broker/proxy.h"
#include "broker/rules.h"

/* The most open connections --max-conns may allow a session (loop.h holds the bounds). */
#define BROKER_SESSION_MAX_CONNS 1024
/* Session ids travel in file names and audit records: 1..64 of [A-Za-z0-9_-]. */
#define BROKER_SESSION_ID_MAX 64

/* What every session of one broker shares. */
struct broker_common {
	const struct secret_source *secrets; /* NULL: no secrets */
	SSL_CTX *tls;			     /* verified upstream TLS */
	int log;			     /* one line per request on stderr */
	int io_timeout_ms, connect_timeout_ms;
	const struct policy *policy;		      /* the global policy, or NULL */
	struct approvals *approvals;		      /* requests held for a person, all sessions */
	struct hold_budget *hold_total;		      /* what all sessions may hold */
	size_t hold_session_bytes, hold_session_reqs; /* what each may */
	struct hold_budget *buf_total;	/* what bodies buffered whole may take, all sessions */
	struct hold_budget *h2_total;	/* HTTP/2 streams served at once, all sessions */
	size_t buf_session_bytes;	/* ... and each */
	unsigned long long audit_quota; /* the most a session's audit log may grow to */
	int head_timeout_ms;		/* a request head's deadline */
	int stream_idle_ms;		/* a streamed answer's silence between messages */
	struct loop *loop; /* where every session's connections are accepted and wait */
};

struct broker_session;

int broker_session_id_ok(const char *id);

/* A session bound to a guest booted before it (a pooled guest, docs/ARCHITECTURE.md): the
 * session CA that guest already trusts (mitm_ca_export's PEM), and the digest of the scope
 * bound (rules_digest). Its audit log begins with the binding's record. */
struct broker_bind {
	const char *ca_pem;
	char scope_sha256[65];
};

/* Starts serving LISTEN_FD for session ID with RULES (moved in: on success the session owns
 * them, on failure they are freed) and, if AUDIT_PATH is set, an audit log there; BIND, if
 * set, for a late-bound session. LISTEN_FD is the session's from here on, closed on failure
 * too. Returns NULL with one line in err. */
struct broker_session *broker_session_start(const struct broker_common *common, const char *id,
					    struct rules *rules, int listen_fd,
					    const char *audit_path, const struct broker_bind *bind,
					    char *err, size_t errlen);

/* Revokes the session: no new connection is accepted, every open one is cut, and its state
 * (rules, CA key, loaded secrets) is freed once the last connection thread has let go. */
void broker_session_end(struct broker_session *s);

#endif
