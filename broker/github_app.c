/* SPDX-License-Identifier: Apache-2.0 */
/* broker/github_app.c: a GitHub App's installation tokens (github_app.h). */
#include "broker/github_app.h"

#include "lib/errbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

/* Base64url without padding (RFC 7515 section 2) of N bytes at IN into OUT (4n/3+4 bytes). */
static void b64url(const unsigned char *in, size_t n, char *out)
{
	int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);

	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = 0;
	for (char *c = out; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
}

/* The App's JWT (RFC 7519): iss the App, issued a minute ago against clock drift, expiring
 * in nine minutes (GitHub takes at most ten). Malloc'd; NULL with why. */
static char *app_jwt(const struct cred_doc *d, char *why, size_t whylen)
{
	static const char head[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
	char claims[128], h64[64], c64[192], *input = NULL, *jwt = NULL;
	unsigned char sig[1024];
	size_t siglen = sizeof(sig);
	long long now = (long long)time(NULL);
	EVP_MD_CTX *md = NULL;
	EVP_PKEY *k = NULL;
	BIO *b = BIO_new_mem_buf(d->private_key, -1);

	if (b)
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	snprintf(claims, sizeof(claims), "{\"iat\":%lld,\"exp\":%lld,\"iss\":\"%s\"}", now - 60,
		 now + 540, d->app_id);
	b64url((const unsigned char *)head, strlen(head), h64);
	b64url((const unsigned char *)claims, strlen(claims), c64);
	if (!k || asprintf(&input, "%s.%s", h64, c64) < 0 || !(md = EVP_MD_CTX_new()) ||
	    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input)) != 1 ||
	    siglen > 512) {
		errbuf_set(why, whylen, "github-app: cannot sign the App's JWT with its key");
		free(input);
		input = NULL;
	} else {
		char s64[700];

		b64url(sig, siglen, s64);
		if (asprintf(&jwt, "Bearer %s.%s", input, s64) < 0)
			jwt = NULL;
	}
	ERR_clear_error();
	free(input);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	return jwt;
}

/* The API's base path (api_url's path, without a trailing slash) and REST. */
static char *api_path(const struct cred_doc *d, const char *rest)
{
	size_t n = strlen(d->path);
	char *p = NULL;

	while (n && d->path[n - 1] == '/')
		n--;
	if (asprintf(&p, "%.*s%s", (int)n, d->path, rest) < 0)
		p = NULL;
	return p;
}

int github_app_mint(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		    const char *narrow, int timeout_ms, struct token_reply *out, bool *refused,
		    char *why, size_t whylen)
{
	char rest[96], *path, *jwt;
	json_t *o = NULL, *t;
	int status = 0, rc = -1;

	memset(out, 0, sizeof(*out));
	*refused = false;
	snprintf(rest, sizeof(rest), "/app/installations/%s/access_tokens", d->installation_id);
	path = api_path(d, rest);
	jwt = path ? app_jwt(d, why, whylen) : NULL;
	if (!jwt)
		goto out;
	if (token_http_call(tls, p, &d->endpoint, "POST", path, jwt, "application/json",
			    narrow ? narrow : "{}", timeout_ms, &status, &o, why, whylen))
		goto out;
	if (status != 201) {
		/* GitHub's message may repeat what it was sent: only the status is said. */
		*refused = status == 401 || status == 403 || status == 404 || status == 422;
		errbuf_set(why, whylen, "GitHub %s answered %d to the App's token request",
			   d->endpoint.host, status);
		goto out;
	}
	t = json_object_get(o, "token");
	if (!json_is_string(t) || !json_string_length(t) ||
	    json_string_length(t) > CRED_FIELD_MAX ||
	    strspn(json_string_value(t), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					 "0123456789_-.") != json_string_length(t)) {
		errbuf_set(why, whylen, "GitHub %s: no usable token in its answer",
			   d->endpoint.host);
		goto out;
	}
	out->expires_in = token_http_seconds_until(json_string_value(json_object_get(o, "expires_at")));
	if (!(out->access_token = strdup(json_string_value(t)))) {
		errbuf_set(why, whylen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	if (jwt) {
		OPENSSL_cleanse(jwt, strlen(jwt));
		free(jwt);
	}
	free(path);
	return rc;
}

int github_app_revoke(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		      const char *token, int timeout_ms, char *why, size_t whylen)
{
	char *path = api_path(d, "/installation/token"), *auth = NULL;
	json_t *o = NULL;
	int status = 0, rc = -1;

	if (!path || asprintf(&auth, "Bearer %s", token) < 0) {
		auth = NULL;
		errbuf_set(why, whylen, "out of memory");
	} else if (token_http_call(tls, p, &d->endpoint, "DELETE", path, auth, NULL, NULL,
				   timeout_ms, &status, &o, why, whylen) == 0) {
		rc = status == 204 ? 0 : -1;
		if (rc)
			errbuf_set(why, whylen, "GitHub %s answered %d to the revocation",
				   d->endpoint.host, status);
	}
	json_decref(o);
	if (auth) {
		OPENSSL_cleanse(auth, strlen(auth));
		free(auth);
	}
	free(path);
	return rc;
}
