/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_cache.c: obtained access tokens (token_cache.h). One lock guards the table;
 * a refresh runs without it, marked busy, and wakes the requests waiting on it. */
#include "broker/token_cache.h"

#include "broker/cred.h"
#include "broker/github_app.h"
#include "broker/token_http.h"
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

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct token_cache_cfg cfg;
	struct tok t[TOKEN_CACHE_MAX];
	size_t n;
} tc = { .lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

void token_cache_init(const struct token_cache_cfg *cfg)
{
	tc.cfg = *cfg;
}

static bool same_scope(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static struct tok *find(const char *name, const char *scope, const void *owner)
{
	for (size_t i = 0; i < tc.n; i++)
		if (!strcmp(tc.t[i].name, name) && same_scope(tc.t[i].scope, scope) &&
		    tc.t[i].owner == owner)
			return &tc.t[i];
	return NULL;
}

/* A slot for a new token: a free one, or one more. NULL when the table is full. */
static struct tok *slot(void)
{
	for (size_t i = 0; i < tc.n; i++)
		if (!tc.t[i].name[0])
			return &tc.t[i];
	return tc.n < TOKEN_CACHE_MAX ? &tc.t[tc.n++] : NULL;
}

/* Whether T, or for a refresh token any token of its entry, is being refreshed: one refresh
 * token is one chain (a rotation makes the one before it useless), so an entry's scopes
 * refresh one at a time. Lock held. */
static bool busy(const struct tok *t)
{
	for (size_t i = 0; t->kind == VAULT_KIND_OAUTH2_REFRESH && i < tc.n; i++)
		if (tc.t[i].busy && !strcmp(tc.t[i].name, t->name))
			return true;
	return t->busy;
}

static void wipe_free(void *p, size_t n)
{
	if (p)
		OPENSSL_cleanse(p, n);
	free(p);
}

/* A value replaced is scrubbed a while after it ends: a server's clock, or an endpoint's grace
 * for a rotated refresh token, may let it work a little longer. */
static int64_t after_grace(int64_t end_ms)
{
	return end_ms > INT64_MAX - TOKEN_GRACE_MS ? INT64_MAX : end_ms + TOKEN_GRACE_MS;
}

static void drop_token(struct tok *t)
{
	wipe_free(t->access, t->alen);
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
		vault_live_retire(tc.cfg.vault, name, (const uint8_t *)d.client_secret,
				  strlen(d.client_secret), INT64_MAX);
	if (d.refresh_token)
		vault_live_retire(tc.cfg.vault, name, (const uint8_t *)d.refresh_token,
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
	wipe_free(t->doc, t->doc_len);
	t->doc = copy;
	t->doc_len = len;
	t->kind = kind;
	memcpy(t->vault_sum, sum, SHA256_DIGEST_LENGTH);
	if (t->access)
		vault_live_retire(tc.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  after_grace(t->expires_ms));
	drop_token(t);
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

	if (!o || !tc.cfg.state_path)
		goto out;
	for (size_t i = 0; i < tc.n; i++) {
		const struct tok *t = &tc.t[i];
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
	snprintf(tmp, sizeof(tmp), "%s.tmp", tc.cfg.state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	if (json_dumpfd(o, fd, JSON_INDENT(1) | JSON_SORT_KEYS) || close(fd) ||
	    rename(tmp, tc.cfg.state_path))
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

/* The form for T's grant: refresh_token or client_credentials, and the scope. */
static char *grant_form(const struct cred_doc *d, const char *scope)
{
	char *rt = NULL, *sc = NULL, *form = NULL;
	const char *want = scope ? scope : d->scope;

	if (d->kind == VAULT_KIND_OAUTH2_REFRESH &&
	    !(rt = rules_pct_encode((const uint8_t *)d->refresh_token, strlen(d->refresh_token))))
		return NULL;
	if (want && !(sc = rules_pct_encode((const uint8_t *)want, strlen(want))))
		goto out;
	if (asprintf(&form, "grant_type=%s%s%s%s%s",
		     rt ? "refresh_token&refresh_token=" : "client_credentials", rt ? rt : "",
		     sc ? "&scope=" : "", sc ? sc : "", "") < 0)
		form = NULL;
out:
	if (rt)
		wipe_free(rt, strlen(rt));
	free(sc);
	return form;
}

/* The refresh itself, without the lock: KIND's document DOC, for SCOPE. 0 with *REPLY; or -1
 * with WHY and *REFUSED (asking again will not help). */
static int refresh(enum vault_kind kind, const uint8_t *doc, size_t len, const char *scope,
		   struct token_reply *reply, bool *refused, char *why, size_t whylen)
{
	struct cred_doc d;
	char *form;
	int rc;

	*refused = false;
	if (cred_doc_parse(kind, doc, len, &d, why, whylen)) {
		*refused = true; /* a broken document stays broken until it changes */
		return -1;
	}
	if (kind == VAULT_KIND_GITHUB_APP) {
		rc = github_app_mint(tc.cfg.tls, tc.cfg.policy, &d, scope, tc.cfg.timeout_ms, reply,
				     refused, why, whylen);
		cred_doc_free(&d);
		return rc;
	}
	form = grant_form(&d, scope);
	if (!form) {
		snprintf(why, whylen, "out of memory");
		cred_doc_free(&d);
		return -1;
	}
	rc = token_http_post(tc.cfg.tls, tc.cfg.policy, &d, form, tc.cfg.timeout_ms, reply, refused,
			     why, whylen);
	wipe_free(form, strlen(form));
	cred_doc_free(&d);
	return rc;
}

/* The entry's document as this broker rewrote it (a rotated refresh token): every token of the
 * entry (other scopes) takes it as its own, so none sees a change of the entry, drops its
 * token and refreshes in turn (which would rotate again, and so on), nor refreshes with the
 * refresh token the rotation ended. WRITTEN: the vault holds it now. Lock held. */
static void follow_rotation(const struct tok *from, const uint8_t *nd, size_t nl, bool written)
{
	uint8_t sum[SHA256_DIGEST_LENGTH];

	SHA256(nd, nl, sum);
	for (size_t i = 0; i < tc.n; i++) {
		struct tok *t = &tc.t[i];
		uint8_t *copy;

		if (strcmp(t->name, from->name) || t->kind != from->kind)
			continue;
		if (written) /* else the vault still holds the document before, which they follow */
			memcpy(t->vault_sum, sum, sizeof(sum));
		if (t == from || !(copy = malloc(nl)))
			continue; /* FROM takes ND below */
		memcpy(copy, nd, nl);
		wipe_free(t->doc, t->doc_len);
		t->doc = copy;
		t->doc_len = nl;
	}
}

/* T's document's refresh token is scrubbed until UNTIL_MS. Lock held. */
static void retire_doc_rt(const struct tok *t, int64_t until_ms)
{
	struct cred_doc d;
	char err[64];

	if (cred_doc_parse(t->kind, t->doc, t->doc_len, &d, err, sizeof(err)))
		return;
	if (d.refresh_token)
		vault_live_retire(tc.cfg.vault, t->name, (const uint8_t *)d.refresh_token,
				  strlen(d.refresh_token), until_ms);
	cred_doc_free(&d);
}

/* The endpoint rotated T's refresh token to RT: written back to the vault (the entry's other
 * scopes follow), or kept in memory when that fails. Lock held. */
static void keep_rotation(struct tok *t, const char *rt)
{
	uint8_t *nd = NULL;
	size_t nl = 0;
	char err[256];

	if (t->kind != VAULT_KIND_OAUTH2_REFRESH)
		return;
	/* The new one is scrubbed; the one it replaced has ended at the endpoint, so it no
	 * longer needs to be (its place in the list is freed for others). */
	vault_live_retire(tc.cfg.vault, t->name, (const uint8_t *)rt, strlen(rt), INT64_MAX);
	retire_doc_rt(t, mono_ms());
	if (cred_doc_with_refresh(t->doc, t->doc_len, rt, &nd, &nl) == 0) {
		bool written = vault_live_update(tc.cfg.vault, t->name, t->kind, t->doc, t->doc_len,
						 nd, nl, err, sizeof(err)) == 0;

		follow_rotation(t, nd, nl, written);
		if (!written)
			fprintf(stderr,
				"bulkhead-broker: %s: the rotated refresh token could not be "
				"written to the vault (%s); it is used from memory\n",
				t->name, err);
		wipe_free(t->doc, t->doc_len);
		t->doc = nd;
		t->doc_len = nl;
	}
}

/* A good answer taken (lock held): the new token, its expiry, a rotated refresh token. */
static void take(struct tok *t, struct token_reply *r)
{
	int64_t now = mono_ms(), life = r->expires_in;

	if (t->access)
		vault_live_retire(tc.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  after_grace(t->expires_ms));
	drop_token(t);
	t->alen = strlen(r->access_token);
	t->access = r->access_token;
	r->access_token = NULL;
	token_cache_id((const uint8_t *)t->access, t->alen, t->id);
	t->got_ms = now;
	if (life > 366LL * 86400)
		life = 366LL * 86400;
	if (life < 0) {
		t->expires_ms = t->refresh_at_ms = INT64_MAX; /* until a 401 says otherwise */
		t->expires_wall = 0;
	} else {
		int64_t margin = life / 4 < 60 ? life / 4 : 60;

		t->expires_ms = now + life * 1000;
		t->refresh_at_ms = now + (life - margin) * 1000;
		t->expires_wall = (int64_t)time(NULL) + life;
	}
	t->last_refresh_wall = (int64_t)time(NULL);
	t->from_401 = t->drop_401;
	t->drop_401 = false;
	t->fails = 0;
	t->last_error[0] = 0;
	if (r->refresh_token)
		keep_rotation(t, r->refresh_token);
	vault_live_bump(tc.cfg.vault);
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

	pthread_mutex_lock(&tc.lock);
	t = find(name, scope, owner);
	if (t && t->access)
		rc = copy_out(t, val, len, until_ms);
	pthread_mutex_unlock(&tc.lock);
	return rc;
}

int token_cache_get(const char *name, enum vault_kind kind, const uint8_t *doc, size_t doclen,
		    const char *scope, const void *owner, uint8_t **val, size_t *len,
		    int64_t *until_ms, char *why, size_t whylen)
{
	uint8_t sum[SHA256_DIGEST_LENGTH];
	int64_t deadline = mono_ms() + tc.cfg.timeout_ms + 1000;
	struct tok *t;
	int rc = -EAGAIN;

	SHA256(doc, doclen, sum);
	pthread_mutex_lock(&tc.lock);
	t = find(name, scope, owner);
	if (!t) {
		if (!(t = slot())) {
			pthread_mutex_unlock(&tc.lock);
			snprintf(why, whylen, "the broker holds %d tokens already",
				 TOKEN_CACHE_MAX);
			return -ENOSPC;
		}
		memset(t, 0, sizeof(*t));
		if (scope && !(t->scope = strdup(scope))) {
			pthread_mutex_unlock(&tc.lock);
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
			    pthread_cond_timedwait(&tc.done, &tc.lock, &ts) == ETIMEDOUT) {
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
		pthread_mutex_unlock(&tc.lock);
		snprintf(err, sizeof(err), "out of memory");
		rc = use ? refresh(t->kind, use, use_len, t->scope, &reply, &refused, err,
				   sizeof(err))
			 : -1;
		wipe_free(use, use_len);
		pthread_mutex_lock(&tc.lock);
		t->busy = false;
		if (rc == 0) {
			take(t, &reply);
		} else {
			unsigned shift = t->fails < 6 ? t->fails : 6;

			snprintf(t->last_error, sizeof(t->last_error), "%s", err);
			t->refused = refused;
			if (reply.refresh_token) /* the rest refused, but the old one has ended */
				keep_rotation(t, reply.refresh_token);
			t->fails++;
			t->next_try_ms = mono_ms() + ((1000LL << shift) < TOKEN_BACKOFF_MAX * 1000
							      ? (1000LL << shift)
							      : TOKEN_BACKOFF_MAX * 1000);
			fprintf(stderr, "bulkhead-broker: %s: token refresh failed: %s\n", t->name,
				t->last_error);
		}
		token_reply_free(&reply);
		pthread_cond_broadcast(&tc.done);
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
	pthread_mutex_unlock(&tc.lock);
	return rc;
}

void token_cache_unauthorized(const char *name, const char *scope, const void *owner,
			      const uint8_t *val, size_t len)
{
	struct tok *t;

	pthread_mutex_lock(&tc.lock);
	t = find(name, scope, owner);
	/* A token got after a 401 is dropped by another only once it is a minute old. */
	if (t && t->access && !t->busy && (!t->from_401 || mono_ms() - t->got_ms > 60000) &&
	    t->alen == len && !CRYPTO_memcmp(t->access, val, len)) {
		/* refused by the API: nothing to protect any more */
		vault_live_retire(tc.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  mono_ms());
		drop_token(t);
		t->drop_401 = true; /* the next token is not dropped by a 401 again */
		t->last_try_ms = 0;
		write_state();
	}
	pthread_mutex_unlock(&tc.lock);
}

int token_cache_info(const char *name, const char *scope, const void *owner, char id[24],
		     int64_t *expires)
{
	const struct tok *t;
	int rc = -ENOENT;

	pthread_mutex_lock(&tc.lock);
	t = find(name, scope, owner);
	if (t && t->access) {
		memcpy(id, t->id, 24);
		*expires = t->expires_wall;
		rc = 0;
	}
	pthread_mutex_unlock(&tc.lock);
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

	pthread_mutex_lock(&tc.lock);
	for (i = 0; i < tc.n; i++) {
		struct tok *t = &tc.t[i];

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
		drop_token(t);
		wipe_free(t->doc, t->doc_len);
		free(t->scope);
		memset(t, 0, sizeof(*t));
	}
	write_state();
	pthread_mutex_unlock(&tc.lock);
	for (i = 0; i < n; i++) {
		struct cred_doc d;
		char why[256];

		if (gone[i].kind == VAULT_KIND_GITHUB_APP &&
		    cred_doc_parse(gone[i].kind, gone[i].doc, gone[i].doc_len, &d, why,
				   sizeof(why)) == 0) {
			if (github_app_revoke(tc.cfg.tls, tc.cfg.policy, &d, gone[i].token,
					      tc.cfg.timeout_ms, why, sizeof(why)))
				fprintf(stderr,
					"bulkhead-broker: %s: the session's token could not be "
					"revoked: %s\n",
					gone[i].name, why);
			cred_doc_free(&d);
		}
		wipe_free(gone[i].token, strlen(gone[i].token));
		wipe_free(gone[i].doc, gone[i].doc_len);
	}
}
