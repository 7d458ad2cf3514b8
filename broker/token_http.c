/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_http.c: one token request (token_http.h): the form POSTed with HTTP/1.1 over
 * verified TLS, the answer parsed by http_parser and jansson, each field checked. */
#include "broker/token_http.h"

#include "broker/dest.h"
#include "broker/upstream_tls.h"
#include "lib/errbuf.h"
#include "lib/mono.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

struct answer {
	char *body;
	size_t len;
	int done, too_big;
};

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct answer *a = p->data;

	if (a->len + n > TOKEN_ANSWER_MAX) {
		a->too_big = 1;
		return -1;
	}
	memcpy(a->body + a->len, at, n);
	a->len += n;
	return 0;
}

static int on_done(http_parser *p)
{
	((struct answer *)p->data)->done = 1;
	return 0;
}

static const http_parser_settings answer_settings = {
	.on_body = on_body,
	.on_message_complete = on_done,
};

/* The client's credentials, as D says: "Basic base64(id:secret)" with both form-encoded
 * (RFC 6749 2.3.1), or nothing (they go in the form). */
static char *basic_auth(const struct cred_doc *d)
{
	char *id = rules_pct_encode((const uint8_t *)d->client_id, strlen(d->client_id));
	char *sec = d->client_secret ? rules_pct_encode((const uint8_t *)d->client_secret,
							strlen(d->client_secret))
				     : strdup("");
	char *plain = NULL, *out = NULL;
	int n;

	if (id && sec && (n = asprintf(&plain, "%s:%s", id, sec)) >= 0 &&
	    (out = malloc(4 * ((size_t)n + 2) / 3 + 8)))
		EVP_EncodeBlock((unsigned char *)out, (unsigned char *)plain, n);
	if (plain) {
		OPENSSL_cleanse(plain, strlen(plain));
		free(plain);
	}
	if (sec)
		OPENSSL_cleanse(sec, strlen(sec));
	free(id);
	free(sec);
	return out;
}

/* The form's client part when D puts the client's credentials in the body (else ""). */
static char *client_in_form(const struct cred_doc *d)
{
	char *id, *sec = NULL, *extra = NULL;

	if (!d->auth_in_body)
		return strdup("");
	id = rules_pct_encode((const uint8_t *)d->client_id, strlen(d->client_id));
	if (d->client_secret)
		sec = rules_pct_encode((const uint8_t *)d->client_secret, strlen(d->client_secret));
	if (!id || (d->client_secret && !sec) ||
	    asprintf(&extra, "&client_id=%s%s%s", id, sec ? "&client_secret=" : "",
		     sec ? sec : "") < 0)
		extra = NULL;
	free(id);
	if (sec) {
		OPENSSL_cleanse(sec, strlen(sec));
		free(sec);
	}
	return extra;
}

/* The request, whole: METHOD PATH, the headers every call carries, AUTH and BODY. */
static char *request(const struct rules_dest *ep, const char *method, const char *path,
		     const char *auth, const char *ctype, const char *body)
{
	char host[RULES_HOST_MAX + 16], *req = NULL;
	size_t n = body ? strlen(body) : 0;

	if (token_http_host(ep, host, sizeof(host)))
		return NULL;
	if (asprintf(&req,
		     "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n"
		     "User-Agent: bulkhead-broker\r\nConnection: close\r\n%s%s%s"
		     "%s%s%sContent-Length: %zu\r\n\r\n%s",
		     method, path, host, auth ? "Authorization: " : "", auth ? auth : "",
		     auth ? "\r\n" : "", ctype ? "Content-Type: " : "", ctype ? ctype : "",
		     ctype ? "\r\n" : "", n, body ? body : "") < 0)
		req = NULL;
	return req;
}

