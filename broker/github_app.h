/* SPDX-License-Identifier: Apache-2.0 */
/* broker/github_app.h: installation tokens of a GitHub App (cred.h "github-app"): a JWT signed
 * with the App's RSA key (RS256, nine minutes, as GitHub takes) asks
 * POST /app/installations/ID/access_tokens for a token narrowed to the rule's repositories and
 * permissions; DELETE /installation/token revokes it. Both through token_http_call. */
#ifndef BULKHEAD_BROKER_GITHUB_APP_H
#define BULKHEAD_BROKER_GITHUB_APP_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "broker/cred.h"
#include "broker/policy.h"
#include "broker/token_http.h"

/* Mints a token narrowed as NARROW says (the rule's "github" JSON, or NULL: the installation's
 * whole reach). 0 with OUT (access_token, expires_in); or -1 with why and *refused when GitHub
 * refused the App itself (401, 403, 404: asking again will not help). */
int github_app_mint(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		    const char *narrow, int timeout_ms, struct token_reply *out, bool *refused,
		    char *why, size_t whylen);
/* Revokes TOKEN. 0, or -1 with why. */
int github_app_revoke(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		      const char *token, int timeout_ms, char *why, size_t whylen);

#endif
