/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_refresh.c: a token asked of its endpoint (an OAuth 2 grant, or a GitHub App's
 * installation token), and the answer taken into the cache: its expiry, the token it replaces
 * retired for the scrubber, a rotated refresh token written back to the vault. */
#include "broker/token_cache_internal.h"

#include "broker/cred.h"
#include "broker/aws_sts.h"
#include "broker/github_app.h"
#include "lib/mono.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
		tcache_wipe_free(rt, strlen(rt));
	free(sc);
	return form;
}

int token_refresh_ask(enum vault_kind kind, const uint8_t *doc, size_t len, const char *scope,
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
	if (kind == VAULT_KIND_GITHUB_APP || kind == VAULT_KIND_AWS_SIGV4) {
		rc = kind == VAULT_KIND_GITHUB_APP
			     ? github_app_mint(tcache.cfg.tls, tcache.cfg.policy, &d, scope,
					       tcache.cfg.timeout_ms, reply, refused, why, whylen)
			     : aws_sts_assume(tcache.cfg.tls, tcache.cfg.policy, &d, scope,
					      tcache.cfg.timeout_ms, reply, refused, why, whylen);
		cred_doc_free(&d);
		return rc;
	}
	form = grant_form(&d, scope);
	if (!form) {
		snprintf(why, whylen, "out of memory");
		cred_doc_free(&d);
		return -1;
	}
	rc = token_http_post(tcache.cfg.tls, tcache.cfg.policy, &d, form, tcache.cfg.timeout_ms,
			     reply, refused, why, whylen);
	tcache_wipe_free(form, strlen(form));
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
	for (size_t i = 0; i < tcache.n; i++) {
		struct tok *t = &tcache.t[i];
		uint8_t *copy;

		if (strcmp(t->name, from->name) || t->kind != from->kind)
			continue;
		if (written) /* else the vault still holds the document before, which they follow */
			memcpy(t->vault_sum, sum, sizeof(sum));
		if (t == from || !(copy = malloc(nl)))
			continue; /* FROM takes ND below */
		memcpy(copy, nd, nl);
		tcache_wipe_free(t->doc, t->doc_len);
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
		vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)d.refresh_token,
				  strlen(d.refresh_token), until_ms);
	cred_doc_free(&d);
}

/* The endpoint rotated T's refresh token to RT: written back to the vault (the entry's other
 * scopes follow), or kept in memory when that fails. Lock held. */
void token_refresh_keep_rotation(struct tok *t, const char *rt)
{
	uint8_t *nd = NULL;
	size_t nl = 0;
	char err[256];

	if (t->kind != VAULT_KIND_OAUTH2_REFRESH)
		return;
	/* The new one is scrubbed; the one it replaced has ended at the endpoint, so it no
	 * longer needs to be (its place in the list is freed for others). */
	vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)rt, strlen(rt), INT64_MAX);
	retire_doc_rt(t, mono_ms());
	if (cred_doc_with_refresh(t->doc, t->doc_len, rt, &nd, &nl) == 0) {
		bool written = vault_live_update(tcache.cfg.vault, t->name, t->kind, t->doc,
						 t->doc_len, nd, nl, err, sizeof(err)) == 0;

		follow_rotation(t, nd, nl, written);
		if (!written)
			fprintf(stderr,
				"bulkhead-broker: %s: the rotated refresh token could not be "
				"written to the vault (%s); it is used from memory\n",
				t->name, err);
		tcache_wipe_free(t->doc, t->doc_len);
		t->doc = nd;
		t->doc_len = nl;
	}
}

/* A role's credentials (an aws-sigv4 document, T's "token") are scrubbed by their parts, the
 * secret key and the session token, until UNTIL_MS. Lock held. */
static void retire_parts(const struct tok *t, const char *doc, size_t len, int64_t until_ms)
{
	struct cred_doc d;
	char err[64];

	if (t->kind != VAULT_KIND_AWS_SIGV4 ||
	    cred_doc_parse(t->kind, (const uint8_t *)doc, len, &d, err, sizeof(err)))
		return;
	vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)d.secret_access_key,
			  strlen(d.secret_access_key), until_ms);
	if (d.session_token)
		vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)d.session_token,
				  strlen(d.session_token), until_ms);
	cred_doc_free(&d);
}

void token_refresh_take(struct tok *t, struct token_reply *r)
{
	int64_t now = mono_ms(), life = r->expires_in;

	if (t->access) {
		retire_parts(t, t->access, t->alen, tcache_after_grace(t->expires_ms));
		vault_live_retire(tcache.cfg.vault, t->name, (const uint8_t *)t->access, t->alen,
				  tcache_after_grace(t->expires_ms));
	}
	tcache_drop_token(t);
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
		token_refresh_keep_rotation(t, r->refresh_token);
	/* A role's new credentials are scrubbed by their parts from now on. */
	retire_parts(t, t->access, t->alen, tcache_after_grace(t->expires_ms));
	vault_live_bump(tcache.cfg.vault);
}
