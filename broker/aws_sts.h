/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_sts.h: temporary credentials for an aws-sigv4 entry with a role (cred.h): STS's
 * AssumeRole (the Query API, version 2011-06-15), signed with the entry's own key, asked by
 * the broker once per session and scope (token_cache.h), with the rule's session policy, so
 * that what a session can do is what the role and that policy both allow. The answer (XML,
 * read with expat) never reaches a guest; the credentials it holds are injected by no one:
 * the broker signs with them (aws_sigv4.h). */
#ifndef BULKHEAD_BROKER_AWS_STS_H
#define BULKHEAD_BROKER_AWS_STS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "broker/cred.h"
#include "broker/policy.h"
#include "broker/token_http.h"

/* Assumes D's role with POLICY (the rule's session policy, JSON, or NULL) within TIMEOUT_MS.
 * 0 with OUT's access_token an aws-sigv4 document of the temporary credentials
 * ({"access_key_id", "secret_access_key", "session_token"}) and its expires_in; or -1 with
 * one line in why (STS's error code, never its message) and *REFUSED when asking again will
 * not help (the key or the role refused, a policy STS will not take). */
int aws_sts_assume(SSL_CTX *tls, const struct policy *p, const struct cred_doc *d,
		   const char *policy, int timeout_ms, struct token_reply *out, bool *refused,
		   char *why, size_t whylen);

/* STS's answer (STATUS, N bytes of GOT) to D's request, read as aws_sts_assume does. */
int aws_sts_answer(const struct cred_doc *d, int status, const char *got, size_t n,
		   struct token_reply *out, bool *refused, char *why, size_t whylen);

#endif
