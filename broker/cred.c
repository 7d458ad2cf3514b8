/* SPDX-License-Identifier: Apache-2.0 */
/* broker/cred.c: typed vault entries' documents (cred.h), read with every field checked. */
#include "broker/cred.h"

#include "broker/rules_internal.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

static const char *const kind_names[] = {
	[VAULT_KIND_STATIC] = "static",
	[VAULT_KIND_OAUTH2_REFRESH] = "oauth2-refresh",
	[VAULT_KIND_OAUTH2_CLIENT] = "oauth2-client-credentials",
	[VAULT_KIND_GITHUB_APP] = "github-app",
	[VAULT_KIND_AWS_SIGV4] = "aws-sigv4",
};

const char *cred_kind_name(enum vault_kind k)
{
	return (unsigned)k <= VAULT_KIND_MAX ? kind_names[k] : "unknown";
}

int cred_kind_of(const char *name)
{
	for (int k = 0; k <= VAULT_KIND_MAX; k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

static void wipe_free(void *p)
{
	if (p)
		OPENSSL_cleanse(p, malloc_usable_size(p));
	free(p);
}

void cred_json_wipe_on_free(void)
{
	json_set_alloc_funcs(malloc, wipe_free);
}

/* A string field: printable ASCII (a token, an id, a URL), at most CRED_FIELD_MAX; NULL with
 * err set when it is not, or absent and REQUIRED. */
static int field(json_t *o, const char *key, bool required, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	size_t n;

	*out = NULL;
	if (!v)
		return required ? errbuf_fail(err, errlen, -1, "\"%s\" is missing", key) : 0;
	if (!json_is_string(v) || !(n = json_string_length(v)) || n > CRED_FIELD_MAX)
		return errbuf_fail(err, errlen, -1, "\"%s\" must be a string of 1 to %d characters",
				   key, CRED_FIELD_MAX);
	s = json_string_value(v);
	for (size_t i = 0; i < n && strcmp(key, "private_key"); i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			if (s[i] != ' ' || strcmp(key, "scope"))
				return errbuf_fail(err, errlen, -1,
						   "\"%s\" must be printable ASCII without blanks "
						   "(\"scope\" may hold spaces)",
						   key);
	if (!(*out = strdup(s)))
		return errbuf_fail(err, errlen, -1, "out of memory");
	return 0;
}

/* https://HOST[:PORT][/PATH][?QUERY] into D's endpoint and path: no user info, no fragment. */
static int token_url(struct cred_doc *d, const char *url, json_t *addrs, char *err, size_t errlen)
{
	const char *h = url + 8, *rest, *port_at = NULL;
	char host[RULES_HOST_MAX + 1];
	size_t hl, nl;
	long port = 443;
	json_t *o;
	int rc;

	if (strncmp(url, "https://", 8))
		return errbuf_fail(err, errlen, -1,
				   "\"token_url\" (or \"api_url\") must begin with https://");
	hl = strcspn(h, "/?#");
	rest = h + hl;
	if (memchr(h, '@', hl) || strchr(rest, '#'))
		return errbuf_fail(err, errlen, -1,
				   "\"token_url\" must be https://HOST[:PORT]/PATH, without user "
				   "or fragment");
	if (h[0] == '[') { /* [IPv6] */
		const char *close = memchr(h, ']', hl);

		if (!close || (close + 1 < rest && close[1] != ':'))
			return errbuf_fail(err, errlen, -1, "\"token_url\" has a bad [address]");
		nl = (size_t)(close - h - 1);
		memcpy(host, h + 1, nl < sizeof(host) ? nl : 0);
		port_at = close + 1 < rest ? close + 1 : NULL;
	} else {
		port_at = memchr(h, ':', hl);
		nl = (size_t)((port_at ? port_at : rest) - h);
		memcpy(host, h, nl < sizeof(host) ? nl : 0);
	}
	if (!nl || nl >= sizeof(host))
		return errbuf_fail(err, errlen, -1, "\"token_url\" has no host, or too long a one");
	host[nl] = 0;
	if (port_at) {
		char *end;

		port = strtol(port_at + 1, &end, 10);
		if (end != rest || port < 1 || port > 65535)
			return errbuf_fail(err, errlen, -1, "\"token_url\" has a bad port");
	}
	o = json_pack("{s:s, s:s, s:i}", "scheme", "https", "host", host, "port", (int)port);
	if (!o)
		return errbuf_fail(err, errlen, -1, "out of memory");
	if (addrs)
		json_object_set(o, "allow_addresses", addrs);
	rc = rules_parse_dest(o, &d->endpoint, "token_url", err, errlen);
	json_decref(o);
	if (rc)
		return -1;
	if (*rest == '/')
		d->path = strdup(rest);
	else if (asprintf(&d->path, "/%s", rest) < 0)
		d->path = NULL;
	return d->path ? 0 : errbuf_fail(err, errlen, -1, "out of memory");
}

/* An id GitHub gives: digits, as a JSON number or string. */
static int id_field(json_t *o, const char *key, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	char buf[24];
	const char *s = buf;

	if (json_is_integer(v) && json_integer_value(v) > 0)
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && json_string_length(v) && json_string_length(v) < 20 &&
		 strspn(json_string_value(v), "0123456789") == json_string_length(v))
		s = json_string_value(v);
	else
		return errbuf_fail(err, errlen, -1, "\"%s\" must be GitHub's number for it", key);
	return (*out = strdup(s)) ? 0 : errbuf_fail(err, errlen, -1, "out of memory");
}

/* A github-app document: the App, its installation, its RSA key (checked by loading it). */
static int github_doc(json_t *o, struct cred_doc *d, char *err, size_t errlen)
{
	static const char *const keys[] = { "app_id",  "installation_id", "private_key",
					    "api_url", "allow_addresses", NULL };
	char *url = NULL;
	BIO *b;
	EVP_PKEY *k = NULL;
	int rc = -1;

	if (rules_check_keys(o, keys, "github-app", err, errlen) ||
	    id_field(o, "app_id", &d->app_id, err, errlen) ||
	    id_field(o, "installation_id", &d->installation_id, err, errlen) ||
	    field(o, "private_key", true, &d->private_key, err, errlen) ||
	    field(o, "api_url", false, &url, err, errlen))
		goto out;
	b = BIO_new_mem_buf(d->private_key, -1);
	if (b)
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	ERR_clear_error();
	if (!k || EVP_PKEY_base_id(k) != EVP_PKEY_RSA) {
		errbuf_set(err, errlen,
			   "github-app: \"private_key\" must be the App's RSA key in PEM");
		goto out;
	}
	rc = token_url(d, url ? url : "https://api.github.com",
		       json_object_get(o, "allow_addresses"), err, errlen);
out:
	EVP_PKEY_free(k);
	free(url);
	return rc;
}

/* An aws-sigv4 document: an access key id (16..128 of A-Z 0-9), its secret key and, for
 * temporary credentials, their session token; optionally a role to assume (its ARN, the STS
 * endpoint and region, the credentials' lifetime). */
static int aws_doc(json_t *o, struct cred_doc *d, char *err, size_t errlen)
{
	static const char *const keys[] = { "access_key_id", "secret_access_key", "session_token",
					    "role_arn",	     "sts_url",		  "sts_region",
					    "duration_seconds", "allow_addresses", NULL };
	json_t *dur = json_object_get(o, "duration_seconds");
	char *url = NULL;
	size_t n;
	int rc;

	if (rules_check_keys(o, keys, "aws-sigv4", err, errlen) ||
	    field(o, "access_key_id", true, &d->access_key_id, err, errlen) ||
	    field(o, "secret_access_key", true, &d->secret_access_key, err, errlen) ||
	    field(o, "session_token", false, &d->session_token, err, errlen) ||
	    field(o, "role_arn", false, &d->role_arn, err, errlen) ||
	    field(o, "sts_region", false, &d->sts_region, err, errlen))
		return -1;
	d->duration = 3600;
	if (dur && (!json_is_integer(dur) || json_integer_value(dur) < 900 ||
		    json_integer_value(dur) > 43200))
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"duration_seconds\" must be 900 to 43200");
	if (dur)
		d->duration = (int)json_integer_value(dur);
	if (d->role_arn && (strncmp(d->role_arn, "arn:", 4) || strlen(d->role_arn) > 2048))
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"role_arn\" must be a role's ARN (arn:...)");
	if (d->sts_region &&
	    strspn(d->sts_region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(d->sts_region))
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"sts_region\" must be a region's name");
	if (!d->role_arn && (json_object_get(o, "sts_url") || d->sts_region || dur ||
			     json_object_get(o, "allow_addresses")))
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"sts_url\", \"sts_region\", \"duration_seconds\" "
				   "and \"allow_addresses\" go with \"role_arn\"");
	if (d->role_arn) { /* the STS endpoint, judged like a token endpoint */
		if (field(o, "sts_url", false, &url, err, errlen))
			return -1;
		if (!d->sts_region && !(d->sts_region = strdup("us-east-1")))
			return errbuf_fail(err, errlen, -1, "out of memory");
		rc = token_url(d, url ? url : "https://sts.amazonaws.com/",
			       json_object_get(o, "allow_addresses"), err, errlen);
		free(url);
		if (rc)
			return -1;
	}
	n = strlen(d->access_key_id);
	if (n < 16 || n > 128 ||
	    strspn(d->access_key_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != n)
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"access_key_id\" must be 16 to 128 of A-Z and 0-9");
	if (strlen(d->secret_access_key) < 16)
		return errbuf_fail(err, errlen, -1,
				   "aws-sigv4: \"secret_access_key\" is shorter than any AWS key");
	return 0;
}

