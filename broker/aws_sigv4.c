/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_sigv4.c: Signature Version 4 over a request head the broker built (aws_sigv4.h).
 * The canonical request is made from the head's own bytes, so what is signed is what goes. */
#include "broker/aws_sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#define FIELDS_MAX 160 /* a head's fields, and the three the signature adds */

static const char hexd[] = "0123456789abcdef";

static void hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexd[b[i] >> 4];
		out[2 * i + 1] = hexd[b[i] & 15];
	}
	out[2 * n] = 0;
}

void aws_sigv4_sha256_hex(const void *b, size_t n, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)(n ? b : ""), n, md);
	hex(md, sizeof(md), out);
}

int aws_sigv4_scope_of(const char *val, size_t len, char region[AWS_NAME_MAX + 1],
		       char service[AWS_NAME_MAX + 1])
{
	static const char scheme[] = "AWS4-HMAC-SHA256 ";
	const char *p, *end = val + len, *part[5];
	size_t n[5], k = 0;

	if (len < sizeof(scheme) - 1 || strncmp(val, scheme, sizeof(scheme) - 1))
		return 0;
	p = memmem(val, len, "Credential=", 11);
	if (!p)
		return -1;
	p += 11;
	/* ID/DATE/REGION/SERVICE/aws4_request, up to ',' or the end. */
	while (k < 5) {
		const char *q = p;

		while (q < end && *q != '/' && *q != ',' && *q != ' ')
			q++;
		part[k] = p;
		n[k++] = (size_t)(q - p);
		if (q >= end || *q != '/')
			break;
		p = q + 1;
	}
	if (k != 5 || n[4] != 12 || strncmp(part[4], "aws4_request", 12) || !n[2] ||
	    n[2] > AWS_NAME_MAX || !n[3] || n[3] > AWS_NAME_MAX)
		return -1;
	memcpy(region, part[2], n[2]);
	region[n[2]] = 0;
	memcpy(service, part[3], n[3]);
	service[n[3]] = 0;
	return 1;
}

