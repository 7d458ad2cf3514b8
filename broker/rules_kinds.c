/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules_kinds.c: what a rule says for a typed vault entry (cred.h): the narrower scope of
 * an OAuth 2 token ("oauth_scope"), the narrowing of a GitHub App's installation token
 * ("github"), and what an AWS key signs for ("inject": {"aws_sigv4"} with "s3"). */
#include "broker/rules.h"
#include "broker/rules_internal.h"

#include "lib/errbuf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* A name GitHub allows for a repository or a permission: 1..100 of A-Z a-z 0-9 . _ -. */
static bool github_name_ok(const char *n)
{
	size_t l = strlen(n);

	return l && l <= 100 &&
	       strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") == l;
}

/* "github": {"repositories": [NAME...], "permissions": {NAME: "read"|"write"|"admin"}}: what a
 * github-app entry's installation token is narrowed to, kept as the request body that asks it
 * (sorted, compact: also the token's key). */
static int parse_github(json_t *o, struct rules_secret *s, const char *where, char *err,
			size_t errlen)
{
	static const char *const keys[] = { "repositories", "permissions", NULL };
	json_t *repos = json_object_get(o, "repositories"),
	       *perms = json_object_get(o, "permissions");
	json_t *v;
	const char *k;
	size_t i;

	if (!json_is_object(o) || rules_check_keys(o, keys, where, err, errlen))
		return json_is_object(o) ? -1
					 : errbuf_fail(err, errlen, -1,
						       "%s: \"github\" must be an object", where);
	if (repos &&
	    (!json_is_array(repos) || !json_array_size(repos) || json_array_size(repos) > 500))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"github\".\"repositories\" must be 1..500 names", where);
	json_array_foreach(repos, i, v)
	{
		if (!json_is_string(v) || !github_name_ok(json_string_value(v)))
			return errbuf_fail(err, errlen, -1,
					   "%s: \"github\".\"repositories\" holds a name GitHub "
					   "would not take",
					   where);
	}
	if (perms && !json_is_object(perms))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"github\".\"permissions\" must be an object", where);
	json_object_foreach(perms, k, v)
	{
		const char *lv = json_string_value(v);

		if (!github_name_ok(k) || !lv ||
		    (strcmp(lv, "read") && strcmp(lv, "write") && strcmp(lv, "admin")))
			return errbuf_fail(err, errlen, -1,
					   "%s: \"github\".\"permissions\" maps names to \"read\", "
					   "\"write\" or \"admin\"",
					   where);
	}
	s->narrow = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	return s->narrow ? 0 : errbuf_fail(err, errlen, -1, "out of memory");
}

/* An AWS service or region name as the SDKs write it: 1..64 of a-z 0-9 -. */
static bool aws_name_ok(const char *n)
{
	size_t l = strlen(n);

	return l && l <= 64 && strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789-") == l;
}

int rules_parse_aws(json_t *o, struct rules_secret *s, const char *where, char *err, size_t errlen)
{
	static const char *const keys[] = { "service", "region", "session_policy", NULL };
	const char *sv = json_string_value(json_object_get(o, "service")),
		   *rg = json_string_value(json_object_get(o, "region"));
	json_t *pol = json_object_get(o, "session_policy");

	if (!json_is_object(o))
		return errbuf_fail(err, errlen, -1, "%s: \"aws_sigv4\" must be an object", where);
	if (rules_check_keys(o, keys, where, err, errlen))
		return -1;
	if (!sv || !rg || !aws_name_ok(sv) || !aws_name_ok(rg))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"aws_sigv4\" needs \"service\" and \"region\" "
				   "(1..64 of a-z 0-9 -)",
				   where);
	/* A session policy (an IAM policy document) narrows a role's credentials to this rule;
	 * STS takes at most 2048 characters of it. */
	if (pol && (!json_is_object(pol) ||
		    !(s->narrow = json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS)) ||
		    strlen(s->narrow) > 2048))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"session_policy\" must be an IAM policy (a JSON object) "
				   "of at most 2048 characters",
				   where);
	s->aws_service = strdup(sv);
	s->aws_region = strdup(rg);
	return s->aws_service && s->aws_region ? 0 : errbuf_fail(err, errlen, -1, "out of memory");
}

