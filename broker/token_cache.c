/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_cache.c: obtained access tokens (token_cache.h). One lock guards the table;
 * a refresh runs without it, marked busy, and wakes the requests waiting on it. */
#include "broker/token_cache_internal.h"

#include "broker/cred.h"
#include "broker/github_app.h"
#include "lib/mono.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

struct tcache tcache = { .lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

void token_cache_init(const struct token_cache_cfg *cfg)
{
	tcache.cfg = *cfg;
}

static bool same_scope(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static struct tok *find(const char *name, const char *scope, const void *owner)
{
	for (size_t i = 0; i < tcache.n; i++)
		if (!strcmp(tcache.t[i].name, name) && same_scope(tcache.t[i].scope, scope) &&
		    tcache.t[i].owner == owner)
			return &tcache.t[i];
	return NULL;
}

/* A slot for a new token: a free one, or one more. NULL when the table is full. */
static struct tok *slot(void)
{
	for (size_t i = 0; i < tcache.n; i++)
		if (!tcache.t[i].name[0])
			return &tcache.t[i];
	return tcache.n < TOKEN_CACHE_MAX ? &tcache.t[tcache.n++] : NULL;
}

/* Whether T, or for a refresh token any token of its entry, is being refreshed: one refresh
 * token is one chain (a rotation makes the one before it useless), so an entry's scopes
 * refresh one at a time. Lock held. */
static bool busy(const struct tok *t)
{
	for (size_t i = 0; t->kind == VAULT_KIND_OAUTH2_REFRESH && i < tcache.n; i++)
		if (tcache.t[i].busy && !strcmp(tcache.t[i].name, t->name))
			return true;
	return t->busy;
}

void tcache_wipe_free(void *p, size_t n)
{
	if (p)
		OPENSSL_cleanse(p, n);
	free(p);
}

/* A value replaced is scrubbed a while after it ends: a server's clock, or an endpoint's grace
 * for a rotated refresh token, may let it work a little longer. */
int64_t tcache_after_grace(int64_t end_ms)
{
	return end_ms > INT64_MAX - TOKEN_GRACE_MS ? INT64_MAX : end_ms + TOKEN_GRACE_MS;
}

void tcache_drop_token(struct tok *t)
{
	tcache_wipe_free(t->access, t->alen);
	t->access = NULL;
	t->alen = 0;
	t->id[0] = 0;
	t->expires_wall = 0;
}

/* What the document holds that only the token endpoint may see (the client's secret, the
 * refresh token) joins the values scrubbed for NAME: an endpoint that is also a destination
 * could echo them. Lock held. */
static void scrub_doc_secrets(const char *name, enum vault_kind kind, const uint8_t *doc,
			      size_t len)
{
	struct cred_doc d;
	char err[64];

	if (cred_doc_parse(kind, doc, len, &d, err, sizeof(err)))
		return;
	if (d.client_secret)
		vault_live_retire(tcache.cfg.vault, name, (const uint8_t *)d.client_secret,
				  strlen(d.client_secret), INT64_MAX);
	if (d.refresh_token)
		vault_live_retire(tcache.cfg.vault, name, (const uint8_t *)d.refresh_token,
				  strlen(d.refresh_token), INT64_MAX);
	cred_doc_free(&d);
}

/* The document changed in the vault (or is new here): start from it, errors forgotten. */
static int adopt(struct tok *t, enum vault_kind kind, const uint8_t *doc, size_t len,
		 const uint8_t sum[SHA256_DIGEST_LENGTH])
{
	uint8_t *copy = malloc(len);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, doc, len);
	tcache_wipe_free(t->doc, t->doc_len);
	t->doc = copy;
	t->doc_len = len;
	t->kind = kind;
	memcpy(t->vault_sum, sum, SHA256_DIGEST_LENGTH);
	if (t->access)
		vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  tcache_after_grace(t->expires_ms));
	tcache_drop_token(t);
	scrub_doc_secrets(t->name, kind, doc, len);
	t->fails = 0;
	t->refused = false;
	t->next_try_ms = 0;
	t->last_error[0] = 0;
	return 0;
}

static void write_state(void)
{
	json_t *o = json_object();
	char tmp[4200];
	int fd;

	if (!o || !tcache.cfg.state_path)
		goto out;
	for (size_t i = 0; i < tcache.n; i++) {
		const struct tok *t = &tcache.t[i];
		json_t *e = json_pack(
			"{s:s, s:s?, s:s?, s:I, s:I, s:s?, s:I}", "kind", cred_kind_name(t->kind),
			"scope", t->scope, "token_id", t->id[0] ? t->id : NULL, "expires_at",
			(json_int_t)t->expires_wall, "last_refresh",
			(json_int_t)t->last_refresh_wall, "last_error",
			t->last_error[0] ? t->last_error : NULL, "failures", (json_int_t)t->fails);
		char key[VAULT_NAME_MAX + 300];

		if (!t->name[0])
			continue;
		snprintf(key, sizeof(key), "%s%s%s%s", t->name, t->scope ? " " : "",
			 t->scope ? t->scope : "", t->owner ? " (a session's)" : "");
		if (e)
			json_object_set_new(o, key, e);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", tcache.cfg.state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	if (json_dumpfd(o, fd, JSON_INDENT(1) | JSON_SORT_KEYS) || close(fd) ||
	    rename(tmp, tcache.cfg.state_path))
		unlink(tmp);
out:
	json_decref(o);
}

