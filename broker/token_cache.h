/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_cache.h: access tokens the broker obtains for typed vault entries (cred.h), one
 * per entry and requested scope, shared by every session of the broker.
 *
 * A token is used until shortly before it expires (a quarter of its life, at most 60 s), then
 * refreshed by the first request that needs it while the others wait for that one refresh (one
 * in flight per token). A refresh that fails is tried again after a backoff (1 s doubling to
 * 60 s); until then requests fail at once, naming the secret and the reason, or keep the
 * current token while it is still valid. An endpoint that refuses the grant itself (a revoked
 * refresh token: invalid_grant) is not asked again until the entry changes in the vault. A
 * 401 from an API drops the token that got it, once per token: a guest cannot make the broker
 * refresh in a loop. A rotated refresh token is written back to the vault (vault_live_update)
 * and used from then on even if that write fails. A github-app token is a session's own, minted
 * narrowed to its rule and revoked when the session ends. Replaced tokens join the retired
 * values, so every connection scrubs them. The cache's state (no value) goes to STATE_PATH for `bulkhead
 * vault list`. */
#ifndef BULKHEAD_BROKER_TOKEN_CACHE_H
#define BULKHEAD_BROKER_TOKEN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "broker/policy.h"
#include "broker/vault.h"
#include "broker/vault_live.h"

#define TOKEN_CACHE_MAX	  256		  /* entries x scopes */
#define TOKEN_BACKOFF_MAX 60		  /* seconds */
#define TOKEN_GRACE_MS	  (5 * 60 * 1000) /* a replaced token is scrubbed this long after it ends */

struct token_cache_cfg {
	SSL_CTX *tls;		     /* verified upstream TLS */
	const struct policy *policy; /* may be NULL */
	struct vault_live *vault;
	int timeout_ms; /* one token request, whole */
	char *state_path;
};

void token_cache_init(const struct token_cache_cfg *cfg);
/* The access token for entry NAME (KIND, its document DOC) and SCOPE (the rule's narrower
 * scope, or a github-app rule's narrowing; NULL: the document's), shared by the broker's
 * sessions or OWNER's own (a session's github-app token; NULL: shared): a malloc'd copy the
 * caller wipes, and in *UNTIL_MS (monotonic) when to ask again. 0, or a negative errno with
 * one line in why naming no value. */
int token_cache_get(const char *name, enum vault_kind kind, const uint8_t *doc, size_t doclen,
		    const char *scope, const void *owner, uint8_t **val, size_t *len,
		    int64_t *until_ms, char *why, size_t whylen);
/* The token held now for NAME, SCOPE and OWNER, without asking anyone: 0, or -ENOENT. */
int token_cache_peek(const char *name, const char *scope, const void *owner, uint8_t **val,
		     size_t *len, int64_t *until_ms);
/* An upstream answered 401 to a request that carried VAL for NAME, SCOPE and OWNER. */
void token_cache_unauthorized(const char *name, const char *scope, const void *owner,
			      const uint8_t *val, size_t len);
/* OWNER's session ended: its own tokens (github-app) are forgotten and revoked. */
void token_cache_end_owner(const void *owner);
/* For the audit record: the current token's id ("sha256:" and 12 hex digits) and expiry (Unix
 * seconds, 0 when it has none). 0, or -ENOENT. */
int token_cache_info(const char *name, const char *scope, const void *owner, char id[24],
		     int64_t *expires);
/* A token's id: "sha256:" and the first 12 hex digits of its SHA-256. */
void token_cache_id(const uint8_t *tok, size_t n, char id[24]);

#endif