int aws_sigv4_payload_ok(const char *val, size_t len, const char **why)
{
	size_t i;

	while (len && (val[len - 1] == ' ' || val[len - 1] == '\t'))
		len--;
	if (len == 64) {
		for (i = 0; i < 64 && isxdigit((unsigned char)val[i]); i++)
			;
		if (i == 64)
			return 0;
	}
	if ((len == 16 && !memcmp(val, "UNSIGNED-PAYLOAD", 16)) ||
	    (len == 34 && !memcmp(val, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", 34)))
		return 0;
	*why = len > 10 && !memcmp(val, "STREAMING-", 10)
		       ? "aws-chunked bodies whose chunks are signed (STREAMING-AWS4-HMAC-SHA256-"
			 "PAYLOAD) cannot be signed again by the broker: use the SDK's default "
			 "over HTTPS (UNSIGNED-PAYLOAD) or a payload hash"
		       : "x-amz-content-sha256 must be a hex SHA-256, UNSIGNED-PAYLOAD or "
			 "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
	return -1;
}

/* One field of the head: its name and value (trimmed), both in the head. */
struct field {
	const char *name, *val;
	size_t nlen, vlen;
};

static int unreserved(unsigned char ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

/* URI-encodes N bytes of S as SigV4 asks (RFC 3986 unreserved kept, '/' too when KEEP_SLASH). */
static void uri_encode(struct secbuf *o, const char *s, size_t n, int keep_slash)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		char e[3] = { '%', "0123456789ABCDEF"[ch >> 4], "0123456789ABCDEF"[ch & 15] };

		if (unreserved(ch) || (keep_slash && ch == '/'))
			secbuf_add(o, s + i, 1);
		else
			secbuf_add(o, e, 3);
	}
}

static int hexval(int ch)
{
	return ch >= '0' && ch <= '9'	? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
					: -1;
}

/* N bytes of S with %XX decoded (a '%' that starts no escape stays), then encoded again. */
static void reencode(struct secbuf *o, const char *s, size_t n)
{
	struct secbuf d = { 0 };

	for (size_t i = 0; i < n; i++) {
		int a, b;

		if (s[i] == '%' && i + 2 < n && (a = hexval((unsigned char)s[i + 1])) >= 0 &&
		    (b = hexval((unsigned char)s[i + 2])) >= 0) {
			char ch = (char)(a * 16 + b);

			secbuf_add(&d, &ch, 1);
			i += 2;
		} else {
			secbuf_add(&d, s + i, 1);
		}
	}
	uri_encode(o, d.b ? d.b : "", d.n, 0);
	if (d.oom)
		o->oom = 1;
	secbuf_wipe(&d);
}

struct param {
	char *enc; /* "key=value", each part encoded */
	size_t klen;
};

static int param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	size_t kl = x->klen < y->klen ? x->klen : y->klen;
	int r = memcmp(x->enc, y->enc, kl);

	if (r || x->klen != y->klen)
		return r ? r : (x->klen < y->klen ? -1 : 1);
	return strcmp(x->enc + x->klen, y->enc + y->klen);
}

/* The canonical query string: each parameter decoded and encoded again, sorted by key, then
 * value; a parameter without '=' has an empty value. */
static int canonical_query(struct secbuf *o, const char *q, size_t n)
{
	struct param *ps = NULL;
	size_t np = 0, i = 0;
	int rc = 0;

	while (i < n) {
		const char *amp = memchr(q + i, '&', n - i), *eq;
		size_t pl = amp ? (size_t)(amp - (q + i)) : n - i;
		struct secbuf e = { 0 };
		struct param *grown;

		if (pl) {
			eq = memchr(q + i, '=', pl);
			reencode(&e, q + i, eq ? (size_t)(eq - (q + i)) : pl);
			size_t kl = e.n;
			secbuf_add(&e, "=", 1);
			if (eq)
				reencode(&e, eq + 1, pl - (size_t)(eq + 1 - (q + i)));
			secbuf_add(&e, "", 1);
			grown = realloc(ps, (np + 1) * sizeof(*ps));
			if (e.oom || !grown) {
				secbuf_wipe(&e);
				if (grown)
					ps = grown;
				rc = -1;
				break;
			}
			ps = grown;
			ps[np].enc = e.b;
			ps[np++].klen = kl;
		}
		i += pl + 1;
	}
	if (!rc && np)
		qsort(ps, np, sizeof(*ps), param_cmp);
	for (i = 0; i < np; i++) {
		if (!rc) {
			if (i)
				secbuf_add(o, "&", 1);
			secbuf_str(o, ps[i].enc);
		}
		OPENSSL_cleanse(ps[i].enc, strlen(ps[i].enc));
		free(ps[i].enc);
	}
	free(ps);
	return rc;
}

static int lname_is(const struct field *f, const char *name)
{
	return f->nlen == strlen(name) && !strncasecmp(f->name, name, f->nlen);
}

/* Whether the signature covers F: Host, Content-Type, Content-MD5, X-Amz-*. */
static int signed_field(const struct field *f)
{
	return lname_is(f, "host") || lname_is(f, "content-type") || lname_is(f, "content-md5") ||
	       (f->nlen > 6 && !strncasecmp(f->name, "x-amz-", 6));
}

static int field_cmp(const void *a, const void *b)
{
	const struct field *x = *(const struct field *const *)a,
			   *y = *(const struct field *const *)b;
	size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
	int r = strncasecmp(x->name, y->name, n);

	return r ? r : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

/* NAME (lower case) and the values of every field so named (sorted by name: the same names are
 * next to each other), trimmed, inner runs of blanks made one, joined by ','. */
static void canonical_fields(struct secbuf *o, struct secbuf *names, struct field **s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;

		for (size_t k = 0; k < s[i]->nlen; k++) {
			char ch = (char)tolower((unsigned char)s[i]->name[k]);

			secbuf_add(o, &ch, 1);
			secbuf_add(names, &ch, 1);
		}
		secbuf_add(o, ":", 1);
		for (; j < n && !field_cmp(&s[i], &s[j]); j++) {
			int blank = 0;

			if (j > i)
				secbuf_add(o, ",", 1);
			for (size_t k = 0; k < s[j]->vlen; k++) {
				char ch = s[j]->val[k];

				if (ch == ' ' || ch == '\t') {
					blank = 1;
					continue;
				}
				if (blank)
					secbuf_add(o, " ", 1);
				blank = 0;
				secbuf_add(o, &ch, 1);
			}
		}
		secbuf_add(o, "\n", 1);
		i = j;
		if (i < n)
			secbuf_add(names, ";", 1);
	}
}

static int hmac(const void *key, size_t klen, const char *msg, size_t mlen, unsigned char out[32])
{
	unsigned int n = 32;

	return HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &n) ? 0
											     : -1;
}

