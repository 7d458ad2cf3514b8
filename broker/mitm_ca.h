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

/* A session CA outlives any session a scope allows (issue 7 bounds session lifetime). */
#define MITM_CA_LIFETIME_S (7L * 24 * 3600)

/* A new CA (EC P-256, valid from an hour ago for LIFETIME_S seconds) naming SESSION in its
 * subject. Returns NULL with one line in err. */
struct mitm_ca *mitm_ca_new(const char *session, long lifetime_s, char *err, size_t errlen);
void mitm_ca_free(struct mitm_ca *ca);

/* A pooled guest trusts its CA before it is bound to a session (docs/ARCHITECTURE.md, "Pooled
 * guests"): its supervisor makes the CA, keeps the key in memory, and hands both to the broker
 * the session is bound to. mitm_ca_export: the key and certificate in PEM, a new string (wipe
 * and free it with mitm_ca_pem_free). mitm_ca_import: a CA from that text, its key checked
 * against its certificate, which must be a CA's. NULL with one line in err. */
char *mitm_ca_export(const struct mitm_ca *ca, char *err, size_t errlen);
struct mitm_ca *mitm_ca_import(const char *pem, long lifetime_s, char *err, size_t errlen);
void mitm_ca_pem_free(char *pem);

/* The CA certificate in PEM, NUL-terminated; owned by CA. */
const char *mitm_ca_pem(const struct mitm_ca *ca);

/* A TLS server context presenting a leaf for HOST (a DNS name or an IP literal) signed by CA;
 * TLS >= 1.2. Leaves are cached per host (bounded); the caller frees its reference with
 * SSL_CTX_free. Returns NULL with one line in err. Thread-safe. */
SSL_CTX *mitm_ca_leaf_ctx(struct mitm_ca *ca, const char *host, char *err, size_t errlen);

#endif
