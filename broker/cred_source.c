/* SPDX-License-Identifier: Apache-2.0 */
/* broker/cred_source.c: secrets by kind from the vault (cred_source.h). */
#include "broker/cred_source.h"

#include "broker/cred.h"
#include "broker/token_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* What narrows S's token: the rule's OAuth scope, its "github" object, its session policy. */
static const char *scope_of(const struct rules_secret *s, enum vault_kind kind)
{
	return kind == VAULT_KIND_GITHUB_APP || kind == VAULT_KIND_AWS_SIGV4 ? s->narrow
									    : s->oauth_scope;
}

/* A github-app token and a role's credentials are their session's own (S belongs to the
 * session's rules); others are shared by the broker's sessions. */
static const void *owner_of(const struct rules_secret *s, enum vault_kind kind)
{
	return kind == VAULT_KIND_GITHUB_APP || kind == VAULT_KIND_AWS_SIGV4 ? s : NULL;
}

/* An aws-sigv4 entry is handed to the signer whole (proxy_aws.c), and only to it: under a rule
 * that would inject it, it is not available at all. Its secret key and session token join the
 * values scrubbed for the entry, for good. */
static int aws_entry(void *arg, const struct rules_secret *s, int flags, uint8_t *doc, size_t n,
		     bool *role, char *why, size_t whylen)
{
	struct cred_doc d;
	char err[160];

	(void)flags;
	if (cred_doc_parse(VAULT_KIND_AWS_SIGV4, doc, n, &d, err, sizeof(err))) {
		snprintf(why, whylen, "its entry is damaged: %s", err);
		return -EINVAL;
	}
	vault_live_retire(arg, s->name, (const uint8_t *)d.secret_access_key,
			  strlen(d.secret_access_key), INT64_MAX);
	if (d.session_token)
		vault_live_retire(arg, s->name, (const uint8_t *)d.session_token,
				  strlen(d.session_token), INT64_MAX);
	*role = d.role_arn != NULL;
	cred_doc_free(&d);
	/* Not even for the scrubber alone (SECRET_PEEK): a value a connection holds is what it
	 * injects, and the key's parts are scrubbed as retired values already. */
	if (s->kind != RULES_INJECT_AWS_SIGV4) {
		snprintf(why, whylen,
			 "it is an aws-sigv4 key, which signs requests: its rule must say "
			 "\"inject\": {\"aws_sigv4\": ...}");
		return -EPERM;
	}
	return 0;
}

static int get(void *arg, const struct rules_secret *s, int flags, uint8_t **val, size_t *len,
	       int64_t *until_ms, char *why, size_t whylen)
{
	enum vault_kind kind = VAULT_KIND_STATIC;
	bool role = false;
	uint8_t *doc;
	size_t n;
	int rc = vault_live_get_kind(arg, s->name, &kind, &doc, &n);

	if (rc) {
		snprintf(why, whylen,
			 rc == -ENOENT ? "the vault has no entry of that name"
				       : "the vault cannot be read");
		return rc;
	}
	if (kind == VAULT_KIND_AWS_SIGV4 &&
	    (rc = aws_entry(arg, s, flags, doc, n, &role, why, whylen))) {
		OPENSSL_cleanse(doc, n);
		free(doc);
		return rc;
	}
	/* A key signs as it is; a role's key only asks for the session's own credentials. */
	if (kind == VAULT_KIND_STATIC || (kind == VAULT_KIND_AWS_SIGV4 && !role)) {
		*val = doc;
		*len = n;
		return 0;
	}
	if (s->kind == RULES_INJECT_AWS_SIGV4 && kind != VAULT_KIND_AWS_SIGV4 &&
	    !(flags & SECRET_PEEK)) {
		OPENSSL_cleanse(doc, n);
		free(doc);
		snprintf(why, whylen, "its rule signs with it, but it is no aws-sigv4 key");
		return -EPERM;
	}
	if (flags & SECRET_PEEK)
		rc = token_cache_peek(s->name, scope_of(s, kind), owner_of(s, kind), val, len,
				      until_ms);
	else
		rc = token_cache_get(s->name, kind, doc, n, scope_of(s, kind), owner_of(s, kind),
				     val, len, until_ms, why, whylen);
	OPENSSL_cleanse(doc, n);
	free(doc);
	return rc;
}

static unsigned generation(void *arg)
{
	return vault_live_generation(arg);
}

static unsigned current(void *arg)
{
	return vault_live_current(arg);
}

static int retired(void *arg, const char *name, unsigned after, unsigned *serial, uint8_t **val,
		   size_t *len)
{
	return vault_live_retired(arg, name, after, serial, val, len);
}

static void unauthorized(void *arg, const struct rules_secret *s, const uint8_t *val, size_t len)
{
	int k = vault_live_kind(arg, s->name);

	if (k > VAULT_KIND_STATIC && k != VAULT_KIND_AWS_SIGV4)
		token_cache_unauthorized(s->name, scope_of(s, (enum vault_kind)k),
					 owner_of(s, (enum vault_kind)k), val, len);
}

static void session_end(void *arg, const struct rules *r)
{
	(void)arg;
	for (size_t i = 0; i < r->n_secrets; i++)
		token_cache_end_owner(&r->secrets[i]);
}

static void describe(void *arg, const struct rules_secret *s, const uint8_t *val, size_t len,
		     const char **kind, char id[24], int64_t *expires)
{
	int k = vault_live_kind(arg, s->name);
	char now_id[24];

	id[0] = 0;
	*expires = 0;
	*kind = cred_kind_name(k < 0 ? VAULT_KIND_STATIC : (enum vault_kind)k);
	if (k <= VAULT_KIND_STATIC || !val)
		return;
	if (token_cache_info(s->name, scope_of(s, (enum vault_kind)k),
			     owner_of(s, (enum vault_kind)k), now_id, expires)) {
		*expires = 0;
		if (k == VAULT_KIND_AWS_SIGV4)
			return; /* a key that signs as it is: nothing was obtained */
	}
	token_cache_id(val, len, id);
	if (strcmp(now_id, id))
		*expires = 0; /* replaced since: its expiry is not kept */
}

const struct secret_source *cred_source_vault(struct vault_live *v)
{
	static struct secret_source src = { .get = get,
					    .generation = generation,
					    .current = current,
					    .retired = retired,
					    .unauthorized = unauthorized,
					    .describe = describe,
					    .session_end = session_end };

	src.arg = v;
	return &src;
}
