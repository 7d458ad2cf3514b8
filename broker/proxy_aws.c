/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_aws.c: a request whose rule signs it with an AWS key (aws_sigv4.h). At its head:
 * what the guest's SDK signed for must be what the rule signs for (service, region), an s3
 * request must stay within the rule's buckets and prefixes (aws_s3.h), and the payload's hash
 * must be one the broker can sign; presigned URLs are refused. When the head goes: the guest's
 * signature is replaced by the broker's, over the head it sends and the body's hash (the body
 * is held whole to be hashed when the SDK did not say it). */
#include "broker/proxy_internal.h"

#include "broker/aws_s3.h"
#include "broker/aws_sigv4.h"
#include "broker/cred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

/* Whether the (canonical) query has a parameter named NAME, in any case. */
static int has_param(const char *q, size_t n, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i);
		size_t pl = amp ? (size_t)(amp - (q + i)) : n - i;

		if (pl >= nl && !strncasecmp(q + i, name, nl) && (pl == nl || q[i + nl] == '='))
			return 1;
		i += pl + 1;
	}
	return 0;
}

/* Whether field I of H is named like an earlier one. */
static int repeated(const struct head *h, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (h->h[k].name_len == h->h[i].name_len &&
		    !strncasecmp(h->arena + h->h[k].name_off, h->arena + h->h[i].name_off,
				 h->h[i].name_len))
			return 1;
	return 0;
}

/* Fields an s3 key does not sign: what ?acl would do (an object made public is read by
 * anyone), locks that outlive the session, a website redirect. */
static int s3_refused_field(const struct head *h, size_t i)
{
	static const char *const exact[] = { "x-amz-acl", "x-amz-bypass-governance-retention",
					     "x-amz-website-redirect-location", NULL };
	static const char *const prefix[] = { "x-amz-grant-", "x-amz-object-lock-", NULL };
	const char *n = h->arena + h->h[i].name_off;
	size_t nl = h->h[i].name_len;

	for (size_t k = 0; exact[k]; k++)
		if (proxy_head_is(h, i, exact[k]))
			return 1;
	for (size_t k = 0; prefix[k]; k++)
		if (nl > strlen(prefix[k]) && !strncasecmp(n, prefix[k], strlen(prefix[k])))
			return 1;
	return 0;
}

/* The guest's fields the broker reads: its signature's scope, the payload hash, the copy
 * source; an X-Amz-* field given twice (a server may read either one, or both joined) or one
 * the rule's s3 key does not sign is refused. 0, or -1 with the refusal recorded. */
static int guest_fields(struct conn *c, const struct rules_secret *s, const char **copy,
			size_t *copylen)
{
	char region[AWS_NAME_MAX + 1], service[AWS_NAME_MAX + 1];
	int s3 = !strcmp(s->aws_service, "s3");
	const char *why;

	for (size_t i = 0; i < c->req.n; i++) {
		const char *v = proxy_head_val(&c->req, i);
		size_t vl = c->req.h[i].val_len;
		const char *name = c->req.arena + c->req.h[i].name_off;
		int nl = (int)(c->req.h[i].name_len > 64 ? 64 : c->req.h[i].name_len);

		if (c->req.h[i].name_len > 6 && !strncasecmp(name, "x-amz-", 6) &&
		    repeated(&c->req, i)) {
			proxy_fail(c, 400, "%.*s is given more than once", nl, name);
			return -1;
		}
		if (s3 && s3_refused_field(&c->req, i)) {
			proxy_fail(c, 403,
				   "secret %s does not sign %.*s (object ACLs, locks and redirects "
				   "are left to the bucket's owner)",
				   s->name, nl, name);
			return -1;
		}
		if (proxy_head_is(&c->req, i, "authorization")) {
			int r = aws_sigv4_scope_of(v, vl, region, service);

			if (r < 0) {
				proxy_fail(c, 400, "the request's AWS signature does not parse");
				return -1;
			}
			if (r > 0 &&
			    (strcmp(region, s->aws_region) || strcmp(service, s->aws_service))) {
				proxy_fail(c, 403,
					   "the request is signed for %s in %s; secret %s signs "
					   "for %s "
					   "in %s only",
					   service, region, s->name, s->aws_service, s->aws_region);
				return -1;
			}
		} else if (proxy_head_is(&c->req, i, "x-amz-content-sha256")) {
			if (aws_sigv4_payload_ok(v, vl, &why)) {
				proxy_fail(c, 400, "%s", why);
				return -1;
			}
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			snprintf(c->aws_payload, sizeof(c->aws_payload), "%.*s", (int)vl, v);
		} else if (proxy_head_is(&c->req, i, "x-amz-copy-source")) {
			*copy = v;
			*copylen = vl;
		}
	}
	return 0;
}

