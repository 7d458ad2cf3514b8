/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules.c: loads injection rules from JSON (strict: unknown keys are errors, so a typo
 * never silently widens or narrows policy); rules_match.c matches requests with them. */
#include "broker/rules.h"
#include "broker/rules_internal.h"

#include "broker/hostname.h"
#include "broker/reqpath.h"
#include "lib/errbuf.h"
#include "lib/io.h"
#include "lib/json_strict.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

_Static_assert(HOSTNAME_MAX == RULES_HOST_MAX, "a rule's host holds any canonical host name");

int rules_default_port(enum rules_scheme s)
{
	return s == RULES_HTTPS ? 443 : 80;
}

int rules_check_keys(json_t *o, const char *const *allowed, const char *where, char *err,
		     size_t errlen)
{
	const char *k = json_strict_unknown(o, allowed);

	return k ? errbuf_fail(err, errlen, -1, "%s: unknown key \"%s\"", where, k) : 0;
}

static int token_char(int c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c);
}

static char *dup_str(json_t *o, const char *key, int *bad)
{
	json_t *v = json_object_get(o, key);
	char *s;

	if (!v)
		return NULL;
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		*bad = 1;
		return NULL;
	}
	s = strdup(json_string_value(v));
	if (!s)
		*bad = 1;
	return s;
}

