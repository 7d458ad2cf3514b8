/* SPDX-License-Identifier: Apache-2.0 */
/* broker/cred.h: what a typed vault entry holds (vault.h enum vault_kind). A static entry is the
 * value injected; an OAuth 2 entry is a JSON document from which the broker obtains the access
 * token it injects (broker/token_cache.h):
 *
 *   oauth2-refresh             {"token_url", "client_id", "client_secret"?, "refresh_token",
 *                               "scope"?, "client_auth"?, "allow_addresses"?}
 *   oauth2-client-credentials  {"token_url", "client_id", "client_secret", "scope"?,
 *                               "client_auth"?, "allow_addresses"?}
 *   github-app                 {"app_id", "installation_id", "private_key" (PEM, RSA),
 *                               "api_url"? (default https://api.github.com), "allow_addresses"?}
 *   aws-sigv4                  {"access_key_id", "secret_access_key", "session_token"?,
 *                               "role_arn"?, "sts_url"? (default https://sts.amazonaws.com/),
 *                               "sts_region"? (us-east-1), "duration_seconds"? (3600),
 *                               "allow_addresses"?}
 *
 * An aws-sigv4 entry is never injected: the broker signs each request with it (aws_sigv4.h);
 * with a role_arn, with the temporary credentials it obtains per session (aws_sts.h).
 * A github-app entry mints, per session, an installation token narrowed to what the rule's
 * "github" object names (repositories, permissions), revoked when the session ends.
 * token_url is https only; client_auth is "basic" (HTTP Basic, the default, RFC 6749 2.3.1) or
 * "body" (client_id and client_secret in the form); allow_addresses lists the non-public
 * addresses the endpoint may have, as a rule's destination does. */
#ifndef BULKHEAD_BROKER_CRED_H
#define BULKHEAD_BROKER_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/rules.h"
#include "broker/vault.h"

#define CRED_FIELD_MAX 8192 /* any one string of a document */

struct cred_doc {
	enum vault_kind kind;
	struct rules_dest endpoint; /* https, host, port, allowed addresses */
	char *path;		    /* the token URL's path (and query) */
	char *client_id, *client_secret, *refresh_token, *scope; /* NULL when absent */
	bool auth_in_body;
	char *app_id, *installation_id, *private_key;		 /* github-app */
	char *access_key_id, *secret_access_key, *session_token; /* aws-sigv4 */
	char *role_arn, *sts_region; /* ... a role to assume (endpoint and path: its STS) */
	int duration;		     /* ... its credentials' lifetime, seconds */
};

/* "static", "oauth2-refresh", "oauth2-client-credentials", "github-app", "aws-sigv4". */
const char *cred_kind_name(enum vault_kind k);
/* The kind named NAME, or -1. */
int cred_kind_of(const char *name);
/* Parses and checks a typed entry's document (KIND not static). 0, or -1 with one line in err
 * that never quotes a value. */
int cred_doc_parse(enum vault_kind kind, const uint8_t *val, size_t len, struct cred_doc *d,
		   char *err, size_t errlen);
/* Wipes and frees what cred_doc_parse made. */
void cred_doc_free(struct cred_doc *d);
/* The document VAL with its refresh_token replaced by RT: a malloc'd copy (caller wipes). */
int cred_doc_with_refresh(const uint8_t *val, size_t len, const char *rt, uint8_t **out,
			  size_t *outlen);
/* From now on every buffer jansson frees is wiped first: documents hold secrets. */
void cred_json_wipe_on_free(void);

#endif