int proxy_aws_check(struct conn *c, const char *path, const char *query, size_t qlen,
		    const struct rules_secret **inj, size_t n_inj)
{
	const char *copy = NULL;
	size_t copylen = 0;
	char why[400];

	c->aws = NULL;
	c->aws_payload[0] = 0;
	for (size_t k = 0; k < n_inj; k++) {
		if (inj[k]->kind != RULES_INJECT_AWS_SIGV4)
			continue;
		if (c->aws) {
			proxy_fail(c, 403, "secrets %s and %s would both sign the request",
				   c->aws->name, inj[k]->name);
			return -1;
		}
		c->aws = inj[k];
	}
	if (!c->aws)
		return 0;
	/* Query authentication: Signature Version 4's, and version 2's that S3 still takes. */
	if (has_param(query, qlen, "X-Amz-Signature") ||
	    has_param(query, qlen, "X-Amz-Credential") ||
	    has_param(query, qlen, "AWSAccessKeyId") || has_param(query, qlen, "Signature")) {
		proxy_fail(c, 400,
			   "a presigned URL is not signed again: secret %s signs requests in their "
			   "headers (call the API through the SDK instead)",
			   c->aws->name);
		return -1;
	}
	if (c->ws) {
		proxy_fail(c, 400, "a WebSocket is not signed with an AWS key");
		return -1;
	}
	if (guest_fields(c, c->aws, &copy, &copylen))
		return -1;
	if (!strcmp(c->aws->aws_service, "s3") &&
	    aws_s3_allowed(c->aws, c->method, c->host, path, query, qlen, copy, copylen, why,
			   sizeof(why))) {
		proxy_fail(c, 403, "%s", why);
		return -1;
	}
	if (!c->aws_payload[0] && !c->has_body)
		snprintf(c->aws_payload, sizeof(c->aws_payload), "%s", AWS_EMPTY_SHA256);
	return 0;
}

int proxy_aws_sign(struct conn *c)
{
	const struct secret_slot *sl = proxy_secret_get(c, c->aws);
	struct secbuf o = { 0 };
	struct cred_doc d;
	char err[160], payload[72];
	int rc;

	if (!sl) {
		proxy_secret_unavailable(c, c->aws);
		return -1;
	}
	if (cred_doc_parse(VAULT_KIND_AWS_SIGV4, sl->val, sl->len, &d, err, sizeof(err))) {
		proxy_fail(c, 503, "secret %s is not an aws-sigv4 key (vault put --kind aws-sigv4)",
			   c->aws->name);
		return -1;
	}
	if (c->aws_payload[0]) {
		snprintf(payload, sizeof(payload), "%s", c->aws_payload);
	} else { /* the body, held whole, as it goes */
		aws_sigv4_sha256_hex(c->body_buf.b, c->body_buf.n, payload);
	}
	rc = aws_sigv4_sign(
		c->up_head, c->up_head_len,
		&(struct aws_key){ d.access_key_id, d.secret_access_key, d.session_token },
		c->aws->aws_region, c->aws->aws_service, payload, time(NULL), &o);
	cred_doc_free(&d);
	if (rc) {
		secbuf_wipe(&o);
		proxy_fail(c, 502, "cannot sign the request with secret %s", c->aws->name);
		return -1;
	}
	OPENSSL_cleanse(c->up_head, c->up_head_len);
	free(c->up_head);
	c->up_head = o.b;
	c->up_head_len = o.n;
	return 0;
}