/* Parses HEAD's fields into F (at most FIELDS_MAX - 3); the request line's method and target
 * into *M, *T. Returns the number of fields, or -1. *END: where the fields end (the blank
 * line, or LEN). */
static int parse(const char *head, size_t len, struct field *f, const char **m, size_t *ml,
		 const char **t, size_t *tl, size_t *end)
{
	const char *nl = memmem(head, len, "\r\n", 2), *sp, *sp2;
	size_t at, n = 0;

	if (!nl || !(sp = memchr(head, ' ', (size_t)(nl - head))) ||
	    !(sp2 = memchr(sp + 1, ' ', (size_t)(nl - sp - 1))))
		return -1;
	*m = head;
	*ml = (size_t)(sp - head);
	*t = sp + 1;
	*tl = (size_t)(sp2 - sp - 1);
	at = (size_t)(nl - head) + 2;
	while (at < len && !(len - at >= 2 && head[at] == '\r' && head[at + 1] == '\n')) {
		const char *e = memmem(head + at, len - at, "\r\n", 2),
			   *c = memchr(head + at, ':', len - at);
		size_t v;

		if (!e || !c || c > e || c == head + at || n == FIELDS_MAX - 3)
			return -1;
		f[n].name = head + at;
		f[n].nlen = (size_t)(c - (head + at));
		for (v = (size_t)(c - head) + 1; v < (size_t)(e - head) && head[v] == ' '; v++)
			;
		f[n].val = head + v;
		f[n].vlen = (size_t)(e - head) - v;
		while (f[n].vlen &&
		       (f[n].val[f[n].vlen - 1] == ' ' || f[n].val[f[n].vlen - 1] == '\t'))
			f[n].vlen--;
		n++;
		at = (size_t)(e - head) + 2;
	}
	*end = at;
	return (int)n;
}

