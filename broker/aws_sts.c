/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_sts.c: AssumeRole for an aws-sigv4 entry with a role (aws_sts.h). */
#include "broker/aws_sts.h"

#include "broker/aws_sigv4.h"
#include "lib/errbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <expat.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

enum { F_KEY, F_SECRET, F_TOKEN, F_EXPIRATION, F_CODE, N_FIELDS };

#define DEPTH_MAX 16

/* What is read of STS's answer: the credentials' four fields, or an error's code. */
struct sts_answer {
	XML_Parser x;
	int depth, in;		   /* in: the field being read (-1: none) */
	char stack[DEPTH_MAX][32]; /* the open elements' names (cut) */
	char *f[N_FIELDS];
	size_t n[N_FIELDS];
	int seen[N_FIELDS];
	int bad; /* a field over CRED_FIELD_MAX, a DTD, out of memory */
};

static void on_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
	static const char *const creds[] = { [F_KEY] = "AccessKeyId",
					     [F_SECRET] = "SecretAccessKey",
					     [F_TOKEN] = "SessionToken",
					     [F_EXPIRATION] = "Expiration" };
	struct sts_answer *a = arg;
	const char *parent = a->depth > 0 && a->depth <= DEPTH_MAX ? a->stack[a->depth - 1] : "";

	(void)attrs;
	a->in = -1;
	if (!strcmp(parent, "Credentials"))
		for (int i = 0; i < F_CODE; i++)
			if (!strcmp(name, creds[i]))
				a->in = i;
	if (!strcmp(parent, "Error") && !strcmp(name, "Code"))
		a->in = F_CODE;
	if (a->in >= 0 && a->seen[a->in]++) { /* a field twice: which one would be meant? */
		a->bad = 1;
		XML_StopParser(a->x, XML_FALSE);
	}
	if (a->depth < DEPTH_MAX)
		snprintf(a->stack[a->depth], sizeof(a->stack[0]), "%s", name);
	a->depth++;
}

static void on_end(void *arg, const XML_Char *name)
{
	struct sts_answer *a = arg;

	(void)name;
	a->depth--;
	a->in = -1;
}

static void on_text(void *arg, const XML_Char *s, int len)
{
	struct sts_answer *a = arg;
	char *grown;

	if (a->in < 0 || len <= 0)
		return;
	if (a->n[a->in] + (size_t)len > CRED_FIELD_MAX ||
	    !(grown = realloc(a->f[a->in], a->n[a->in] + (size_t)len + 1))) {
		a->bad = 1;
		XML_StopParser(a->x, XML_FALSE);
		return;
	}
	memcpy(grown + a->n[a->in], s, (size_t)len);
	a->n[a->in] += (size_t)len;
	grown[a->n[a->in]] = 0;
	a->f[a->in] = grown;
}

/* No document type, hence no entity of any kind: STS sends none. */
static void on_doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
		       const XML_Char *pubid, int internal)
{
	struct sts_answer *a = arg;

	(void)name;
	(void)sysid;
	(void)pubid;
	(void)internal;
	a->bad = 1;
	XML_StopParser(a->x, XML_FALSE);
}

static int read_answer(struct sts_answer *a, const char *body, size_t len)
{
	int ok;

	memset(a, 0, sizeof(*a));
	a->in = -1;
	if (!(a->x = XML_ParserCreate("UTF-8")))
		return -1;
	XML_SetUserData(a->x, a);
	XML_SetElementHandler(a->x, on_start, on_end);
	XML_SetCharacterDataHandler(a->x, on_text);
	XML_SetStartDoctypeDeclHandler(a->x, on_doctype);
	ok = XML_Parse(a->x, body, (int)len, XML_TRUE) == XML_STATUS_OK && !a->bad;
	XML_ParserFree(a->x);
	return ok ? 0 : -1;
}

static void answer_free(struct sts_answer *a)
{
	for (int i = 0; i < N_FIELDS; i++)
		if (a->f[i]) {
			OPENSSL_cleanse(a->f[i], a->n[i]);
			free(a->f[i]);
		}
}

/* Printable ASCII without blanks, at least MIN characters. */
static int printable(const char *s, size_t min)
{
	size_t n = s ? strlen(s) : 0;

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return n >= min;
}

/* The form: the role, a session name of its own, the lifetime, the session policy. */
static char *form(const struct cred_doc *d, const char *policy)
{
	unsigned char r[6];
	char *role = rules_pct_encode((const uint8_t *)d->role_arn, strlen(d->role_arn));
	char *pol = policy ? rules_pct_encode((const uint8_t *)policy, strlen(policy)) : NULL;
	char *f = NULL;

	if (RAND_bytes(r, sizeof(r)) == 1 && role && (!policy || pol) &&
	    asprintf(&f,
		     "Action=AssumeRole&DurationSeconds=%d%s%s&RoleArn=%s&RoleSessionName=bulkhead-"
		     "%02x%02x%02x%02x%02x%02x&Version=2011-06-15",
		     d->duration, pol ? "&Policy=" : "", pol ? pol : "", role, r[0], r[1], r[2],
		     r[3], r[4], r[5]) < 0)
		f = NULL;
	free(role);
	free(pol);
	return f;
}

