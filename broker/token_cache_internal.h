/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_cache_internal.h: what token_cache.c (the cache: which token a request gets,
 * waiting, backoff, 401s, owners) shares with token_refresh.c (asking an endpoint, and taking
 * its answer: the token, its expiry, a rotated refresh token written back). Not an interface:
 * token_cache.h is. */
#ifndef BULKHEAD_BROKER_TOKEN_CACHE_INTERNAL_H
#define BULKHEAD_BROKER_TOKEN_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

#include "broker/token_cache.h"
#include "broker/token_http.h"

/* One token: an entry's, for one scope and owner. */
struct tok {
	char name[VAULT_NAME_MAX + 1]; /* "": a free slot */
	char *scope;		       /* the rule's, or NULL */
	const void *owner;	       /* a session's own token (github-app), or NULL: shared */
	enum vault_kind kind;
	uint8_t *doc; /* the document in use (with a rotated refresh token) */
	size_t doc_len;
	uint8_t vault_sum[SHA256_DIGEST_LENGTH]; /* of the vault's document it follows */
	char *access;
	size_t alen;
	int64_t refresh_at_ms, expires_ms; /* monotonic; INT64_MAX: never */
	int64_t expires_wall, last_refresh_wall, last_try_ms, next_try_ms, got_ms;
	bool busy, from_401, drop_401, refused;
	unsigned fails;
	char id[24];
	char last_error[256];
};

struct tcache {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct token_cache_cfg cfg;
	struct tok t[TOKEN_CACHE_MAX];
	size_t n;
};
extern struct tcache tcache;

/* Wipes N bytes at P and frees it (P may be NULL). */
void tcache_wipe_free(void *p, size_t n);
/* When a token that ends at END_MS (monotonic) stops being scrubbed: TOKEN_GRACE_MS after. */
int64_t tcache_after_grace(int64_t end_ms);
/* T holds no token any more (its value wiped). */
void tcache_drop_token(struct tok *t);

/* token_refresh.c: the refresh itself, without the lock: KIND's document DOC, for SCOPE. 0 with
 * *REPLY; or -1 with WHY and *REFUSED (asking again will not help). */
int token_refresh_ask(enum vault_kind kind, const uint8_t *doc, size_t len, const char *scope,
		      struct token_reply *reply, bool *refused, char *why, size_t whylen);
/* A good answer taken (lock held): the new token, its expiry, a rotated refresh token written
 * back to the vault (the entry's other scopes follow it). */
void token_refresh_take(struct tok *t, struct token_reply *r);
/* The endpoint rotated T's refresh token to RT (also in an answer refused otherwise: the old
 * one has ended): written back, or kept in memory when that fails. Lock held. */
void token_refresh_keep_rotation(struct tok *t, const char *rt);

#endif
