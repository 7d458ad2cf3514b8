/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules_grant.c: what a scope grants besides network rules — the session's work share
 * and when the grant expires (see rules.h). The broker has no use for them (the launcher
 * applies them before anything starts), but every reader of a scope parses them the same
 * strict way, so `bulkhead policy check` and the broker refuse what the launcher would. */
#include "broker/rules.h"
#include "broker/rules_internal.h"
#include "lib/relpath.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

static int grant_fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -1;
}

/* "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339, UTC, no fraction) to Unix seconds; -1 if malformed. */
static long long parse_utc(const char *s)
{
	struct tm tm = { 0 };
	char tail = 0;
	int n = 0;

	if (strlen(s) != 20 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &tail, &n) != 7 ||
	    n != 20 || tail != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return -1;
	for (int i = 0; i < 19; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && (s[i] < '0' || s[i] > '9'))
			return -1;
	struct tm want = tm;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	/* timegm normalises 31 February into March: a date that moved was not a date. */
	if (t == (time_t)-1 || tm.tm_year + 1900 != want.tm_year || tm.tm_mon + 1 != want.tm_mon ||
	    tm.tm_mday != want.tm_mday || tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min ||
	    tm.tm_sec != want.tm_sec)
		return -1;
	return (long long)t;
}

static const char *const mode_names[] = { "rw", "ro", "hidden", NULL };

/* S (N bytes), a relative path of the share (lib/relpath.h) at WHERE, copied into *OUT. */
static int share_path(const char *s, size_t n, const char *where, char **out, char *err,
		      size_t errlen)
{
	const char *why = "not a string";

	if (!s || relpath_check(s, n, &why) < 0) {
		snprintf(err, errlen, "%s: %s", where, why);
		return -1;
	}
	if (!(*out = strndup(s, n)))
		return grant_fail(err, errlen, "out of memory");
	return 0;
}

/* "work"'s rules inside the share: "paths", "share_secrets", "share_secrets_allow". */
static int parse_inside(json_t *w, struct rules *r, char *err, size_t errlen)
{
	json_t *paths = json_object_get(w, "paths"), *sec = json_object_get(w, "share_secrets");
	json_t *allow = json_object_get(w, "share_secrets_allow"), *v;
	const char *key;
	char where[160];
	size_t i;

	if (paths && (!json_is_object(paths) || json_object_size(paths) > 64))
		return grant_fail(err, errlen,
				  "work: \"paths\" must be an object of at most 64 "
				  "\"PATH\": \"rw\" | \"ro\" | \"hidden\"");
	if (paths && !(r->work_paths = calloc(json_object_size(paths), sizeof(*r->work_paths))))
		return grant_fail(err, errlen, "out of memory");
	json_object_foreach(paths, key, v) {
		struct rules_work_path *p = &r->work_paths[r->n_work_paths];
		int m = 0;

		snprintf(where, sizeof(where), "work: paths: \"%.100s\"", key);
		while (mode_names[m] && (!json_is_string(v) || strcmp(json_string_value(v), mode_names[m])))
			m++;
		if (!mode_names[m]) {
			snprintf(err, errlen, "%s: the mode is \"rw\", \"ro\" or \"hidden\"", where);
			return -1;
		}
		if (share_path(key, strlen(key), where, &p->path, err, errlen) < 0)
			return -1;
		p->mode = m;
		r->n_work_paths++;
	}
	if (sec) {
		if (!json_is_string(sec) || (strcmp(json_string_value(sec), "refuse") &&
					     strcmp(json_string_value(sec), "hide")))
			return grant_fail(err, errlen,
					  "work: \"share_secrets\" is \"refuse\" or \"hide\"");
		r->work_secrets = strcmp(json_string_value(sec), "refuse") ? 2 : 1;
	}
	if (allow && (!json_is_array(allow) || json_array_size(allow) > 64))
		return grant_fail(err, errlen,
				  "work: \"share_secrets_allow\" must be an array of at most 64 "
				  "paths");
	if (allow && !(r->work_allow = calloc(json_array_size(allow), sizeof(char *))))
		return grant_fail(err, errlen, "out of memory");
	json_array_foreach(allow, i, v) {
		snprintf(where, sizeof(where), "work: share_secrets_allow[%zu]", i);
		if (share_path(json_is_string(v) ? json_string_value(v) : NULL,
			       json_is_string(v) ? json_string_length(v) : 0, where, &r->work_allow[i],
			       err, errlen) < 0)
			return -1;
		r->n_work_allow++;
	}
	return 0;
}

int rules_parse_grant(struct json_t *root, struct rules *r, char *err, size_t errlen)
{
	json_t *w = json_object_get(root, "work"), *e = json_object_get(root, "expires_at");

	if (w) {
		static const char *const keys[] = { "path",	     "read_only",
						    "paths",	     "share_secrets",
						    "share_secrets_allow", NULL };
		json_t *path = json_object_get(w, "path"), *ro = json_object_get(w, "read_only");

		if (!json_is_object(w))
			return grant_fail(err, errlen, "work: must be an object");
		if (rules_check_keys(w, keys, "work", err, errlen) || parse_inside(w, r, err, errlen))
			return -1;
		/* Rules alone apply to whatever --work shares. */
		if (!path && !ro)
			goto expiry;
		if (!json_is_string(path) || json_string_value(path)[0] != '/' ||
		    strlen(json_string_value(path)) != json_string_length(path) ||
		    json_string_length(path) >= PATH_MAX || strchr(json_string_value(path), ':'))
			return grant_fail(err, errlen,
					  "work: \"path\" must be an absolute path without ':'");
		if (ro && !json_is_boolean(ro))
			return grant_fail(err, errlen, "work: \"read_only\" must be true or false");
		r->work = strdup(json_string_value(path));
		if (!r->work)
			return grant_fail(err, errlen, "out of memory");
		r->work_read_only = ro && json_is_true(ro);
	}
expiry:
	if (e) {
		long long t = json_is_string(e) ? parse_utc(json_string_value(e)) : -1;

		if (t < 0)
			return grant_fail(
				err, errlen,
				"expires_at: want a UTC time like \"2026-12-01T18:00:00Z\"");
		r->expires_at = t;
	}
	return 0;
}
