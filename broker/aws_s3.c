/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_s3.c: an S3 request's bucket and key against a rule's "s3" list (aws_s3.h). */
#include "broker/aws_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MAX 1024 /* S3's longest key, in bytes */

static int hexval(int ch)
{
	return ch >= '0' && ch <= '9'	? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
					: -1;
}

/* N bytes of S, %XX decoded, into OUT (KEY_MAX + 1). -1: too long, a NUL, or a bad escape. */
static int decode(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];

		if (ch == '%') {
			int a = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1,
			    b = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;

			if (a < 0 || b < 0)
				return -1;
			ch = a * 16 + b;
			i += 2;
		}
		if (!ch || o == KEY_MAX)
			return -1;
		out[o++] = (char)ch;
	}
	out[o] = 0;
	return 0;
}

/* Whether KEY (decoded) lies under a prefix the list gives BUCKET (BL bytes). 1 yes, 0 no;
 * *LISTED: the bucket is in the list at all. */
static int under(const struct rules_secret *s, const char *bucket, size_t bl, const char *key,
		 int *listed)
{
	*listed = 0;
	for (size_t i = 0; i < s->n_s3; i++) {
		const char *e = s->s3[i], *slash = strchr(e, '/');

		if ((size_t)(slash - e) != bl || strncmp(e, bucket, bl))
			continue;
		*listed = 1;
		if (!strncmp(key, slash + 1, strlen(slash + 1)))
			return 1;
	}
	return 0;
}

/* The query's parameter names, each in ALLOWED (names ending in '*' are prefixes). 1: all are;
 * 0 with the first that is not in BAD. */
static int params_in(const char *q, size_t n, const char *const *allowed, char bad[64])
{
	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i), *eq;
		size_t pl = amp ? (size_t)(amp - (q + i)) : n - i, kl, k;
		int ok = 0;

		eq = memchr(q + i, '=', pl);
		kl = eq ? (size_t)(eq - (q + i)) : pl;
		for (k = 0; pl && allowed[k] && !ok; k++) {
			size_t al = strlen(allowed[k]);

			ok = allowed[k][al - 1] == '*'
				     ? kl >= al - 1 && !strncmp(q + i, allowed[k], al - 1)
				     : kl == al && !strncmp(q + i, allowed[k], al);
		}
		if (pl && !ok) {
			snprintf(bad, 64, "%.*s", (int)(kl > 60 ? 60 : kl), q + i);
			return 0;
		}
		i += pl + 1;
	}
	return 1;
}

/* Whether some parameter of the query is given twice (a server may read either). */
static int param_twice(const char *q, size_t n, char bad[64])
{
	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i), *eq;
		size_t pl = amp ? (size_t)(amp - (q + i)) : n - i, kl;

		eq = memchr(q + i, '=', pl);
		kl = eq ? (size_t)(eq - (q + i)) : pl;
		for (size_t j = i + pl + 1; pl && j < n;) {
			const char *a2 = memchr(q + j, '&', n - j), *e2;
			size_t p2 = a2 ? (size_t)(a2 - (q + j)) : n - j;

			e2 = memchr(q + j, '=', p2);
			if ((e2 ? (size_t)(e2 - (q + j)) : p2) == kl && !memcmp(q + i, q + j, kl)) {
				snprintf(bad, 64, "%.*s", (int)(kl > 60 ? 60 : kl), q + i);
				return 1;
			}
			j += p2 + 1;
		}
		i += pl + 1;
	}
	return 0;
}

/* The decoded value of parameter NAME in the query, into OUT; 0 found, -1 absent or bad. */
static int param(const char *q, size_t n, const char *name, char *out)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i);
		size_t pl = amp ? (size_t)(amp - (q + i)) : n - i;

		if (pl > nl && !strncmp(q + i, name, nl) && q[i + nl] == '=')
			return decode(q + i + nl + 1, pl - nl - 1, out);
		if (pl == nl && !strncmp(q + i, name, nl)) {
			out[0] = 0;
			return 0;
		}
		i += pl + 1;
	}
	return -1;
}

/* The last ".s3." or ".s3-" in HOST, or NULL. */
static const char *last_s3(const char *host)
{
	const char *at = NULL;

	for (const char *p = host; (p = strstr(p, ".s3")); p++)
		if (p[3] == '.' || p[3] == '-')
			at = p;
	return at;
}

