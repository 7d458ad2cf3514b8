/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_secret.c: a connection's secrets — each read from the source once and again when
 * it changes (secret_slot), every value it held and every retired one in the connection's
 * scrubber, and what the source is told of a 401. */
#include "broker/proxy_internal.h"

#include "broker/cred.h"
#include "lib/mono.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* --- secrets ---------------------------------------------------------------------------- */

/* Adds VAL to the connection's scrubber, and VAL without the blanks at its ends (a server reads
 * a header's value without them, and may echo it so). */
static int scrub_value(struct conn *c, const uint8_t *val, size_t len)
{
	size_t a = 0, b = len;

	while (a < b && (val[a] == ' ' || val[a] == '\t'))
		a++;
	while (b > a && (val[b - 1] == ' ' || val[b - 1] == '\t'))
		b--;
	if (scrub_add_secret(&c->scrub, val, len))
		return -1;
	return (a || b < len) ? scrub_add_secret(&c->scrub, val + a, b - a) : 0;
}

/* The values secret S held before (a vault's replaced or removed ones) that this connection's
 * scrubber does not have yet: an old credential may still be valid upstream. */
static int scrub_retired(struct conn *c, const struct rules_secret *s, struct secret_slot *sl)
{
	const struct secret_source *src = c->cfg->secrets;
	unsigned serial;
	uint8_t *val;
	size_t len;
	int rc = 0;

	while (!rc && src->retired &&
	       src->retired(src->arg, s->name, sl->retired_seen, &serial, &val, &len) == 0) {
		rc = scrub_value(c, val, len);
		OPENSSL_cleanse(val, len);
		free(val);
		sl->retired_seen = serial;
	}
	return rc;
}

/* The secret parts of an aws-sigv4 document VAL (its secret key, its session token): a role's
 * credentials are this session's, whatever the retired values the source keeps for all. */
static int scrub_aws_parts(struct conn *c, const uint8_t *val, size_t len)
{
	struct cred_doc d;
	char err[160];
	int rc = 0;

	if (cred_doc_parse(VAULT_KIND_AWS_SIGV4, val, len, &d, err, sizeof(err)))
		return 0; /* not a key: nothing is signed with it (proxy_aws_sign says so) */
	rc = scrub_add_secret(&c->scrub, (const uint8_t *)d.secret_access_key,
			      strlen(d.secret_access_key));
	if (!rc && d.session_token)
		rc = scrub_add_secret(&c->scrub, (const uint8_t *)d.session_token,
				      strlen(d.session_token));
	cred_doc_free(&d);
	return rc;
}

/* Reads S into its slot (FLAGS: SECRET_PEEK or 0) and scrubs the value; the slot, or NULL with
 * the source's reason in the slot. */
static struct secret_slot *load(struct conn *c, const struct rules_secret *s, int flags)
{
	struct secret_slot *sl = &c->secrets[s - c->cfg->rules->secrets];
	const struct secret_source *src = c->cfg->secrets;
	int64_t until = INT64_MAX;
	uint8_t *val = NULL;
	size_t len = 0;

	/* A value only peeked (for the scrubber) is asked for properly before it is used: the
	 * source may have to act first (an entry changed since its token was obtained). */
	if (sl->state == 1 && sl->gen == c->secrets_gen && mono_ms() < sl->until_ms &&
	    (!sl->peeked || (flags & SECRET_PEEK)))
		return sl;
	sl->state = 0;
	sl->why[0] = 0;
	if (!src)
		return NULL;
	/* Every secret is scrubbed from every response, whichever host sent it, with the values
	 * it held before; a value replaced stays scrubbed with the new one. */
	if (scrub_retired(c, s, sl) ||
	    src->get(src->arg, s, flags, &val, &len, &until, sl->why, sizeof(sl->why)))
		return NULL;
	/* What the source retired while it answered (an AWS key's secret, kept for good). */
	if (scrub_retired(c, s, sl)) {
		OPENSSL_cleanse(val, len);
		free(val);
		return NULL;
	}
	if (sl->val && sl->len == len && !CRYPTO_memcmp(sl->val, val, len)) {
		OPENSSL_cleanse(val, len); /* the value the connection had: scrubbed already */
		free(val);
	} else {
		if (sl->val) {
			OPENSSL_cleanse(sl->val, sl->len);
			free(sl->val);
		}
		sl->val = val;
		sl->len = len;
		/* An AWS key's document: its secret parts are what an upstream could echo. */
		if (scrub_value(c, val, len) ||
		    (s->kind == RULES_INJECT_AWS_SIGV4 && scrub_aws_parts(c, val, len))) {
			OPENSSL_cleanse(sl->val, sl->len); /* never used unscrubbed: read again */
			free(sl->val);
			sl->val = NULL;
			sl->len = 0;
			return NULL;
		}
	}
	sl->gen = c->secrets_gen;
	sl->until_ms = until;
	sl->peeked = (flags & SECRET_PEEK) != 0;
	sl->state = 1;
	return sl;
}

const struct secret_slot *proxy_secret_get(struct conn *c, const struct rules_secret *s)
{
	return load(c, s, 0);
}

void proxy_secret_scrub_all(struct conn *c)
{
	for (size_t i = 0; i < c->cfg->rules->n_secrets; i++)
		load(c, &c->cfg->rules->secrets[i], SECRET_PEEK);
}

void proxy_secret_scrub_anew(struct conn *c)
{
	size_t i;

	scrub_free(&c->scrub);
	scrub_init(&c->scrub);
	for (i = 0; c->secrets && i < c->cfg->rules->n_secrets; i++) {
		struct secret_slot *sl = &c->secrets[i];

		if (sl->val) { /* read again, and scrubbed again: no value is "had already" */
			OPENSSL_cleanse(sl->val, sl->len);
			free(sl->val);
		}
		sl->val = NULL;
		sl->len = 0;
		sl->state = 0;
		sl->retired_seen = 0;
	}
}

void proxy_secret_catch_up(struct conn *c)
{
	const struct secret_source *src = c->cfg->secrets;
	unsigned g;

	if (!src || !src->current || (g = src->current(src->arg)) == c->secrets_gen)
		return;
	c->secrets_gen = g;
	proxy_secret_scrub_all(c);
}

void proxy_secret_unavailable(struct conn *c, const struct rules_secret *s)
{
	const char *why = c->secrets[s - c->cfg->rules->secrets].why;

	proxy_fail(c, 503, "secret %s is not available%s%s", s->name, why[0] ? ": " : "", why);
}

void proxy_secret_unauthorized(struct conn *c)
{
	const struct secret_source *src = c->cfg->secrets;

	for (size_t i = 0; src && src->unauthorized && i < c->n_inj_names; i++) {
		const struct secret_slot *sl = &c->secrets[c->inj[i] - c->cfg->rules->secrets];

		if (sl->state == 1)
			src->unauthorized(src->arg, c->inj[i], sl->val, sl->len);
	}
}

void proxy_secret_wipe(struct conn *c)
{
	size_t i;

	for (i = 0; c->secrets && i < c->cfg->rules->n_secrets; i++)
		if (c->secrets[i].val) {
			OPENSSL_cleanse(c->secrets[i].val, c->secrets[i].len);
			free(c->secrets[i].val);
		}
	free(c->secrets);
	c->secrets = NULL;
}
