/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules.h: injection rules — which secret goes to which destinations, in which form, and
 * which destinations may be reached without a secret. Loaded from JSON; default deny. */
#ifndef BULKHEAD_BROKER_RULES_H
#define BULKHEAD_BROKER_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <sys/socket.h>

#define RULES_NAME_MAX	    64
#define RULES_HOST_MAX	    253
#define RULES_ADDRS_MAX	    8
#define RULES_PLACEHOLDER   "BULKHEAD_SECRET_"
#define RULES_PLACEHOLDER_N (sizeof(RULES_PLACEHOLDER) - 1)

enum rules_scheme { RULES_HTTP, RULES_HTTPS };

/* One destination: exact host (case-insensitive), port, optional method and path prefix, and
 * the non-public addresses (loopback, private, ...) this destination may resolve to. */
struct rules_dest {
	enum rules_scheme scheme;
	char host[RULES_HOST_MAX + 1];
	uint16_t port;
	char *method;	   /* NULL: any method */
	char *path_prefix; /* NULL: any path */
	struct sockaddr_storage addrs[RULES_ADDRS_MAX];
	size_t n_addrs;
};

/* AWS_SIGV4: the request is signed with the key (broker/aws_sigv4.h), never carries it. */
enum rules_inject {
	RULES_INJECT_HEADER,
	RULES_INJECT_BASIC,
	RULES_INJECT_QUERY,
	RULES_INJECT_AWS_SIGV4
};

struct rules_secret {
	char name[RULES_NAME_MAX + 1];
	enum rules_inject kind;
	char *field;	/* header name (HEADER, BASIC: "Authorization") or query parameter */
	char *template; /* HEADER: value with one "{}"; BASIC: the user name; QUERY: unused */
	struct rules_dest *dests;
	size_t n_dests;
	char *oauth_scope; /* for an OAuth 2 entry: the narrower scope, or NULL */
	char *narrow;	   /* a github-app entry's token narrowing, or an AWS role's session policy
			    * (JSON), or NULL */
	/* AWS_SIGV4: the service and region signed for; for s3, "BUCKET/KEY-PREFIX" each. */
	char *aws_service, *aws_region;
	char **s3;
	size_t n_s3;
};

struct rules {
	struct rules_secret *secrets;
	size_t n_secrets;
	struct rules_dest *allow; /* reachable without any secret */
	size_t n_allow;
	/* What else the scope grants, applied by the launcher (rules_grant.c). */
	char *work; /* "work": {"path", "read_only"}: the session's share; NULL: none */
	int work_read_only;
	/* "work": {"paths": {"src": "rw", "config": "ro", ...}}: rules inside the share
	 * (session/share_rules.h), the mode 0 rw, 1 ro, 2 hidden; "share_secrets": "refuse" or
	 * "hide" (0: not said, 1, 2); "share_secrets_allow": paths shared as they are. */
	struct rules_work_path {
		char *path;
		int mode;
	} * work_paths;
	size_t n_work_paths;
	int work_secrets;
	char **work_allow;
	size_t n_work_allow;
	long long expires_at; /* "expires_at" (UTC) in Unix seconds; 0: no expiry */
};

/* What a request is, for matching: the destination as the guest named it. */
struct rules_req {
	const char *method;
	const char *host;
	int port;	  /* -1: no explicit port in the URL (the destination's default applies) */
	const char *path; /* starts with '/' */
};

/* Loads FILE; on failure returns -1 and writes one line into err. */
int rules_load_file(struct rules *r, const char *path, char *err, size_t errlen);
int rules_load_json(struct rules *r, const char *json, char *err, size_t errlen);
/* The digest a binding names (broker/session.h): SHA-256 of the scope as compact JSON with its
 * keys sorted, so the same rules give the same digest however their text was spaced. 0, or
 * -1 (not JSON). */
int rules_digest(const char *scope_text, char hex[65]);
void rules_free(struct rules *r);
/* rules_grant.c: the "work" and "expires_at" keys of ROOT into R. 0, or -1 with err. */
struct json_t;
int rules_parse_grant(struct json_t *root, struct rules *r, char *err, size_t errlen);

int rules_dest_match(const struct rules_dest *d, const struct rules_req *q);
/* The secret's first destination that REQ matches, or NULL. */
const struct rules_dest *rules_secret_match(const struct rules_secret *s,
					    const struct rules_req *q);
/* The first allow-list destination that REQ matches, or NULL. */
const struct rules_dest *rules_allow_match(const struct rules *r, const struct rules_req *q);
/* 1 when some https destination (a secret's or the allow list's) is HOST:PORT: what a CONNECT
 * may open. Each request inside the tunnel is then matched in full. */
int rules_https_host(const struct rules *r, const char *host, int port);
const struct rules_secret *rules_find_secret(const struct rules *r, const char *name,
					     size_t namelen);
int rules_default_port(enum rules_scheme s);

/* Renders the credential for SECRET: for HEADER and BASIC the header value, for QUERY the
 * percent-encoded parameter value. Returns a malloc'd NUL-terminated string (caller wipes),
 * or NULL (out of memory, or a value that cannot travel in a header: CR, LF or NUL; for
 * HEADER any control character but tab, as rules_field_value_ok). */
char *rules_render(const struct rules_secret *s, const uint8_t *val, size_t len);
/* Whether VAL may be (part of) a header field's value as sent: no control character but tab
 * (RFC 9110 5.5); a server reads DEL or 0x01 differently from what the scrubber was given. */
bool rules_field_value_ok(const uint8_t *val, size_t len);
/* Percent-encodes everything but RFC 3986 unreserved characters. Caller wipes and frees. */
char *rules_pct_encode(const uint8_t *val, size_t len);

#endif