int rules_parse_dest(json_t *o, struct rules_dest *d, const char *where, char *err, size_t errlen)
{
	static const char *const keys[] = { "scheme", "host",	     "port",
					    "method", "path_prefix", "allow_addresses",
					    NULL };
	json_t *v, *a;
	const char *why;
	size_t i;
	int bad = 0;

	memset(d, 0, sizeof(*d));
	if (!json_is_object(o))
		return errbuf_fail(err, errlen, -1, "%s: a destination must be an object", where);
	if (rules_check_keys(o, keys, where, err, errlen))
		return -1;
	v = json_object_get(o, "scheme");
	if (!json_is_string(v) ||
	    (strcmp(json_string_value(v), "https") && strcmp(json_string_value(v), "http")))
		return errbuf_fail(err, errlen, -1, "%s: \"scheme\" must be \"https\" or \"http\"",
				   where);
	d->scheme = strcmp(json_string_value(v), "https") ? RULES_HTTP : RULES_HTTPS;
	v = json_object_get(o, "host");
	if (!json_is_string(v))
		return errbuf_fail(err, errlen, -1, "%s: \"host\" must be a host name or address",
				   where);
	/* Stored canonical: every comparison (policy, requests, CONNECT, SNI) is exact. */
	if (hostname_canon(json_string_value(v), json_string_length(v), d->host, &why))
		return errbuf_fail(err, errlen, -1, "%s: \"host\" \"%.64s\": %s", where,
				   json_string_value(v), why);
	v = json_object_get(o, "port");
	if (!v)
		d->port = (uint16_t)rules_default_port(d->scheme);
	else if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 65536)
		d->port = (uint16_t)json_integer_value(v);
	else
		return errbuf_fail(err, errlen, -1, "%s: \"port\" must be 1..65535", where);
	d->method = dup_str(o, "method", &bad);
	d->path_prefix = dup_str(o, "path_prefix", &bad);
	if (bad || (d->path_prefix && d->path_prefix[0] != '/'))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"method\"/\"path_prefix\" must be non-empty strings, "
				   "the prefix starting with '/'",
				   where);
	/* Requests are matched in their canonical spelling (reqpath.h); so is the prefix. */
	if (d->path_prefix &&
	    reqpath_canon_path(d->path_prefix, strlen(d->path_prefix), d->path_prefix, &why))
		return errbuf_fail(err, errlen, -1, "%s: \"path_prefix\": %s", where, why);
	a = json_object_get(o, "allow_addresses");
	if (a && (!json_is_array(a) || json_array_size(a) > RULES_ADDRS_MAX))
		return errbuf_fail(err, errlen, -1,
				   "%s: \"allow_addresses\" must be an array of at most %d", where,
				   RULES_ADDRS_MAX);
	json_array_foreach(a, i, v)
	{
		struct sockaddr_storage *ss = &d->addrs[d->n_addrs];
		const char *s = json_is_string(v) ? json_string_value(v) : "";

		memset(ss, 0, sizeof(*ss));
		if (inet_pton(AF_INET, s, &((struct sockaddr_in *)ss)->sin_addr) == 1)
			ss->ss_family = AF_INET;
		else if (inet_pton(AF_INET6, s, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
			ss->ss_family = AF_INET6;
		else
			return errbuf_fail(err, errlen, -1, "%s: \"%s\" is not an IP address",
					   where, s);
		d->n_addrs++;
	}
	return 0;
}

void rules_free_dest(struct rules_dest *d)
{
	free(d->method);
	free(d->path_prefix);
}

static int parse_dests(json_t *a, struct rules_dest **out, size_t *n, const char *where, char *err,
		       size_t errlen)
{
	json_t *v;
	size_t i;

	if (!json_is_array(a))
		return errbuf_fail(err, errlen, -1, "%s: destinations must be an array", where);
	*out = calloc(json_array_size(a) + 1, sizeof(**out));
	if (!*out)
		return errbuf_fail(err, errlen, -1, "out of memory");
	json_array_foreach(a, i, v)
	{
		char w[128];

		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if (rules_parse_dest(v, &(*out)[i], w, err, errlen)) {
			rules_free_dest(&(*out)[i]);
			return -1;
		}
		*n = i + 1;
	}
	return 0;
}

static int parse_inject(json_t *o, struct rules_secret *s, const char *where, char *err,
			size_t errlen)
{
	static const char *const keys[] = {
		"header", "value", "basic", "query", "aws_sigv4", NULL
	};
	int bad = 0;
	const char *p;

	if (!json_is_object(o))
		return errbuf_fail(err, errlen, -1, "%s: \"inject\" must be an object", where);
	if (rules_check_keys(o, keys, where, err, errlen))
		return -1;
	if (json_object_get(o, "header")) {
		s->kind = RULES_INJECT_HEADER;
		s->field = dup_str(o, "header", &bad);
		s->template = dup_str(o, "value", &bad);
		if (bad || !s->template || json_object_size(o) != 2)
			return errbuf_fail(err, errlen, -1,
					   "%s: header injection needs \"header\" and \"value\"",
					   where);
		for (p = s->field; *p; p++)
			if (!token_char((unsigned char)*p))
				return errbuf_fail(err, errlen, -1, "%s: bad header name", where);
		p = strstr(s->template, "{}");
		if (!p || strstr(p + 2, "{}") || strpbrk(s->template, "\r\n"))
			return errbuf_fail(err, errlen, -1,
					   "%s: \"value\" must hold exactly one {} and no "
					   "line break",
					   where);
	} else if (json_object_get(o, "basic")) {
		s->kind = RULES_INJECT_BASIC;
		s->field = strdup("Authorization");
		s->template = dup_str(o, "basic", &bad);
		if (bad || !s->field || json_object_size(o) != 1 || strchr(s->template, ':') ||
		    strpbrk(s->template, "\r\n"))
			return errbuf_fail(err, errlen, -1,
					   "%s: \"basic\" must be a user name without ':'", where);
	} else if (json_object_get(o, "query")) {
		s->kind = RULES_INJECT_QUERY;
		s->field = dup_str(o, "query", &bad);
		if (bad || json_object_size(o) != 1 || strpbrk(s->field, "&=#?% \r\n"))
			return errbuf_fail(err, errlen, -1,
					   "%s: \"query\" must be a parameter name", where);
	} else if (json_object_get(o, "aws_sigv4")) {
		s->kind = RULES_INJECT_AWS_SIGV4;
		s->field = strdup("Authorization");
		if (!s->field || json_object_size(o) != 1)
			return errbuf_fail(err, errlen, -1,
					   "%s: \"aws_sigv4\" goes alone in \"inject\"", where);
		return rules_parse_aws(json_object_get(o, "aws_sigv4"), s, where, err, errlen);
	} else {
		return errbuf_fail(err, errlen, -1,
				   "%s: \"inject\" needs \"header\", \"basic\", \"query\" or "
				   "\"aws_sigv4\"",
				   where);
	}
	return 0;
}

static int parse_secret(json_t *o, struct rules_secret *s, const char *where, char *err,
			size_t errlen)
{
	static const char *const keys[] = { "name",	   "inject", "destinations",
					    "oauth_scope", "github", "s3",
					    NULL };
	json_t *v;
	const char *n;
	size_t i;

	if (!json_is_object(o))
		return errbuf_fail(err, errlen, -1, "%s: a secret must be an object", where);
	if (rules_check_keys(o, keys, where, err, errlen))
		return -1;
	v = json_object_get(o, "name");
	n = json_is_string(v) ? json_string_value(v) : "";
	if (!*n || strlen(n) > RULES_NAME_MAX)
		return errbuf_fail(err, errlen, -1, "%s: \"name\" must be 1..%d characters", where,
				   RULES_NAME_MAX);
	for (i = 0; n[i]; i++)
		if (!isalnum((unsigned char)n[i]) && n[i] != '_')
			return errbuf_fail(err, errlen, -1,
					   "%s: \"name\" may hold only A-Z a-z 0-9 _", where);
	strcpy(s->name, n);
	if (parse_inject(json_object_get(o, "inject"), s, where, err, errlen))
		return -1;
	if (parse_dests(json_object_get(o, "destinations"), &s->dests, &s->n_dests, where, err,
			errlen))
		return -1;
	if (!s->n_dests)
		return errbuf_fail(err, errlen, -1, "%s: a secret needs at least one destination",
				   where);
	if (rules_parse_kinds(o, s, where, err, errlen))
		return -1;
	return 0;
}

int rules_load_json(struct rules *r, const char *json, char *err, size_t errlen)
{
	static const char *const keys[] = { "secrets", "allow", "work", "expires_at", NULL };
	json_error_t je;
	json_t *root, *a, *v;
	size_t i;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	root = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return errbuf_fail(err, errlen, -1, "line %d: %s", je.line, je.text);
	if (!json_is_object(root)) {
		errbuf_fail(err, errlen, -1, "the rules must be a JSON object");
		goto out;
	}
	if (rules_check_keys(root, keys, "rules", err, errlen))
		goto out;
	a = json_object_get(root, "secrets");
	if (a && !json_is_array(a)) {
		errbuf_fail(err, errlen, -1, "\"secrets\" must be an array");
		goto out;
	}
	r->secrets = calloc(json_array_size(a) + 1, sizeof(*r->secrets));
	if (!r->secrets) {
		errbuf_fail(err, errlen, -1, "out of memory");
		goto out;
	}
	json_array_foreach(a, i, v)
	{
		char w[64];
		size_t j;

		snprintf(w, sizeof(w), "secrets[%zu]", i);
		r->n_secrets = i + 1;
		if (parse_secret(v, &r->secrets[i], w, err, errlen))
			goto out;
		for (j = 0; j < i; j++)
			if (!strcmp(r->secrets[j].name, r->secrets[i].name)) {
				errbuf_fail(err, errlen, -1, "%s: secret \"%s\" named twice", w,
					    r->secrets[i].name);
				goto out;
			}
	}
	a = json_object_get(root, "allow");
	if (a && parse_dests(a, &r->allow, &r->n_allow, "allow", err, errlen))
		goto out;
	if (rules_parse_grant(root, r, err, errlen))
		goto out;
	rc = 0;
out:
	json_decref(root);
	if (rc)
		rules_free(r);
	return rc;
}

int rules_load_file(struct rules *r, const char *path, char *err, size_t errlen)
{
	char *buf = io_read_path(path, (1 << 20) - 1, NULL);
	int rc;

	if (!buf && errno == ERANGE)
		return errbuf_fail(err, errlen, -1, "%s: larger than 1 MiB", path);
	if (!buf)
		return errbuf_fail(err, errlen, -1, "cannot open %s: %s", path, strerror(errno));
	rc = rules_load_json(r, buf, err, errlen);
	if (rc) {
		char tmp[512];

		snprintf(tmp, sizeof(tmp), "%s: %s", path, err);
		snprintf(err, errlen, "%s", tmp);
	}
	free(buf);
	return rc;
}

int rules_digest(const char *scope_text, char hex[65])
{
	json_t *o = json_loads(scope_text, JSON_REJECT_DUPLICATES, NULL);
	char *canon = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	unsigned char md[32];
	unsigned int n = 0;
	int ok = canon && EVP_Digest(canon, strlen(canon), md, &n, EVP_sha256(), NULL) && n == 32;

	json_decref(o);
	free(canon);
	for (unsigned i = 0; ok && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return ok ? 0 : -1;
}

void rules_free(struct rules *r)
{
	size_t i, j;

	for (i = 0; i < r->n_secrets; i++) {
		for (j = 0; j < r->secrets[i].n_dests; j++)
			rules_free_dest(&r->secrets[i].dests[j]);
		free(r->secrets[i].dests);
		free(r->secrets[i].field);
		free(r->secrets[i].template);
		free(r->secrets[i].oauth_scope);
		free(r->secrets[i].narrow);
		free(r->secrets[i].aws_service);
		free(r->secrets[i].aws_region);
		for (j = 0; j < r->secrets[i].n_s3; j++)
			free(r->secrets[i].s3[j]);
		free(r->secrets[i].s3);
	}
	free(r->secrets);
	for (j = 0; j < r->n_allow; j++)
		rules_free_dest(&r->allow[j]);
	free(r->allow);
	free(r->work);
	for (j = 0; j < r->n_work_paths; j++)
		free(r->work_paths[j].path);
	free(r->work_paths);
	for (j = 0; j < r->n_work_allow; j++)
		free(r->work_allow[j]);
	free(r->work_allow);
	memset(r, 0, sizeof(*r));
}
