/* SPDX-License-Identifier: Apache-2.0 */
/* broker/audit.h: the broker's audit log — one JSON object per line, each line chained to
 * the previous one by its SHA-256, and the checker behind `bulkhead audit verify`. */
#ifndef BULKHEAD_BROKER_AUDIT_H
#define BULKHEAD_BROKER_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A line is a compact JSON object (keys in this order) ending in '\n':
 *   {"v":3,"time":"2024-05-01T12:00:00.123Z","session":"...","method":"GET",
 *    "host":"api.example","port":443,"path":"/v1/x?q=1","target_sha256":"<64 hex digits>",
 *    "rule":"...","secrets":["NAME"],"decision":"allow","layer":"scope","approval":null,
 *    "status":200,"outcome":"answered","bytes_out":12,"bytes_in":345,"duration_us":1250,
 *    "prev":"<64 hex digits>"}
 * "path" is the target's path and query exactly as the guest sent them (before the broker
 * injected anything, so never a secret's value), cut to AUDIT_FIELD_MAX bytes;
 * "target_sha256" is the SHA-256 of the whole request target as sent, so two requests whose
 * targets differ only past the cut still differ (null when the request had no target yet).
 * "decision" is the broker's own: "allow", "deny", "tripwire", or "error" for a request
 * refused before any rule was asked (malformed, a head too slow); the upstream's answer is in
 * "status" and never changes it.
 * "secrets" names every secret injected into the request ([] when none); "outcome" says how
 * the request ended (AUDIT_OUTCOME_*), and "bytes_out" how much of it reached the upstream.
 * Version 1 lines (one "secret" name, no "outcome") and version 2 lines (no "target_sha256")
 * verify the same way.
 * "prev" is the SHA-256 of the previous line's bytes (without its '\n'); the first line's
 * is the SHA-256 of AUDIT_GENESIS. Strings the guest controls (method, host, path) are
 * stored as given when they are UTF-8 without control characters, else with every byte
 * outside printable ASCII (and '%') as %XX; each is cut to AUDIT_FIELD_MAX bytes first. There is
 * deliberately no field for a secret's value.
 *
 * Durability: each line goes out in one write(2) on an O_APPEND descriptor, so a crash of
 * the broker loses nothing already appended; fdatasync runs after every line by default
 * (audit_set_sync_every raises that to every N lines, and audit_sync/audit_close flush).
 */
#define AUDIT_GENESIS	"bulkhead audit log v1"
#define AUDIT_FIELD_MAX 2048
#define AUDIT_LINE_MAX	65536
#define AUDIT_HASH_HEX	64
#define AUDIT_VERSION	3

/* How a request ended. */
#define AUDIT_OUTCOME_ANSWERED	    "answered"	    /* the upstream's whole answer went back */
#define AUDIT_OUTCOME_REFUSED	    "refused"	    /* the broker answered with its own error */
#define AUDIT_OUTCOME_CUT	    "cut"	    /* the answer started but did not finish */
#define AUDIT_OUTCOME_GUEST_CLOSED  "guest_closed"  /* the guest ended its stream mid-request */
#define AUDIT_OUTCOME_GUEST_RESET   "guest_reset"   /* the guest's connection failed */
#define AUDIT_OUTCOME_GUEST_TIMEOUT "guest_timeout" /* the guest stayed silent too long */
#define AUDIT_OUTCOME_OVER_BUDGET   "over_budget"   /* holding it would exceed a hold budget */
#define AUDIT_OUTCOME_OVER_LIMIT    "over_limit"    /* a connection past a connection limit */
#define AUDIT_OUTCOME_EVICTED	    "evicted" /* an idle connection closed for another session */
#define AUDIT_OUTCOME_IDLE	    "idle_timeout" /* a connection idle past its deadline */
#define AUDIT_OUTCOME_BOUND	    "bound" /* a pooled guest bound to this session (method BIND) */