void token_cache_id(const uint8_t *tok, size_t n, char id[24])
{
	uint8_t h[SHA256_DIGEST_LENGTH];

	SHA256(tok, n, h);
	snprintf(id, 24, "sha256:%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4], h[5]);
}

static int copy_out(const struct tok *t, uint8_t **val, size_t *len, int64_t *until_ms)
{
	*val = malloc(t->alen + 1);
	if (!*val)
		return -ENOMEM;
	memcpy(*val, t->access, t->alen);
	*len = t->alen;
	*until_ms = mono_ms() < t->refresh_at_ms ? t->refresh_at_ms : 0;
	return 0;
}

int token_cache_peek(const char *name, const char *scope, const void *owner, uint8_t **val,
		     size_t *len, int64_t *until_ms)
{
	const struct tok *t;
	int rc = -ENOENT;

	pthread_mutex_lock(&tcache.lock);
	t = find(name, scope, owner);
	if (t && t->access)
		rc = copy_out(t, val, len, until_ms);
	pthread_mutex_unlock(&tcache.lock);
	return rc;
}

int token_cache_get(const char *name, enum vault_kind kind, const uint8_t *doc, size_t doclen,
		    const char *scope, const void *owner, uint8_t **val, size_t *len,
		    int64_t *until_ms, char *why, size_t whylen)
{
	uint8_t sum[SHA256_DIGEST_LENGTH];
	int64_t deadline = mono_ms() + tcache.cfg.timeout_ms + 1000;
	struct tok *t;
	int rc = -EAGAIN;

	SHA256(doc, doclen, sum);
	pthread_mutex_lock(&tcache.lock);
	t = find(name, scope, owner);
	if (!t) {
		if (!(t = slot())) {
			pthread_mutex_unlock(&tcache.lock);
			snprintf(why, whylen, "the broker holds %d tokens already",
				 TOKEN_CACHE_MAX);
			return -ENOSPC;
		}
		memset(t, 0, sizeof(*t));
		if (scope && !(t->scope = strdup(scope))) {
			pthread_mutex_unlock(&tcache.lock);
			return -ENOMEM;
		}
		snprintf(t->name, sizeof(t->name), "%s", name);
		t->owner = owner;
	}
	for (;;) {
		int64_t now = mono_ms();
		struct token_reply reply = { 0 };
		char err[sizeof(t->last_error)];
		bool refused = false;
		uint8_t *use;
		size_t use_len;

		if (!busy(t) && (!t->doc || memcmp(sum, t->vault_sum, sizeof(sum))) &&
		    adopt(t, kind, doc, doclen, sum)) {
			rc = -ENOMEM;
			break;
		}
		/* Fresh, or refreshed less than a second ago (a token that expires at once must
		 * not make every request a refresh). */
		if (t->access && (now < t->refresh_at_ms || now < t->last_try_ms + 1000)) {
			rc = copy_out(t, val, len, until_ms);
			break;
		}
		/* Being refreshed, or failing lately: a token still valid is still used. */
		if ((busy(t) || t->refused || now < t->next_try_ms) && t->access &&
		    now < t->expires_ms) {
			rc = copy_out(t, val, len, until_ms);
			break;
		}
		if (busy(t)) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (deadline - now) / 1000 + 1;
			if (now >= deadline ||
			    pthread_cond_timedwait(&tcache.done, &tcache.lock, &ts) == ETIMEDOUT) {
				snprintf(why, whylen,
					 "its token is being refreshed and that took too long");
				break;
			}
			continue;
		}
		if (t->refused || now < t->next_try_ms) {
			snprintf(why, whylen, "%s%s", t->last_error,
				 t->refused ? "; fix the entry with bulkhead vault put"
					    : "; the broker tries again shortly");
			break;
		}
		/* This request refreshes; the others wait for it. */
		t->busy = true;
		t->last_try_ms = now;
		use_len = t->doc_len;
		use = malloc(use_len);
		if (use)
			memcpy(use, t->doc, use_len);
		pthread_mutex_unlock(&tcache.lock);
		snprintf(err, sizeof(err), "out of memory");
		rc = use ? token_refresh_ask(t->kind, use, use_len, t->scope, &reply, &refused, err,
					     sizeof(err))
			 : -1;
		tcache_wipe_free(use, use_len);
		pthread_mutex_lock(&tcache.lock);
		t->busy = false;
		if (rc == 0) {
			token_refresh_take(t, &reply);
		} else {
			unsigned shift = t->fails < 6 ? t->fails : 6;

			snprintf(t->last_error, sizeof(t->last_error), "%s", err);
			t->refused = refused;
			if (reply.refresh_token) /* the rest refused, but the old one has ended */
				token_refresh_keep_rotation(t, reply.refresh_token);
			t->fails++;
			t->next_try_ms = mono_ms() + ((1000LL << shift) < TOKEN_BACKOFF_MAX * 1000
							      ? (1000LL << shift)
							      : TOKEN_BACKOFF_MAX * 1000);
			fprintf(stderr, "bulkhead-broker: %s: token refresh failed: %s\n", t->name,
				t->last_error);
		}
		token_reply_free(&reply);
		pthread_cond_broadcast(&tcache.done);
		write_state();
		if (rc == 0) {
			rc = copy_out(t, val, len, until_ms);
			break;
		}
		snprintf(why, whylen, "%s%s", t->last_error,
			 t->refused ? "; fix the entry with bulkhead vault put" : "");
		rc = -EAGAIN;
		if (t->access && mono_ms() < t->expires_ms) {
			rc = copy_out(t, val, len, until_ms);
			break;
		}
		break;
	}
	pthread_mutex_unlock(&tcache.lock);
	return rc;
}

