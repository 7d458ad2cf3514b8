/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan_policy.c: the global policy (broker/policy.h) over a session's plan, before any VM
 * starts: its share, its limits, its scope and its lifetime. What the policy refuses is named
 * in one line; nothing has been started by then, so nothing is left behind. */
#include "session/plan.h"

#include "broker/policy.h"
#include "broker/rules.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The request against the policy's limits; 0 or -1 with err. */
static int check_limits(struct session_plan *p, const struct policy *pol, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	if (r->no_jail && pol->forbid_no_jail) {
		snprintf(err, errlen, "--no-jail: refused by the global policy (forbid_no_jail)");
		return -1;
	}
	if (pol->max_mem_mib && r->mem_mib > pol->max_mem_mib) {
		snprintf(err, errlen,
			 "--mem %u: the global policy allows at most %u (limits.max_mem_mib)",
			 r->mem_mib, pol->max_mem_mib);
		return -1;
	}
	if (pol->max_cpus && r->cpus > pol->max_cpus) {
		snprintf(err, errlen,
			 "--cpus %u: the global policy allows at most %u (limits.max_cpus)",
			 r->cpus, pol->max_cpus);
		return -1;
	}
	if (pol->max_session_seconds) {
		if (r->timeout_s > (double)pol->max_session_seconds) {
			snprintf(err, errlen,
				 "--timeout %g: the global policy allows at most %lu s "
				 "(limits.max_session_seconds)",
				 r->timeout_s, pol->max_session_seconds);
			return -1;
		}
		if (p->timeout_s == 0)
			p->timeout_s = (double)pol->max_session_seconds; /* the lifetime */
	}
	return 0;
}

/* The share against deny_share_paths, "~/" read as the caller's home and again as the home
 * of the share's owner: root sharing a user's directory must not share that user's ~/.ssh. */
const char *plan_share_denied(const struct policy *pol, const struct share_fs *fs)
{
	const char *hit = policy_share_denied(pol, fs->dir, getenv("HOME"));
	char buf[4096];
	struct passwd pw, *owner = NULL;

	if (!hit && !getpwuid_r(fs->owner, &pw, buf, sizeof(buf), &owner) && owner &&
	    owner->pw_dir && *owner->pw_dir)
		hit = policy_share_denied(pol, fs->dir, owner->pw_dir);
	return hit;
}

int plan_policy(struct session_plan *p, const struct rules *scope, char *err, size_t errlen)
{
	struct session_request *r = &p->req;
	struct policy pol;
	char why[512];
	const char *hit;
	int rc = -1;

	if (!r->policy && access(POLICY_DEFAULT_PATH, F_OK) == 0)
		r->policy = POLICY_DEFAULT_PATH;
	r->broker.policy = r->policy;
	if (r->no_jail)
		fprintf(stderr, "bulkhead: warning: --no-jail: the device back ends run without "
				"their jail; use it only to debug\n");
	if (!r->policy)
		return 0;
	if (policy_load_file(&pol, r->policy, why, sizeof(why))) {
		snprintf(err, errlen, "global policy %s", why);
		return -1;
	}
	if (p->share_origin != SHARE_NONE && (hit = plan_share_denied(&pol, &p->share))) {
		snprintf(err, errlen,
			 "%s %s: refused by the global policy (deny_share_paths: \"%s\")",
			 p->share_origin == SHARE_GRANTED ? "the scope's work" : "--work",
			 p->share.dir, hit);
		goto out;
	}
	if (check_limits(p, &pol, err, errlen) < 0 ||
	    share_layers_policy(&p->share_layers, &pol, err, errlen) < 0)
		goto out;
	if (r->broker.scope && policy_check_scope(&pol, scope, why, sizeof(why))) {
		snprintf(err, errlen, "--scope %s: %s", r->broker.scope, why);
		goto out;
	}
	rc = 0;
out:
	policy_free(&pol);
	return rc;
}