/* The bucket a virtual-hosted name names: what comes before its last ".s3." or ".s3-" (a
 * bucket's own name may hold ".s3."), or before the first '.' when that is a listed bucket.
 * NULL: the name is not one (path-style). */
static const char *host_bucket(const struct rules_secret *s, const char *host, size_t *bl)
{
	const char *at = last_s3(host);

	if (at && at > host) {
		*bl = (size_t)(at - host);
		return host;
	}
	for (size_t i = 0; i < s->n_s3; i++) {
		size_t l = (size_t)(strchr(s->s3[i], '/') - s->s3[i]);

		if (!strncasecmp(host, s->s3[i], l) && host[l] == '.') {
			*bl = l;
			return host;
		}
	}
	return NULL;
}

static int refuse(char *why, size_t whylen, const struct rules_secret *s, const char *what,
		  const char *bucket, size_t bl, const char *key)
{
	snprintf(why, whylen,
		 "secret %s reaches only its \"s3\" buckets and prefixes: %s %.*s%s%.200s", s->name,
		 what, (int)(bl > 63 ? 63 : bl), bucket, *key ? "/" : "", key);
	return -1;
}

int aws_s3_allowed(const struct rules_secret *s, const char *method, const char *host,
		   const char *path, const char *query, size_t qlen, const char *copy,
		   size_t copylen, char *why, size_t whylen)
{
	static const char *const object_params[] = { "uploads",	  "uploadId",	"partNumber",
						     "versionId", "tagging",	"attributes",
						     "x-id",	  "response-*", NULL };
	static const char *const list_params[] = {
		"list-type",   "prefix", "delimiter",	  "max-keys",	 "continuation-token",
		"start-after", "marker", "encoding-type", "fetch-owner", NULL
	};
	char key[KEY_MAX + 1], bad[64];
	const char *bucket, *k;
	size_t bl;
	int listed;

	if (param_twice(query, qlen, bad)) {
		snprintf(why, whylen, "secret %s: the parameter \"%s\" is given twice", s->name, bad);
		return -1;
	}
	bucket = host_bucket(s, host, &bl);
	k = path + 1;
	if (!bucket) { /* path-style: /BUCKET/KEY */
		const char *slash = strchr(path + 1, '/');

		bucket = path + 1;
		bl = slash ? (size_t)(slash - bucket) : strlen(bucket);
		k = slash ? slash + 1 : bucket + bl;
	}
	if (decode(k, strlen(k), key))
		return refuse(why, whylen, s, "a key that does not decode:", bucket, bl, "");
	if (*key) {
		if (!under(s, bucket, bl, key, &listed))
			return refuse(why, whylen, s, "the request is for", bucket, bl, key);
		if (!params_in(query, qlen, object_params, bad)) {
			snprintf(why, whylen,
				 "secret %s: the S3 sub-resource \"%s\" is not allowed on objects",
				 s->name, bad);
			return -1;
		}
	} else if (!strcmp(method, "HEAD") && !qlen) {
		under(s, bucket, bl, "", &listed);
		if (!listed)
			return refuse(why, whylen, s, "the request is for bucket", bucket, bl, "");
	} else if (!strcmp(method, "GET") && params_in(query, qlen, list_params, bad)) {
		if (param(query, qlen, "prefix", key))
			key[0] = 0;
		if (!under(s, bucket, bl, key, &listed))
			return refuse(why, whylen, s, "the listing is of", bucket, bl, key);
	} else {
		snprintf(
			why, whylen,
			"secret %s: %s on the bucket itself is refused (only HEAD, and GET listing "
			"within an \"s3\" prefix)",
			s->name, method);
		return -1;
	}
	if (copy) { /* CopyObject, UploadPartCopy: [/]BUCKET/KEY[?versionId=...] */
		const char *c = copy, *end = copy + copylen, *slash, *qm;

		if (c < end && *c == '/')
			c++;
		qm = memchr(c, '?', (size_t)(end - c));
		if (qm)
			end = qm;
		slash = memchr(c, '/', (size_t)(end - c));
		if (!slash || decode(slash + 1, (size_t)(end - slash - 1), key) || !*key ||
		    !under(s, c, (size_t)(slash - c), key, &listed))
			return refuse(why, whylen, s, "the copy source is", c,
				      slash ? (size_t)(slash - c) : 0, slash ? "(outside)" : "");
	}
	return 0;
}
