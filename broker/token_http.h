/* SPDX-License-Identifier: Apache-2.0 */
/* broker/token_http.h: one request to an OAuth 2 token endpoint (RFC 6749 section 3.2), as the
 * broker makes it: the endpoint resolved and judged like any destination (dest.h), verified
 * TLS, one deadline for the whole exchange, the answer bounded, and nothing of it ever
 * relayed to a guest. */
#ifndef BULKHEAD_BROKER_TOKEN_HTTP_H
#define BULKHEAD_BROKER_TOKEN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/ssl.h>

#include "broker/cred.h"
#include "broker/policy.h"

#define TOKEN_ANSWER_MAX (64 * 1024) /* the endpoint's whole answer */
#define TOKEN_MIN	 8	     /* characters of an access or refresh token, at least */

struct token_reply {
	char *access_token;   /* malloc'd; the caller wipes */
	char *refresh_token;  /* a rotated one, or NULL */
	long long expires_in; /* seconds; -1 when the answer gave none */
};

/* POSTs FORM (application/x-www-form-urlencoded, without the client's credentials: they are
 * added as D says) to D's token endpoint within TIMEOUT_MS. 0 with OUT filled; or -1 with one
 * line in why that never holds a secret, and *refused set when the endpoint refused the grant
 * itself (invalid_grant, invalid_client, unauthorized_client): trying again will not help. */
int token_http_post(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		    const char *form, int timeout_ms, struct token_reply *out, bool *refused,
		    char *why, size_t whylen);
void token_reply_free(struct token_reply *r);
/* One HTTPS request to EP within TIMEOUT_MS: METHOD PATH with an Authorization of AUTH and a
 * BODY of type CTYPE (each may be NULL), Accept and User-Agent set. 0 with *STATUS and *ANSWER
 * (the answer's JSON; NULL when it is none; the caller frees it); or -1 with why. */
int token_http_call(SSL_CTX *tls, const struct policy *p, const struct rules_dest *ep,
		    const char *method, const char *path, const char *auth, const char *ctype,
		    const char *body, int timeout_ms, int *status, json_t **answer, char *why,
		    size_t whylen);
/* The same with the request REQ as it is (the whole of it, body included), the answer's body as
 * it came: 0 with *STATUS and *BODY (NUL-terminated, *LEN bytes, at most TOKEN_ANSWER_MAX; the
 * caller wipes and frees it), or -1 with why. */
int token_http_send(SSL_CTX *tls, const struct policy *p, const struct rules_dest *ep,
		    const char *req, int timeout_ms, int *status, char **body, size_t *len,
		    char *why, size_t whylen);
/* Seconds from now until ISO ("YYYY-MM-DDTHH:MM:SSZ"; 0 when past), or -1 when it is not one. */
long long token_http_seconds_until(const char *iso);
/* EP's Host field value ("host", "host:port", "[v6]:port"). 0, or -1 when LEN is short. */
int token_http_host(const struct rules_dest *ep, char *out, size_t len);
/* ERROR (an endpoint's "error") when it is one of OAuth 2's codes, else a fixed text ("" for
 * none): an endpoint's own words (its error_description, a message) may hold what it was sent,
 * so they reach neither a guest nor a log. */
const char *token_http_error_code(const char *error);

#endif