static void sock_timeouts(int fd, int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (ms <= 0)
		tv = (struct timeval){ 0, 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Sends REQ and reads the answer into A within DEADLINE; its status, or -1 with why. */
static int exchange(SSL *ssl, int fd, const char *req, int64_t deadline, struct answer *a,
		    const char *host, char *why, size_t whylen)
{
	http_parser p;
	char buf[16384];
	size_t off = 0, n = strlen(req);

	while (off < n) {
		int w;

		sock_timeouts(fd, deadline - mono_ms());
		w = SSL_write(ssl, req + off, (int)(n - off));
		if (w <= 0)
			return errbuf_fail(why, whylen, -1, "token endpoint %s: sending failed",
					   host);
		off += (size_t)w;
	}
	http_parser_init(&p, HTTP_RESPONSE);
	p.data = a;
	while (!a->done) {
		int r;

		if (mono_ms() >= deadline)
			return errbuf_fail(why, whylen, -1, "token endpoint %s: no answer in time",
					   host);
		sock_timeouts(fd, deadline - mono_ms());
		r = SSL_read(ssl, buf, sizeof(buf));
		if (r <= 0) {
			http_parser_execute(&p, &answer_settings, NULL, 0); /* a close may end it */
			if (a->done)
				break;
			return errbuf_fail(
				why, whylen, -1,
				mono_ms() >= deadline - 20
					? "token endpoint %s: no answer in time"
					: "token endpoint %s: the connection ended before the "
					  "answer did",
				host);
		}
		if (http_parser_execute(&p, &answer_settings, buf, (size_t)r) != (size_t)r &&
		    !a->done)
			return errbuf_fail(why, whylen, -1,
					   a->too_big ? "token endpoint %s: answer over %d bytes"
						      : "token endpoint %s: malformed HTTP answer",
					   host, TOKEN_ANSWER_MAX);
	}
	return (int)p.status_code;
}

const char *token_http_error_code(const char *error)
{
	/* RFC 6749 5.2 and 6750 3.1: no other word of the endpoint's reaches a log or a guest. */
	static const char *const codes[] = { "invalid_request",		"invalid_client",
					     "invalid_grant",		"unauthorized_client",
					     "unsupported_grant_type",	"invalid_scope",
					     "temporarily_unavailable", "server_error",
					     "access_denied",		"invalid_token",
					     "insufficient_scope",	NULL };

	for (size_t i = 0; error && codes[i]; i++)
		if (!strcmp(error, codes[i]))
			return codes[i];
	return error ? "an error code of its own" : "";
}

/* Whether S (N bytes) can be a token: TOKEN_MIN to CRED_FIELD_MAX printable ASCII characters,
 * a space only where SPACE allows (a refresh token: RFC 6749 A.17). A shorter one would make
 * the scrubber replace common text in every answer. */
static bool token_text(const char *s, size_t n, bool space)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < (space ? 0x20 : 0x21) || (unsigned char)s[i] > 0x7e)
			return false;
	return n >= TOKEN_MIN && n <= CRED_FIELD_MAX;
}

/* A good answer's fields into OUT. A rotated refresh token is taken first and kept even when
 * the rest is refused: the endpoint has ended the one before it. An expires_in that is not a
 * number of seconds counts as none (the token is then used until a 401). */
static int read_reply(json_t *o, struct token_reply *out, const char *host, char *why,
		      size_t whylen)
{
	json_t *at = json_object_get(o, "access_token"), *rt = json_object_get(o, "refresh_token"),
	       *ex = json_object_get(o, "expires_in");

	if (json_is_string(rt) && token_text(json_string_value(rt), json_string_length(rt), true) &&
	    !(out->refresh_token = strdup(json_string_value(rt))))
		return errbuf_fail(why, whylen, -1, "out of memory");
	if (rt && !out->refresh_token)
		return errbuf_fail(why, whylen, -1, "token endpoint %s: bad refresh_token", host);
	if (!json_is_string(at) ||
	    !token_text(json_string_value(at), json_string_length(at), false))
		return errbuf_fail(why, whylen, -1,
				   "token endpoint %s: no usable access_token (%d to %d printable "
				   "ASCII characters)",
				   host, TOKEN_MIN, CRED_FIELD_MAX);
	out->expires_in = -1;
	if (json_is_number(ex) && json_number_value(ex) >= 0 && json_number_value(ex) < 1e12)
		out->expires_in = (long long)json_number_value(ex);
	else if (json_is_string(ex) && json_string_length(ex) && json_string_length(ex) < 12 &&
		 strspn(json_string_value(ex), "0123456789") == json_string_length(ex))
		out->expires_in = atoll(json_string_value(ex));
	else if (json_is_number(ex))
		out->expires_in = 0; /* negative: expired already */
	if (!(out->access_token = strdup(json_string_value(at))))
		return errbuf_fail(why, whylen, -1, "out of memory");
	return 0;
}

