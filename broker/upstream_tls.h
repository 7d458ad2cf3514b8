/* SPDX-License-Identifier: Apache-2.0 */
/* broker/upstream_tls.h: verified TLS from the broker to an upstream (TLS >= 1.2, the peer's
 * chain checked against the system trust store or one CA file, the name or IP checked). */
#ifndef BULKHEAD_BROKER_UPSTREAM_TLS_H
#define BULKHEAD_BROKER_UPSTREAM_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "broker/tls_resume.h"

/* CA_FILE NULL: the system trust store. Returns NULL with one line in why. */
SSL_CTX *tlsup_ctx_new(const char *ca_file, char *why, size_t whylen);
/* Handshakes over FD (blocking, bounded by the socket's timeouts) with HOST as SNI (names only)
 * and as the identity the certificate must carry, resuming a session RESUME keeps for HOST and
 * PORT when it has one (RESUME may be NULL); OFFER_H2: ALPN offers "h2" before "http/1.1".
 * Returns NULL with one line in why. */
SSL *tlsup_connect(SSL_CTX *ctx, struct tls_resume *resume, int fd, const char *host, unsigned port,
		   int offer_h2, char *why, size_t whylen);
/* 1 when the handshake chose HTTP/2. */
int tlsup_is_h2(SSL *ssl);
void tlsup_close(SSL *ssl);

#endif