/* "s3": ["BUCKET/KEY-PREFIX", ...]: the buckets and key prefixes an s3 key signs for. A bucket
 * is 3..63 of a-z 0-9 . - (S3's rule); the prefix (may be empty: the whole bucket) is printable
 * ASCII. */
static int parse_s3(json_t *a, struct rules_secret *s, const char *where, char *err, size_t errlen)
{
	json_t *v;
	size_t i;

	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > 64)
		return errbuf_fail(err, errlen, -1,
				   "%s: \"s3\" must list 1..64 \"BUCKET/KEY-PREFIX\"", where);
	if (!(s->s3 = calloc(json_array_size(a), sizeof(*s->s3))))
		return errbuf_fail(err, errlen, -1, "out of memory");
	json_array_foreach(a, i, v)
	{
		const char *e = json_string_value(v), *slash = e ? strchr(e, '/') : NULL;
		size_t bl = slash ? (size_t)(slash - e) : 0, k;

		if (!slash || bl < 3 || bl > 63 ||
		    strspn(e, "abcdefghijklmnopqrstuvwxyz0123456789.-") != bl ||
		    strlen(slash + 1) > 1024)
			return errbuf_fail(err, errlen, -1,
					   "%s: \"s3\" entries are \"BUCKET/KEY-PREFIX\" "
					   "(a bucket S3 would take, then a prefix, maybe empty)",
					   where);
		for (k = 0; slash[k]; k++)
			if ((unsigned char)slash[k] < 0x20 || slash[k] == 0x7f)
				return errbuf_fail(err, errlen, -1,
						   "%s: an \"s3\" prefix holds a control character",
						   where);
		if (!(s->s3[s->n_s3++] = strdup(e)))
			return errbuf_fail(err, errlen, -1, "out of memory");
	}
	return 0;
}

int rules_parse_kinds(json_t *o, struct rules_secret *s, const char *where, char *err,
		      size_t errlen)
{
	json_t *v;
	bool s3 = s->aws_service && !strcmp(s->aws_service, "s3");

	v = json_object_get(o, "oauth_scope");
	if (v) {
		/* RFC 6749 3.3: space-separated %x21 / %x23-5B / %x5D-7E tokens. */
		const char *sc = json_is_string(v) ? json_string_value(v) : "";
		size_t k, n_sc = strlen(sc);

		for (k = 0; k < n_sc; k++)
			if (sc[k] != ' ' &&
			    (sc[k] < 0x21 || sc[k] > 0x7e || sc[k] == '"' || sc[k] == '\\'))
				break;
		if (!n_sc || n_sc > 1024 || k < n_sc)
			return errbuf_fail(
				err, errlen, -1,
				"%s: \"oauth_scope\" must be 1..1024 characters of OAuth "
				"scope tokens separated by spaces",
				where);
		if (!(s->oauth_scope = strdup(sc)))
			return errbuf_fail(err, errlen, -1, "out of memory");
	}
	v = json_object_get(o, "github");
	if (v && parse_github(v, s, where, err, errlen))
		return -1;
	v = json_object_get(o, "s3");
	if (!v != !s3)
		return errbuf_fail(err, errlen, -1,
				   s3 ? "%s: a key that signs for s3 needs \"s3\": the buckets and "
					"key prefixes it may reach"
				      : "%s: \"s3\" goes with \"inject\": {\"aws_sigv4\": "
					"{\"service\": \"s3\"}}",
				   where);
	if (v && parse_s3(v, s, where, err, errlen))
		return -1;
	if ((s->kind == RULES_INJECT_AWS_SIGV4) && (s->oauth_scope || json_object_get(o, "github")))
		return errbuf_fail(err, errlen, -1,
				   "%s: an AWS key takes neither \"oauth_scope\" nor \"github\"",
				   where);
	return 0;
}