/* The whole request: signed with D's key for STS in D's region. */
static char *request(const struct cred_doc *d, const char *body)
{
	char host[RULES_HOST_MAX + 16], *head = NULL, *req = NULL, hash[65];
	struct secbuf o = { 0 };

	aws_sigv4_sha256_hex(body, strlen(body), hash);
	if (token_http_host(&d->endpoint, host, sizeof(host)) ||
	    asprintf(&head,
		     "POST %s HTTP/1.1\r\nHost: %s\r\n"
		     "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n",
		     d->path, host) < 0)
		return NULL;
	if (!aws_sigv4_sign(
		    head, strlen(head),
		    &(struct aws_key){ d->access_key_id, d->secret_access_key, d->session_token },
		    d->sts_region, "sts", hash, time(NULL), &o) &&
	    asprintf(&req,
		     "%.*sAccept: text/xml\r\nUser-Agent: bulkhead-broker\r\nConnection: close\r\n"
		     "Content-Length: %zu\r\n\r\n%s",
		     (int)o.n, o.b, strlen(body), body) < 0)
		req = NULL;
	free(head);
	secbuf_wipe(&o);
	return req;
}

/* STS's answer to a good request: the credentials as an aws-sigv4 document. */
static int take(const struct sts_answer *a, const struct cred_doc *d, struct token_reply *out,
		char *why, size_t whylen)
{
	json_t *doc;

	if (!printable(a->f[F_KEY], 16) || !printable(a->f[F_SECRET], 16) ||
	    !printable(a->f[F_TOKEN], TOKEN_MIN))
		return errbuf_fail(why, whylen, -1, "STS %s: no usable credentials in its answer",
				   d->endpoint.host);
	doc = json_pack("{s:s, s:s, s:s}", "access_key_id", a->f[F_KEY], "secret_access_key",
			a->f[F_SECRET], "session_token", a->f[F_TOKEN]);
	out->access_token = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!out->access_token)
		return errbuf_fail(why, whylen, -1, "out of memory");
	/* Never longer than asked (an expiry years ahead would never be renewed); one already
	 * past is a failure, tried again after the backoff, not a token to sign with. */
	out->expires_in = token_http_seconds_until(a->f[F_EXPIRATION]);
	if (out->expires_in < 0 || out->expires_in > d->duration)
		out->expires_in = d->duration;
	if (out->expires_in == 0) {
		OPENSSL_cleanse(out->access_token, strlen(out->access_token));
		free(out->access_token);
		out->access_token = NULL;
		return errbuf_fail(why, whylen, -1, "STS %s gave credentials that have expired",
				   d->endpoint.host);
	}
	return 0;
}

int aws_sts_answer(const struct cred_doc *d, int status, const char *got, size_t n,
		   struct token_reply *out, bool *refused, char *why, size_t whylen)
{
	static const char word[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.";
	struct sts_answer a;
	const char *code;
	int rc = -1;

	*refused = false;
	if (read_answer(&a, got, n)) {
		errbuf_set(why, whylen, "STS %s answered %d, not in STS's XML", d->endpoint.host,
			   status);
		goto out;
	}
	if (status == 200) {
		rc = take(&a, d, out, why, whylen);
		goto out;
	}
	/* Its code only (a word); its message may repeat what it was sent. A refusal of the key,
	 * the role or the policy stays one until the entry changes; throttling and 5xx pass. */
	code = a.f[F_CODE];
	*refused = status >= 400 && status < 500 && status != 429 &&
		   !(code && strstr(code, "Throttl"));
	errbuf_set(why, whylen, "STS %s answered %d (%s)", d->endpoint.host, status,
		   code && *code && strlen(code) <= 64 && strspn(code, word) == strlen(code)
			   ? code
			   : "no code");
out:
	answer_free(&a);
	return rc;
}

int aws_sts_assume(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		   const char *policy, int timeout_ms, struct token_reply *out, bool *refused,
		   char *why, size_t whylen)
{
	char *body = form(d, policy), *req = body ? request(d, body) : NULL, *got = NULL;
	size_t n = 0;
	int status = 0, rc = -1;

	*refused = false;
	if (!req)
		errbuf_set(why, whylen, "out of memory");
	else if (!token_http_send(tls, p, &d->endpoint, req, timeout_ms, &status, &got, &n, why,
				  whylen))
		rc = aws_sts_answer(d, status, got, n, out, refused, why, whylen);
	if (got) {
		OPENSSL_cleanse(got, n);
		free(got);
	}
	if (req) {
		OPENSSL_cleanse(req, strlen(req));
		free(req);
	}
	if (body) {
		OPENSSL_cleanse(body, strlen(body));
		free(body);
	}
	return rc;
}
