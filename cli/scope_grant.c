/* cli/scope_grant.c: what the session's scope grants besides network rules (broker/rules.h),
 * applied before anything starts. Its work share: --work may repeat it or narrow it to
 * read-only, never name another directory or widen it. Its expiry: the session may not
 * start after it and is stopped when it comes (exit 124, saying so). */
#include "cli/run.h"
#include "cli/share_fs.h"

#include "broker/rules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int apply_work(struct run_opts *o, const struct rules *scope, char *err, size_t errlen)
{
	struct share_fs granted, asked;
	char why[512];
	size_t n;

	snprintf(o->scope_work, sizeof(o->scope_work), "%s%s", scope->work,
		 scope->work_read_only ? ":ro" : "");
	if (share_fs_parse(o->scope_work, &granted, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "--scope %s: work: %s", o->broker.scope, why);
		return -1;
	}
	if (!o->work) {
		o->work = o->scope_work;
		return 0;
	}
	if (share_fs_parse(o->work, &asked, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	n = strlen(o->work);
	if (strcmp(asked.dir, granted.dir)) {
		snprintf(err, errlen,
			 "--work %.200s: the scope grants %.200s, and no other directory",
			 asked.dir, granted.dir);
		return -1;
	}
	if (granted.ro && n > 3 && !strcmp(o->work + n - 3, ":rw")) {
		snprintf(err, errlen, "--work %.200s: the scope grants it read-only", o->work);
		return -1;
	}
	/* The same directory: read-only if either says so. */
	snprintf(o->scope_work, sizeof(o->scope_work), "%s%s", granted.dir,
		 granted.ro || asked.ro ? ":ro" : "");
	o->work = o->scope_work;
	return 0;
}

int scope_grant_apply(struct run_opts *o, struct rules *scope, char *err, size_t errlen)
{
	char why[512];

	memset(scope, 0, sizeof(*scope));
	if (!o->broker.scope)
		return 0;
	if (rules_load_file(scope, o->broker.scope, why, sizeof(why))) {
		snprintf(err, errlen, "--scope %s", why); /* why names the file */
		return -1;
	}
	if (scope->work && apply_work(o, scope, err, errlen) < 0)
		return -1;
	if (scope->expires_at) {
		time_t t = (time_t)scope->expires_at;

		strftime(o->scope_expiry, sizeof(o->scope_expiry), "%Y-%m-%dT%H:%M:%SZ",
			 gmtime(&t));
		o->scope_expires_at = scope->expires_at;
		if (scope->expires_at <= (long long)time(NULL)) {
			snprintf(err, errlen, "--scope %s: expired at %s", o->broker.scope,
				 o->scope_expiry);
			return -1;
		}
	}
	return 0;
}

int scope_grant_lifetime(struct run_opts *o, char *err, size_t errlen)
{
	double left = difftime((time_t)o->scope_expires_at, time(NULL));

	if (!o->scope_expires_at)
		return 0;
	if (left <= 0) {
		snprintf(err, errlen, "--scope %s: expired at %s", o->broker.scope,
			 o->scope_expiry);
		return -1;
	}
	if (o->timeout_s == 0 || o->timeout_s > left) {
		o->timeout_s = left;
		o->timeout_is_expiry = true;
	}
	return 0;
}
