/* cli/policy_gate.c: the global policy, applied before any VM starts — the share, the limits
 * and the scope (see broker/policy.h). What the policy refuses is named in one line; nothing
 * has been started by then, so nothing is left behind. */
#include "cli/run.h"
#include "cli/share_fs.h"

#include "broker/policy.h"
#include "broker/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int policy_gate(struct run_opts *o, const struct share_fs *fs, const struct rules *scope, char *err,
		size_t errlen)
{
	struct policy p;
	char why[512];
	const char *hit;
	int rc = -1;

	if (!o->policy && access(POLICY_DEFAULT_PATH, F_OK) == 0)
		o->policy = POLICY_DEFAULT_PATH;
	if (o->no_jail)
		fprintf(stderr, "bulkhead: warning: --no-jail: the device back ends run without "
				"their jail; use it only to debug\n");
	if (!o->policy)
		return 0;
	if (policy_load_file(&p, o->policy, why, sizeof(why))) {
		snprintf(err, errlen, "global policy %s", why);
		return -1;
	}
	if (o->work && (hit = policy_share_denied(&p, fs->dir, getenv("HOME")))) {
		snprintf(err, errlen,
			 "%s %s: refused by the global policy (deny_share_paths: \"%s\")",
			 o->work == o->scope_work ? "the scope's work" : "--work", fs->dir, hit);
		goto out;
	}
	if (o->no_jail && p.forbid_no_jail) {
		snprintf(err, errlen, "--no-jail: refused by the global policy (forbid_no_jail)");
		goto out;
	}
	if (p.max_mem_mib && o->mem_mib > p.max_mem_mib) {
		snprintf(err, errlen,
			 "--mem %u: the global policy allows at most %u (limits.max_mem_mib)",
			 o->mem_mib, p.max_mem_mib);
		goto out;
	}
	if (p.max_cpus && o->cpus > p.max_cpus) {
		snprintf(err, errlen,
			 "--cpus %u: the global policy allows at most %u (limits.max_cpus)",
			 o->cpus, p.max_cpus);
		goto out;
	}
	if (p.max_session_seconds) {
		if (o->timeout_s > (double)p.max_session_seconds) {
			snprintf(err, errlen,
				 "--timeout %g: the global policy allows at most %lu s "
				 "(limits.max_session_seconds)",
				 o->timeout_s, p.max_session_seconds);
			goto out;
		}
		if (o->timeout_s == 0)
			o->timeout_s = (double)p.max_session_seconds; /* the session's lifetime */
	}
	if (o->broker.scope && policy_check_scope(&p, scope, why, sizeof(why))) {
		snprintf(err, errlen, "--scope %s: %s", o->broker.scope, why);
		goto out;
	}
	rc = 0;
out:
	policy_free(&p);
	return rc;
}
