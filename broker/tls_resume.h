/* SPDX-License-Identifier: Apache-2.0 */
/* broker/tls_resume.h: TLS sessions the broker may resume with an upstream, so that a guest
 * opening a connection per request does not cost the upstream and the broker a full handshake
 * each time. One store per broker session (no ticket crosses sessions: an upstream cannot
 * link two tenants by them), keyed by the identity that was verified (the name or address)
 * and the port. Only full handshakes, verified, give sessions to keep (never a resumed one:
 * no chain of resumptions outlives the certificate); each is used at most once (RFC 8446,
 * C.4). */
#ifndef BULKHEAD_BROKER_TLS_RESUME_H
#define BULKHEAD_BROKER_TLS_RESUME_H

#include <openssl/ssl.h>

#define TLS_RESUME_KEYS	   16 /* identities kept per broker session; the oldest goes first */
#define TLS_RESUME_PER_KEY 4  /* sessions kept per identity, for connections opened together */

struct tls_resume;

/* Once, on the broker's upstream context: asks OpenSSL to hand new sessions to the stores.
 * Returns 0, or -1 when OpenSSL cannot (resumption is then off, nothing else changes). */
int tls_resume_ctx_init(SSL_CTX *ctx);

/* NULL when out of memory (the session then resumes nothing). */
struct tls_resume *tls_resume_new(void);
void tls_resume_free(struct tls_resume *r);

/* Before SSL_connect on SSL: its new sessions go to R under (HOST, PORT), and one kept there,
 * if any, is offered (and taken out of R). R NULL: nothing. Returns 1 when a session was
 * offered, 0 when not, -1 when out of memory (the handshake is then full, never wrong). */
int tls_resume_attach(struct tls_resume *r, SSL *ssl, const char *host, unsigned port);

#endif