static void wipe(char **s)
{
	if (*s) {
		OPENSSL_cleanse(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

int token_http_send(SSL_CTX *tls, const struct policy *p, const struct rules_dest *ep,
		    const char *req, int timeout_ms, int *status, char **body, size_t *len,
		    char *why, size_t whylen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct answer a = { 0 };
	SSL *ssl = NULL;
	int fd, rc = -1;

	*body = NULL;
	*len = 0;
	fd = dest_connect(ep, p, timeout_ms, why, whylen);
	if (fd < 0)
		return -1;
	sock_timeouts(fd, deadline - mono_ms());
	ssl = tlsup_connect(tls, NULL, fd, ep->host, ep->port, 0, why, whylen);
	if (!ssl)
		goto out;
	if (!(a.body = malloc(TOKEN_ANSWER_MAX + 1))) {
		errbuf_set(why, whylen, "out of memory");
		goto out;
	}
	*status = exchange(ssl, fd, req, deadline, &a, ep->host, why, whylen);
	if (*status < 0)
		goto out;
	a.body[a.len] = 0;
	*body = a.body;
	*len = a.len;
	a.body = NULL;
	rc = 0;
out:
	if (a.body) {
		OPENSSL_cleanse(a.body, a.len);
		free(a.body);
	}
	if (ssl)
		tlsup_close(ssl);
	close(fd);
	return rc;
}

int token_http_call(SSL_CTX *tls, const struct policy *p, const struct rules_dest *ep,
		    const char *method, const char *path, const char *auth, const char *ctype,
		    const char *body, int timeout_ms, int *status, json_t **answer, char *why,
		    size_t whylen)
{
	char *req = request(ep, method, path, auth, ctype, body), *got = NULL;
	size_t n = 0;
	int rc;

	*answer = NULL;
	if (!req)
		return errbuf_fail(why, whylen, -1, "out of memory");
	rc = token_http_send(tls, p, ep, req, timeout_ms, status, &got, &n, why, whylen);
	OPENSSL_cleanse(req, strlen(req));
	free(req);
	/* Integers past 64 bits as reals: an answer is not refused whole for one of them. */
	if (!rc)
		*answer = json_loadb(got, n, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, NULL);
	if (got) {
		OPENSSL_cleanse(got, n);
		free(got);
	}
	return rc;
}

long long token_http_seconds_until(const char *iso)
{
	struct tm tm = { 0 };
	const char *end = iso ? strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	long long at;

	if (!end || *end)
		return -1;
	at = (long long)timegm(&tm);
	return at > (long long)time(NULL) ? at - (long long)time(NULL) : 0;
}

int token_http_host(const struct rules_dest *ep, char *out, size_t len)
{
	int v6 = strchr(ep->host, ':') != NULL;
	int n = ep->port == 443 ? snprintf(out, len, v6 ? "[%s]" : "%s", ep->host)
				: snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", ep->host, ep->port);

	return n > 0 && (size_t)n < len ? 0 : -1;
}

int token_http_post(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		    const char *form, int timeout_ms, struct token_reply *out, bool *refused,
		    char *why, size_t whylen)
{
	const char *host = d->endpoint.host;
	char *auth = NULL, *basic = NULL, *extra = client_in_form(d), *body = NULL;
	json_t *o = NULL;
	int status, rc = -1;

	memset(out, 0, sizeof(out[0]));
	*refused = false;
	if (!extra || (!d->auth_in_body && !(basic = basic_auth(d))) ||
	    (basic && asprintf(&auth, "Basic %s", basic) < 0) ||
	    asprintf(&body, "%s%s", form, extra) < 0) {
		errbuf_set(why, whylen, "out of memory");
		auth = body = NULL;
		goto out;
	}
	if (token_http_call(tls, p, &d->endpoint, "POST", d->path, auth,
			    "application/x-www-form-urlencoded", body, timeout_ms, &status, &o, why,
			    whylen))
		goto out;
	if (status != 200) {
		const char *code =
			token_http_error_code(json_string_value(json_object_get(o, "error")));

		*refused = (status == 400 || status == 401) &&
			   (!strcmp(code, "invalid_grant") || !strcmp(code, "invalid_client") ||
			    !strcmp(code, "unauthorized_client"));
		errbuf_set(why, whylen, "token endpoint %s answered %d%s%s", host, status,
			   code[0] ? ": " : "", code);
		goto out;
	}
	if (!json_is_object(o)) {
		errbuf_set(why, whylen, "token endpoint %s: the answer is not a JSON object", host);
		goto out;
	}
	rc = read_reply(o, out, host, why, whylen);
out:
	json_decref(o);
	wipe(&auth);
	wipe(&basic);
	wipe(&extra);
	wipe(&body);
	return rc;
}

void token_reply_free(struct token_reply *r)
{
	wipe(&r->access_token);
	wipe(&r->refresh_token);
}
