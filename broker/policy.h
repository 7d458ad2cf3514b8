/* SPDX-License-Identifier: Apache-2.0 */
/* broker/policy.h: the global policy — the organisation's backstop, which no session scope
 * can exceed. Loaded from JSON (/etc/bulkhead/policy.json or --policy), strictly: an unknown
 * key is an error, so a typo never silently widens or narrows it.
 *
 *   {
 *     "deny_hosts":       ["metadata.google.internal", "*.corp.example"],
 *     "deny_cidrs":       ["10.0.0.0/8", "fd00::/8"],
 *     "deny_secrets":     ["prod_*"],
 *     "deny_share_paths": ["~/.ssh", "/etc"],
 *     "limits": { "max_mem_mib": 2048, "max_cpus": 4, "max_session_seconds": 3600 },
 *     "require_approval": [
 *       { "host": "api.github.com", "methods": ["POST", "DELETE"], "path_prefix": "/repos/" },
 *       { "host": "git.example.com", "git_ref": "refs/heads/main" } ],
 *     "approval_ttl_seconds": 300,
 *     "forbid_no_jail": true,
 *     "share_secrets": "hide",
 *     "share_secrets_allow": false,
 *     "share_secret_patterns": ["*.tfstate", "*.kdbx"]
 *   }
 *
 * Host patterns are exact names or "*.suffix"; secret patterns are fnmatch(3) globs. An
 * approval rule without "methods" covers every method but the read-only ones (GET, HEAD,
 * OPTIONS, and git's fetch: POST .../git-upload-pack). With "git_ref" it covers git pushes
 * (POST .../git-receive-pack) that update a ref matching that glob.
 *
 * Credential files in a work share (session/share_scan.h): "share_secrets" decides for every
 * session what is done with those found ("refuse" the session, or "hide" them and go on;
 * without it each session chooses, refusing by default); "share_secrets_allow": false refuses
 * a session's own exceptions; "share_secret_patterns" are more names (fnmatch globs, a path
 * from the share's top when one holds a '/') that count as credential files. */
#ifndef BULKHEAD_BROKER_POLICY_H
#define BULKHEAD_BROKER_POLICY_H

#include <stddef.h>
#include <sys/socket.h>

#include "broker/rules.h"

struct policy_cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned prefix;
};

struct policy_approval_rule {
	char *host;	/* pattern */
	char **methods; /* NULL: every method but the read-only ones */
	size_t n_methods;
	char *path_prefix; /* NULL: any path */
	char *git_ref;	   /* NULL: not about git pushes; else a glob on pushed refs */
};

struct policy {
	char **deny_hosts, **deny_secrets, **deny_share_paths;
	size_t n_deny_hosts, n_deny_secrets, n_deny_share_paths;
	struct policy_cidr *deny_cidrs;
	size_t n_deny_cidrs;
	unsigned max_mem_mib, max_cpus;	   /* 0: no limit */
	unsigned long max_session_seconds; /* 0: no limit */
	struct policy_approval_rule *approvals;
	size_t n_approvals;
	unsigned approval_ttl_seconds; /* default 300 */
	int forbid_no_jail;	       /* `bulkhead run --no-jail` is refused */
	int share_secrets;	       /* 0: each session's choice, 1: refuse, 2: hide */
	int share_secrets_no_allow;    /* a session's share_secrets_allow is refused */
	char **share_secret_patterns;
	size_t n_share_secret_patterns;
};

#define POLICY_DEFAULT_PATH	    "/etc/bulkhead/policy.json"
#define POLICY_DEFAULT_APPROVAL_TTL 300

/* Loads and checks. On failure returns -1 with one line in err: "line L, column C: ..." for
 * JSON syntax and for a value in the wrong place alike. */
int policy_load_file(struct policy *p, const char *path, char *err, size_t errlen);
int policy_load_json(struct policy *p, const char *json, char *err, size_t errlen);
void policy_free(struct policy *p);

/* 1 when HOST matches PATTERN (an exact name, or "*.suffix" for names under suffix). */
int policy_host_match(const char *pattern, const char *host);
/* The first deny_hosts pattern HOST matches, or NULL. */
const char *policy_host_denied(const struct policy *p, const char *host);
/* The first deny_cidrs entry ADDR falls in, rendered into buf; NULL if none. */
const char *policy_addr_denied(const struct policy *p, const struct sockaddr *addr, char *buf,
			       size_t len);
/* The first deny_secrets pattern NAME matches, or NULL. */
const char *policy_secret_denied(const struct policy *p, const char *name);
/* Whether sharing PATH (absolute, resolved) would expose a denied path: PATH equals, lies
 * under or contains one. Returns that entry as written, or NULL. HOME expands "~/". */
const char *policy_share_denied(const struct policy *p, const char *path, const char *home);

/* Checks a session scope against the policy before the session starts: a secret or a host
 * the policy denies. Returns 0, or -1 with one line naming the global rule in err. */
int policy_check_scope(const struct policy *p, const struct rules *scope, char *err, size_t errlen);

#endif