int cred_doc_parse(enum vault_kind kind, const uint8_t *val, size_t len, struct cred_doc *d,
		   char *err, size_t errlen)
{
	static const char *const keys[] = { "token_url",       "client_id", "client_secret",
					    "refresh_token",   "scope",	    "client_auth",
					    "allow_addresses", NULL };
	json_error_t je;
	json_t *o, *v;
	char *url = NULL, *auth = NULL;
	char where[40];
	int rc = -1;

	memset(d, 0, sizeof(*d));
	d->kind = kind;
	if (kind == VAULT_KIND_STATIC || kind > VAULT_KIND_MAX)
		return errbuf_fail(err, errlen, -1, "not a typed kind");
	o = json_loadb((const char *)val, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		/* je.text may quote the document: say only where. */
		errbuf_set(err, errlen, "%s: not a JSON object (line %d, column %d)",
			   cred_kind_name(kind), o ? 1 : je.line, o ? 1 : je.column);
		json_decref(o);
		return -1;
	}
	snprintf(where, sizeof(where), "%s", cred_kind_name(kind));
	if (kind == VAULT_KIND_GITHUB_APP || kind == VAULT_KIND_AWS_SIGV4) {
		rc = kind == VAULT_KIND_GITHUB_APP ? github_doc(o, d, err, errlen)
						   : aws_doc(o, d, err, errlen);
		goto out;
	}
	if (rules_check_keys(o, keys, where, err, errlen))
		goto out;
	if (field(o, "token_url", true, &url, err, errlen) ||
	    field(o, "client_id", true, &d->client_id, err, errlen) ||
	    field(o, "client_secret", kind == VAULT_KIND_OAUTH2_CLIENT, &d->client_secret, err,
		  errlen) ||
	    field(o, "refresh_token", kind == VAULT_KIND_OAUTH2_REFRESH, &d->refresh_token, err,
		  errlen) ||
	    field(o, "scope", false, &d->scope, err, errlen) ||
	    field(o, "client_auth", false, &auth, err, errlen))
		goto out;
	if (kind == VAULT_KIND_OAUTH2_CLIENT && d->refresh_token) {
		errbuf_set(err, errlen, "%s: \"refresh_token\" belongs to oauth2-refresh", where);
		goto out;
	}
	if (auth && strcmp(auth, "basic") && strcmp(auth, "body")) {
		errbuf_set(err, errlen, "%s: \"client_auth\" must be \"basic\" or \"body\"", where);
		goto out;
	}
	d->auth_in_body = auth && !strcmp(auth, "body");
	v = json_object_get(o, "allow_addresses");
	if (token_url(d, url, v, err, errlen))
		goto out;
	rc = 0;
out:
	free(url);
	free(auth);
	json_decref(o);
	if (rc)
		cred_doc_free(d);
	return rc;
}

static void wipe_str(char **s)
{
	if (*s) {
		OPENSSL_cleanse(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

void cred_doc_free(struct cred_doc *d)
{
	wipe_str(&d->client_id);
	wipe_str(&d->client_secret);
	wipe_str(&d->refresh_token);
	wipe_str(&d->scope);
	wipe_str(&d->app_id);
	wipe_str(&d->installation_id);
	wipe_str(&d->private_key);
	wipe_str(&d->access_key_id);
	wipe_str(&d->secret_access_key);
	wipe_str(&d->session_token);
	wipe_str(&d->role_arn);
	wipe_str(&d->sts_region);
	free(d->path);
	d->path = NULL;
	rules_free_dest(&d->endpoint);
}

int cred_doc_with_refresh(const uint8_t *val, size_t len, const char *rt, uint8_t **out,
			  size_t *outlen)
{
	json_t *o = json_loadb((const char *)val, len, JSON_REJECT_DUPLICATES, NULL);
	char *s;

	if (!json_is_object(o) || json_object_set_new(o, "refresh_token", json_string(rt))) {
		json_decref(o);
		return -EINVAL;
	}
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	*out = (uint8_t *)s;
	*outlen = strlen(s);
	return 0;
}