int aws_sigv4_sign(const char *head, size_t len, const struct aws_key *k, const char *region,
		   const char *service, const char *payload, time_t now, struct secbuf *out)
{
	struct field f[FIELDS_MAX], *sorted[FIELDS_MAX];
	struct secbuf cr = { 0 }, names = { 0 }, sts = { 0 }, key = { 0 };
	const char *m, *t, *qm;
	size_t ml, tl, end, ns = 0, i;
	char date[17], scope[3 * AWS_NAME_MAX], crh[65], sig[65], line[512];
	unsigned char md[32], kd[32];
	struct tm tm;
	int n = parse(head, len, f, &m, &ml, &t, &tl, &end), rc = -1;

	/* Nothing may follow the head's end: it is the head alone. */
	if (n < 0 || (end < len && len - end != 2) || !gmtime_r(&now, &tm) ||
	    !strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm))
		return -1;
	/* What the guest's SDK said goes; the broker's own go in. */
	for (int j = 0; j < n; j++)
		if (!lname_is(&f[j], "authorization") && !lname_is(&f[j], "x-amz-date") &&
		    !lname_is(&f[j], "x-amz-security-token"))
			f[ns++] = f[j];
	f[ns++] = (struct field){ "X-Amz-Date", date, 10, 16 };
	if (k->token)
		f[ns++] = (struct field){ "X-Amz-Security-Token", k->token, 20, strlen(k->token) };
	for (i = 0, n = 0; i < ns; i++)
		if (signed_field(&f[i]))
			sorted[n++] = &f[i];
	qsort(sorted, (size_t)n, sizeof(sorted[0]), field_cmp);

	/* The canonical request. */
	secbuf_add(&cr, m, ml);
	secbuf_add(&cr, "\n", 1);
	qm = memchr(t, '?', tl);
	if (!tl || t[0] != '/')
		goto out;
	if (!strcmp(service, "s3"))
		secbuf_add(&cr, t, qm ? (size_t)(qm - t) : tl);
	else
		uri_encode(&cr, t, qm ? (size_t)(qm - t) : tl, 1);
	secbuf_add(&cr, "\n", 1);
	if (qm && canonical_query(&cr, qm + 1, tl - (size_t)(qm + 1 - t)))
		goto out;
	secbuf_add(&cr, "\n", 1);
	canonical_fields(&cr, &names, sorted, (size_t)n);
	secbuf_add(&cr, "\n", 1);
	secbuf_add(&names, "", 1);
	secbuf_str(&cr, names.b ? names.b : "");
	secbuf_add(&cr, "\n", 1);
	secbuf_str(&cr, payload);
	if (cr.oom || names.oom)
		goto out;
	aws_sigv4_sha256_hex(cr.b, cr.n, crh);

	/* The string to sign, and the key derived for this day, region and service. */
	snprintf(scope, sizeof(scope), "%.8s/%s/%s/aws4_request", date, region, service);
	secbuf_str(&sts, "AWS4-HMAC-SHA256\n");
	secbuf_str(&sts, date);
	secbuf_str(&sts, "\n");
	secbuf_str(&sts, scope);
	secbuf_str(&sts, "\n");
	secbuf_str(&sts, crh);
	secbuf_str(&key, "AWS4");
	secbuf_str(&key, k->secret);
	if (sts.oom || key.oom || hmac(key.b, key.n, date, 8, kd) ||
	    hmac(kd, 32, region, strlen(region), kd) ||
	    hmac(kd, 32, service, strlen(service), kd) || hmac(kd, 32, "aws4_request", 12, kd) ||
	    hmac(kd, 32, sts.b, sts.n, md))
		goto out;
	hex(md, 32, sig);

	/* The head again: the request line and the fields kept, then the signature's. */
	secbuf_add(out, head, (size_t)((const char *)memmem(head, len, "\r\n", 2) - head) + 2);
	for (i = 0; i < ns; i++) {
		secbuf_add(out, f[i].name, f[i].nlen);
		secbuf_add(out, ": ", 2);
		secbuf_add(out, f[i].val, f[i].vlen);
		secbuf_add(out, "\r\n", 2);
	}
	snprintf(line, sizeof(line), "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, ", k->id,
		 scope);
	secbuf_str(out, line);
	secbuf_str(out, "SignedHeaders=");
	secbuf_str(out, names.b);
	secbuf_str(out, ", Signature=");
	secbuf_str(out, sig);
	secbuf_str(out, "\r\n");
	secbuf_add(out, head + end, len - end); /* the blank line, when the head had it */
	rc = out->oom ? -1 : 0;
out:
	OPENSSL_cleanse(kd, sizeof(kd));
	secbuf_wipe(&cr);
	secbuf_wipe(&names);
	secbuf_wipe(&sts);
	secbuf_wipe(&key);
	return rc;
}