void token_cache_unauthorized(const char *name, const char *scope, const void *owner,
			      const uint8_t *val, size_t len)
{
	struct tok *t;

	pthread_mutex_lock(&tcache.lock);
	t = find(name, scope, owner);
	/* A token got after a 401 is dropped by another only once it is a minute old. */
	if (t && t->access && !t->busy && (!t->from_401 || mono_ms() - t->got_ms > 60000) &&
	    t->alen == len && !CRYPTO_memcmp(t->access, val, len)) {
		/* refused by the API: nothing to protect any more */
		vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  mono_ms());
		tcache_drop_token(t);
		t->drop_401 = true; /* the next token is not dropped by a 401 again */
		t->last_try_ms = 0;
		write_state();
	}
	pthread_mutex_unlock(&tcache.lock);
}

int token_cache_info(const char *name, const char *scope, const void *owner, char id[24],
		     int64_t *expires)
{
	const struct tok *t;
	int rc = -ENOENT;

	pthread_mutex_lock(&tcache.lock);
	t = find(name, scope, owner);
	if (t && t->access) {
		memcpy(id, t->id, 24);
		*expires = t->expires_wall;
		rc = 0;
	}
	pthread_mutex_unlock(&tcache.lock);
	return rc;
}

void token_cache_end_owner(const void *owner)
{
	struct {
		char name[VAULT_NAME_MAX + 1];
		char *token;
		uint8_t *doc;
		size_t doc_len;
		enum vault_kind kind;
	} gone[16];
	size_t n = 0, i;

	pthread_mutex_lock(&tcache.lock);
	for (i = 0; i < tcache.n; i++) {
		struct tok *t = &tcache.t[i];

		if (!t->name[0] || t->owner != owner || t->busy)
			continue;
		if (t->access && n < sizeof(gone) / sizeof(gone[0]) &&
		    (gone[n].doc = malloc(t->doc_len))) {
			snprintf(gone[n].name, sizeof(gone[n].name), "%s", t->name);
			memcpy(gone[n].doc, t->doc, t->doc_len);
			gone[n].doc_len = t->doc_len;
			gone[n].kind = t->kind;
			gone[n].token = t->access; /* taken over: revoked below */
			t->access = NULL;
			n++;
		}
		tcache_drop_token(t);
		tcache_wipe_free(t->doc, t->doc_len);
		free(t->scope);
		memset(t, 0, sizeof(*t));
	}
	write_state();
	pthread_mutex_unlock(&tcache.lock);
	for (i = 0; i < n; i++) {
		struct cred_doc d;
		char why[256];

		if (gone[i].kind == VAULT_KIND_GITHUB_APP &&
		    cred_doc_parse(gone[i].kind, gone[i].doc, gone[i].doc_len, &d, why,
				   sizeof(why)) == 0) {
			if (github_app_revoke(tcache.cfg.tls, tcache.cfg.policy, &d, gone[i].token,
					      tcache.cfg.timeout_ms, why, sizeof(why)))
				fprintf(stderr,
					"bulkhead-broker: %s: the session's token could not be "
					"revoked: %s\n",
					gone[i].name, why);
			cred_doc_free(&d);
		}
		tcache_wipe_free(gone[i].token, strlen(gone[i].token));
		tcache_wipe_free(gone[i].doc, gone[i].doc_len);
	}
}