/* A WebSocket's record: its messages each way and how it closed. */
struct audit_ws {
	unsigned long messages_out; /* guest -> upstream */
	unsigned long messages_in;  /* upstream -> guest */
	int close_code;		    /* the first close frame's code; 0: none came */
	const char *closed_by;	    /* "guest", "upstream", "broker" (idle, failure), "tripwire" */
};

/* What one injected secret was ("credentials": [...]): its kind and, for an obtained token,
 * the token's id (a hash prefix, never the value) and expiry. */
struct audit_cred {
	const char *name, *kind;
	const char *token_id; /* NULL: none (a static value) */
	int64_t expires_at;   /* Unix seconds; 0: none given */
};

struct audit_record {
	const char *session;	    /* session id */
	const char *method;	    /* HTTP method or "CONNECT" */
	const char *host;	    /* destination host as requested */
	unsigned port;		    /* 0: omitted */
	const char *path;	    /* the target's path and query as the guest sent them */
	const char *target_sha256;  /* hex SHA-256 of the whole request target; NULL: none */
	const char *rule;	    /* the policy rule that decided, NULL if none */
	const char *const *secrets; /* names of the injected secrets */
	size_t n_secrets;
	const char *decision; /* "allow", "deny", "tripwire", ... */
	const char *layer;    /* which layer decided: "global", "scope", "approval", "default" */
	const char *approval; /* the approval's id when a person decided, NULL if none */
	int status;	      /* HTTP status sent to the guest; 0: none */
	const char *outcome;  /* AUDIT_OUTCOME_*, NULL: omitted */
	uint64_t bytes_out;   /* guest -> upstream */
	uint64_t bytes_in;    /* upstream -> guest */
	uint64_t duration_us;
	uint64_t time_ms;		/* Unix time in milliseconds; 0: now */
	const struct audit_ws *ws;	/* a WebSocket's ("websocket": {...}); NULL: omitted */
	const struct audit_cred *creds; /* each injected secret's kind; omitted when none */
	size_t n_creds;
};

struct audit; /* one caller at a time: the broker appends from its event loop */

/* Opens (creating, 0600) the log at path for appending and takes an exclusive lock on it,
 * so two brokers never interleave chains. Refuses a log whose last line is incomplete.
 * Returns 0 or a negative errno with one line in err. */
int audit_open(const char *path, struct audit **out, char *err, size_t errlen);
/* Appends one record; 0 or a negative errno (nothing is written on failure). */
int audit_append(struct audit *a, const struct audit_record *r);
/* Before a request is forwarded: room for its record, counted at the longest line beside every
 * other request in flight, within the log's quota and its file system's free space, and the
 * last append having succeeded. 0 (audit_release once its record is written), or -ENOSPC with
 * why: the broker forwards nothing it could not record. Safe to call from any thread. */
int audit_reserve(struct audit *a, char *why, size_t whylen);
void audit_release(struct audit *a);
/* The most the log may grow to (0: no quota): a session past it has its requests refused. */
void audit_set_quota(struct audit *a, unsigned long long bytes);
/* fdatasync after every n lines (n >= 1; 1 is the default). */
void audit_set_sync_every(struct audit *a, unsigned n);
int audit_sync(struct audit *a);
/* Flushes and closes; returns the first error of the final sync. */
int audit_close(struct audit *a);

/* The chain's expected "prev" for the next line after a line of len bytes (hex, NUL'ed). */
void audit_hash_line(const char *line, size_t len, char hex[AUDIT_HASH_HEX + 1]);

/* Checks a log: every line parses as a JSON object with a valid "prev" that matches the
 * line before. Returns 0 when intact (*nlines lines; head = the hash the next line will
 * carry, which an operator can keep elsewhere to detect a cut or edited tail), 1 when not
 * (*bad_line is the first broken line, why says how), or a negative errno on I/O failure.
 * A chain alone cannot show that the last lines were removed or the last line rewritten;
 * comparing head with a copy kept elsewhere can. */
int audit_verify(FILE *f, size_t *nlines, size_t *bad_line, char head[AUDIT_HASH_HEX + 1],
		 char *why, size_t whylen);

#endif
