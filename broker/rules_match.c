/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules_match.c: what loaded rules say of a request (rules.h): the destination it
 * matches, the secret a placeholder names, what a CONNECT may open; and a credential rendered
 * as its rule injects it. */
#include "broker/rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

int rules_dest_match(const struct rules_dest *d, const struct rules_req *q)
{
	int port = q->port < 0 ? rules_default_port(d->scheme) : q->port;

	if (strcasecmp(d->host, q->host) || port != d->port)
		return 0;
	if (d->method && strcmp(d->method, q->method))
		return 0;
	/* A prefix "/api/" must not match "/api/../admin": the proxy refuses dot segments
	 * before matching, so a plain prefix comparison is enough here. */
	if (d->path_prefix && strncmp(q->path, d->path_prefix, strlen(d->path_prefix)))
		return 0;
	return 1;
}

const struct rules_dest *rules_secret_match(const struct rules_secret *s, const struct rules_req *q)
{
	size_t i;

	for (i = 0; i < s->n_dests; i++)
		if (rules_dest_match(&s->dests[i], q))
			return &s->dests[i];
	return NULL;
}

const struct rules_dest *rules_allow_match(const struct rules *r, const struct rules_req *q)
{
	size_t i;

	for (i = 0; i < r->n_allow; i++)
		if (rules_dest_match(&r->allow[i], q))
			return &r->allow[i];
	return NULL;
}

static int https_host_in(const struct rules_dest *d, size_t n, const char *host, int port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (d[i].scheme == RULES_HTTPS && d[i].port == port && !strcasecmp(d[i].host, host))
			return 1;
	return 0;
}

int rules_https_host(const struct rules *r, const char *host, int port)
{
	size_t i;

	for (i = 0; i < r->n_secrets; i++)
		if (https_host_in(r->secrets[i].dests, r->secrets[i].n_dests, host, port))
			return 1;
	return https_host_in(r->allow, r->n_allow, host, port);
}

const struct rules_secret *rules_find_secret(const struct rules *r, const char *name,
					     size_t namelen)
{
	size_t i;

	for (i = 0; i < r->n_secrets; i++)
		if (strlen(r->secrets[i].name) == namelen &&
		    !memcmp(r->secrets[i].name, name, namelen))
			return &r->secrets[i];
	return NULL;
}

char *rules_pct_encode(const uint8_t *val, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(len * 3 + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (isalnum(val[i]) || strchr("-._~", val[i] ? val[i] : '!')) {
			*o++ = (char)val[i];
		} else {
			*o++ = '%';
			*o++ = hex[val[i] >> 4];
			*o++ = hex[val[i] & 15];
		}
	}
	*o = 0;
	return out;
}

bool rules_field_value_ok(const uint8_t *val, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((val[i] < 0x20 && val[i] != '\t') || val[i] == 0x7f)
			return false;
	return true;
}

char *rules_render(const struct rules_secret *s, const uint8_t *val, size_t len)
{
	char *out = NULL;
	size_t i;

	if (s->kind == RULES_INJECT_QUERY)
		return rules_pct_encode(val, len);
	for (i = 0; i < len; i++)
		if (val[i] == '\r' || val[i] == '\n' || val[i] == 0)
			return NULL;
	if (s->kind == RULES_INJECT_HEADER) {
		if (!rules_field_value_ok(val, len))
			return NULL;
		const char *at = strstr(s->template, "{}");
		size_t pre = (size_t)(at - s->template), post = strlen(at + 2);

		out = malloc(pre + len + post + 1);
		if (!out)
			return NULL;
		memcpy(out, s->template, pre);
		memcpy(out + pre, val, len);
		memcpy(out + pre + len, at + 2, post + 1);
	} else {
		size_t ul = strlen(s->template), pl = ul + 1 + len;
		uint8_t *plain = malloc(pl);

		out = malloc(6 + 4 * ((pl + 2) / 3) + 1);
		if (!plain || !out) {
			free(plain);
			free(out);
			return NULL;
		}
		memcpy(plain, s->template, ul);
		plain[ul] = ':';
		memcpy(plain + ul + 1, val, len);
		memcpy(out, "Basic ", 6);
		EVP_EncodeBlock((unsigned char *)out + 6, plain, (int)pl);
		OPENSSL_cleanse(plain, pl);
		free(plain);
	}
	return out;
}
