/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_plan.h: what is done inside a share before a session starts, from every layer:
 * the mode each path gets (session/share_rules.h) and the credential files a scan finds
 * (session/share_scan.h), refused or hidden. One function serves `bulkhead run` and `start`,
 * `bulkhead-oci` (through the plan: session/plan_share.c) and `bulkhead policy share` (which
 * only says what would happen).
 *
 * The layers, from coarse to fine (docs/THREAT-MODEL.md "The work share"):
 *  - the global policy: "share_secrets" (refuse or hide, for every session),
 *    "share_secrets_allow": false (no session may make an exception), and
 *    "share_secret_patterns" (more names that count);
 *  - the scope's "work": "paths" (rules), "share_secrets", "share_secrets_allow";
 *  - the session's options: --work-rule PATH:MODE, which may narrow the scope's rules but
 *    never widen them, --share-secrets, --share-allow PATH.
 * Credential files are refused unless a layer says hide; the policy's word beats the
 * session's, whose option beats its scope. */
#ifndef BULKHEAD_SESSION_SHARE_PLAN_H
#define BULKHEAD_SESSION_SHARE_PLAN_H

#include "session/share_rules.h"
#include "session/share_scan.h"

enum share_secrets { SHARE_SECRETS_UNSAID, SHARE_SECRETS_REFUSE, SHARE_SECRETS_HIDE };

/* The scope's and the policy's asks, gathered before the share is looked at (owned here). */
struct share_layers {
	struct share_rules scope_rules; /* the scope's work.paths */
	bool scope_ro;			/* the scope grants its share read-only */
	int scope_secrets;		/* enum share_secrets */
	char **scope_allow;
	size_t nscope_allow;
	int policy_secrets; /* enum share_secrets */
	bool policy_no_allow;
	char **patterns;
	size_t npatterns;
};

/* The session's own asks (its options; strings the caller's). */
struct share_asks {
	const char *const *rules; /* "PATH:MODE" */
	size_t nrules;
	const char *secrets; /* "refuse", "hide" or NULL */
	const char *const *allow;
	size_t nallow;
};

/* What share_plan() decided, for a report. */
struct share_outcome {
	int secrets;		/* enum share_secrets, as decided */
	const char *secrets_by; /* "the global policy", "--share-secrets", "the scope", "the
				 * default" */
	size_t hidden, cleaned, allowed;
};

/* For the share DIR (absolute, as share_fs resolved it; LABEL names it in messages, "--work
 * /x"): RULES gets the asked rules when WORK (the work share: the scope's, then the
 * session's), the scan runs into SCAN (hidden paths skipped), and what it found is allowed,
 * hidden (added to RULES; a git config with a credential gets a clean copy) or refused, as the
 * layers say; then RULES are resolved against the share. A bind mount (WORK false) gets the
 * scan alone. Each finding's fate is in SCAN. 0; -1 with one line in err when the share
 * refuses the session (what was found in it, a rule it cannot take); -2 when the asks are
 * wrong whatever the share holds (a rule's grammar, a widening, a forbidden exception). */
int share_plan(const char *dir, const char *label, bool work,
	       const struct share_layers *L, const struct share_asks *a, struct share_rules *rules,
	       struct share_scan *scan, struct share_outcome *out, char *err, size_t errlen);

/* The scope's (broker/rules.h) and the policy's (broker/policy.h) share keys into L. 0, or -1
 * with err. */
struct rules;
struct policy;
int share_layers_scope(struct share_layers *L, const struct rules *scope, char *err,
		       size_t errlen);
int share_layers_policy(struct share_layers *L, const struct policy *pol, char *err,
			size_t errlen);
void share_layers_free(struct share_layers *L);

#endif
