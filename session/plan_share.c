/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan_share.c: the session's shares looked into before it starts (session/share_plan.h): the
 * work share's rules from the scope and the options, and in every share (the work share, an
 * OCI bundle's bind mounts) the credential files a scan finds, refused or hidden. What is
 * hidden, and a scan that stopped at a bound, are said on stderr in one line each. */
#include "session/plan.h"

#include <stdio.h>
#include <string.h>

static void say(const char *label, const struct share_scan *s, const struct share_outcome *o,
		const struct share_rules *rs)
{
	/* A read-only or hidden path that is not there: made empty, but if it was there before,
	 * something moved it, and what it held is now elsewhere in the share, as it is. */
	for (size_t i = 0; rs && i < rs->n; i++) {
		char shown[PATH_MAX * 4 + 8];

		if (!rs->r[i].missing || rs->r[i].mode == SHARE_MODE_RW)
			continue;
		share_scan_quote(rs->r[i].path, shown, sizeof(shown));
		fprintf(stderr,
			"bulkhead: warning: %s: rule %s:%s: the path is not there, so it is made "
			"empty; if it was moved, what it held is shared where it went\n",
			label, shown, share_mode_name(rs->r[i].mode));
	}
	if (o->hidden || o->cleaned)
		fprintf(stderr,
			"bulkhead: %s: %zu credential file%s hidden from the guest%s (%s; "
			"'bulkhead policy share' lists them)\n",
			label, o->hidden + o->cleaned, o->hidden + o->cleaned == 1 ? "" : "s",
			o->cleaned ? ", git configs shown without their credentials" : "",
			o->secrets_by);
	if (!s->complete)
		fprintf(stderr,
			"bulkhead: warning: %s: the scan for credential files stopped early: %s; "
			"what lies beyond was not checked\n",
			label, s->stopped);
}

int plan_share(struct session_plan *p, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	const struct share_asks asks = { r->work_rules, r->nwork_rules, r->share_secrets,
					 r->share_allow, r->nshare_allow };
	const struct share_asks none = { 0 };
	struct share_outcome o;
	char label[PATH_MAX + 32];

	if (r->share_secrets && strcmp(r->share_secrets, "refuse") && strcmp(r->share_secrets, "hide")) {
		snprintf(err, errlen, "--share-secrets %.40s: say refuse or hide", r->share_secrets);
		return -1;
	}
	if (p->share_origin == SHARE_NONE && (r->nwork_rules || r->nshare_allow)) {
		snprintf(err, errlen, "%s: there is no work share (--work DIR) to apply it to",
			 r->nwork_rules ? "--work-rule" : "--share-allow");
		return -1;
	}
	if (p->share_origin != SHARE_NONE) {
		snprintf(label, sizeof(label), "%s %s",
			 p->share_origin == SHARE_GRANTED ? "the scope's work" : "--work",
			 p->share.dir);
		if (share_plan(p->share.dir, label, true, &p->share_layers, &asks,
			       &p->share_rules, &p->share_scan, &o, err, errlen) < 0)
			return -1;
		p->share.rules = &p->share_rules;
		say(label, &p->share_scan, &o, &p->share_rules);
	}
	/* An OCI bundle's bind mounts: scanned as the work share is, with the session's word on
	 * what is found; the rules are the work share's alone. */
	for (size_t i = 0; i < r->nbinds && i < SESSION_BINDS_MAX; i++) {
		struct share_asks b = none;

		b.secrets = r->share_secrets;
		b.allow = r->share_allow;
		b.nallow = r->nshare_allow;
		snprintf(label, sizeof(label), "mount source %s", p->binds[i].dir);
		if (share_plan(p->binds[i].dir, label, false, &p->share_layers, &b,
			       &p->bind_rules[i], &p->bind_scan[i], &o, err, errlen) < 0)
			return -1;
		p->binds[i].rules = &p->bind_rules[i];
		say(label, &p->bind_scan[i], &o, NULL);
	}
	return 0;
}
