/* SPDX-License-Identifier: Apache-2.0 */
/* broker/mitm_ca.h: the session's own certificate authority, for CONNECT interception. The
 * broker makes it at start-up; its private key lives only in the broker's memory and dies with
 * it. The guest trusts this CA alone (bulkhead-init installs its certificate), so a guest TLS
 * connection can only ever end at the broker, which mints one leaf per host on demand. */
#ifndef BULKHEAD_BROKER_MITM_CA_H
#define BULKHEAD_BROKER_MITM_CA_H

#include <stddef.h>

#include <openssl/ssl.h>

struct mitm_ca;

/* A new CA (EC P-256, valid from an hour ago for LIFETIME_S seconds) naming SESSION in its
 * subject. Returns NULL with one line in err. */
struct mitm_ca *mitm_ca_new(const char *session, long lifetime_s, char *err, size_t errlen);
void mitm_ca_free(struct mitm_ca *ca);

/* The CA certificate in PEM, NUL-terminated; owned by CA. */
const char *mitm_ca_pem(const struct mitm_ca *ca);

/* A TLS server context presenting a leaf for HOST (a DNS name or an IP literal) signed by CA;
 * TLS >= 1.2. Leaves are cached per host (bounded); the caller frees its reference with
 * SSL_CTX_free. Returns NULL with one line in err. Thread-safe. */
SSL_CTX *mitm_ca_leaf_ctx(struct mitm_ca *ca, const char *host, char *err, size_t errlen);

#endif
