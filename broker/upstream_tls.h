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
 * PORT when it has one (RESUME may be NULL). Returns NULL with one line in why. */
SSL *tlsup_connect(SSL_CTX *ctx, struct tls_resume *resume, int fd, const char *host, unsigned port,
		   char *why, size_t whylen);
void tlsup_close(SSL *ssl);

#endif
