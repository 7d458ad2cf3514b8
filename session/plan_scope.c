/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan_scope.c: what the session's scope grants besides network rules (broker/rules.h):
 * its work share, which --work may repeat or narrow to read-only, never name another
 * directory or widen; and its expiry, after which the session may not start and at which it
 * is stopped (exit 124, saying so). */
#include "session/plan.h"

#include "broker/rules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n > t && strcmp(s + n - t, tail) == 0;
}

static int grant_work(struct session_plan *p, const struct rules *scope, char *err, size_t errlen)
{
	struct share_fs granted;
	char label[PATH_MAX + 32];
	snprintf(label, sizeof(label), "--scope %s: work:", p->req.broker.scope);
	if (share_fs_resolve(scope->work, scope->work_read_only, label, &granted, err, errlen) < 0)
		return -1;
	if (p->share_origin == SHARE_ASKED) {
		const struct share_fs *asked = &p->share;
		if (asked->dev != granted.dev || asked->ino != granted.ino) {
			snprintf(err, errlen,
				 "--work %.200s: the scope grants %.200s, and no other directory",
				 asked->dir, granted.dir);
			return -1;
		}
		if (granted.ro && ends_with(p->req.work, ":rw")) {
			snprintf(err, errlen, "--work %.200s: the scope grants it read-only",
				 p->req.work);
			return -1;
		}
		/* The same directory: read-only if either says so. */
		granted.ro = granted.ro || asked->ro;
	}
	p->share = granted;
	p->share_origin = SHARE_GRANTED;
	return 0;
}

int plan_scope(struct session_plan *p, const struct rules *scope, char *err, size_t errlen)
{
	if (scope->work && grant_work(p, scope, err, errlen) < 0)
		return -1;
	if (share_layers_scope(&p->share_layers, scope, err, errlen) < 0)
		return -1;
	if (scope->expires_at) {
		time_t t = (time_t)scope->expires_at;
		strftime(p->expiry, sizeof(p->expiry), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		if (scope->expires_at <= (long long)time(NULL)) {
			snprintf(err, errlen, "--scope %s: expired at %s", p->req.broker.scope,
				 p->expiry);
			return -1;
		}
		p->expires_at = scope->expires_at; /* plan.c weighs it against the lifetime */
	}
	return 0;
}
