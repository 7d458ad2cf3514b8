/* SPDX-License-Identifier: Apache-2.0 */
/* broker/mitm_ca.c: the session CA and its per-host leaves (see mitm_ca.h). One EC P-256 key
 * signs, one more serves every leaf; both are generated fresh per broker and never written. */
#include "broker/mitm_ca.h"
#include "broker/hostname.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define LEAF_CACHE 128

struct leaf {
	char host[256];
	SSL_CTX *ctx;
	unsigned long used; /* the cache's clock at the last use */
};

struct mitm_ca {
	EVP_PKEY *key, *leaf_key;
	X509 *cert;
	char *pem;
	long lifetime_s;
	pthread_mutex_t lock;
	struct leaf leaves[LEAF_CACHE];
	unsigned long clock;
};

static void ossl_err(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();

	snprintf(err, errlen, "%s: %s", what, e ? ERR_reason_error_string(e) : "failed");
	ERR_clear_error();
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!ext)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate skeleton: v3, random positive 127-bit serial, validity, subject CN, key. */
/* ALPN: HTTP/2 when the guest offers it (broker/h2_front.c serves it), else HTTP/1.1; a guest
 * that offers neither goes on without ALPN, in HTTP/1.1. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char ours[] = "\x02h2\x08http/1.1";

	(void)ssl, (void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, ours, sizeof(ours) - 1, in,
				  inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

static X509 *cert_new(const char *cn, EVP_PKEY *key, long lifetime_s)
{
	unsigned char serial[16];
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	BIGNUM *bn = NULL;
	int ok = x && name && RAND_bytes(serial, sizeof(serial)) == 1;

	if (ok) {
		serial[0] &= 0x7f;
		bn = BN_bin2bn(serial, sizeof(serial), NULL);
		ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
		     X509_set_version(x, 2) && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
		     X509_gmtime_adj(X509_getm_notAfter(x), lifetime_s) &&
		     X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
						(const unsigned char *)"bulkhead", -1, -1, 0) &&
		     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
						(const unsigned char *)cn, -1, -1, 0) &&
		     X509_set_subject_name(x, name) && X509_set_pubkey(x, key);
	}
	BN_free(bn);
	X509_NAME_free(name);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int ca_finish(struct mitm_ca *ca, char *err, size_t errlen);

struct mitm_ca *mitm_ca_new(const char *session, long lifetime_s, char *err, size_t errlen)
{
	struct mitm_ca *ca = calloc(1, sizeof(*ca));
	char cn[64];

	if (!ca) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&ca->lock, NULL);
	ca->lifetime_s = lifetime_s;
	snprintf(cn, sizeof(cn), "bulkhead session %.24s CA", session ? session : "-");
	ca->key = EVP_EC_gen("P-256");
	ca->leaf_key = EVP_EC_gen("P-256");
	if (!ca->key || !ca->leaf_key) {
		ossl_err(err, errlen, "session CA key");
		goto fail;
	}
	ca->cert = cert_new(cn, ca->key, lifetime_s);
	if (!ca->cert || !X509_set_issuer_name(ca->cert, X509_get_subject_name(ca->cert)) ||
	    add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") ||
	    !X509_sign(ca->cert, ca->key, EVP_sha256())) {
		ossl_err(err, errlen, "session CA certificate");
		goto fail;
	}
	if (ca_finish(ca, err, errlen) < 0)
		goto fail;
	return ca;
fail:
	mitm_ca_free(ca);
	return NULL;
}

/* The certificate's PEM into ca->pem, and a leaf key: what both constructors finish with. */
static int ca_finish(struct mitm_ca *ca, char *err, size_t errlen)
{
	BIO *b = BIO_new(BIO_s_mem());
	BUF_MEM *mem;
	int ok = b && PEM_write_bio_X509(b, ca->cert) && BIO_get_mem_ptr(b, &mem) > 0 &&
		 (ca->pem = strndup(mem->data, mem->length));

	BIO_free(b);
	if (ok && !ca->leaf_key)
		ok = (ca->leaf_key = EVP_EC_gen("P-256")) != NULL;
	if (!ok)
		ossl_err(err, errlen, "session CA certificate");
	return ok ? 0 : -1;
}

char *mitm_ca_export(const struct mitm_ca *ca, char *err, size_t errlen)
{
	BIO *b = BIO_new(BIO_s_secmem());
	BUF_MEM *mem;
	char *out = NULL;

	if (b && PEM_write_bio_PrivateKey(b, ca->key, NULL, NULL, 0, NULL, NULL) &&
	    PEM_write_bio_X509(b, ca->cert) && BIO_get_mem_ptr(b, &mem) > 0)
		out = strndup(mem->data, mem->length);
	if (!out)
		ossl_err(err, errlen, "exporting the session CA");
	BIO_free(b);
	return out;
}

void mitm_ca_pem_free(char *pem)
{
	if (pem)
		OPENSSL_cleanse(pem, strlen(pem));
	free(pem);
}

struct mitm_ca *mitm_ca_import(const char *pem, long lifetime_s, char *err, size_t errlen)
{
	struct mitm_ca *ca = calloc(1, sizeof(*ca));
	BIO *b = BIO_new_mem_buf(pem, -1);

	if (!ca || !b) {
		snprintf(err, errlen, "out of memory");
		BIO_free(b);
		free(ca);
		return NULL;
	}
	pthread_mutex_init(&ca->lock, NULL);
	ca->lifetime_s = lifetime_s;
	ca->key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	ca->cert = ca->key ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (!ca->key || !ca->cert) {
		ossl_err(err, errlen, "the session CA given: not a key and a certificate in PEM");
		goto fail;
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1 || X509_check_ca(ca->cert) != 1) {
		ERR_clear_error();
		snprintf(err, errlen, "the session CA given: %s",
			 X509_check_ca(ca->cert) != 1 ? "its certificate is not a CA's"
						      : "its key is not its certificate's");
		goto fail;
	}
	if (ca_finish(ca, err, errlen) < 0)
		goto fail;
	return ca;
fail:
	mitm_ca_free(ca);
	return NULL;
}

void mitm_ca_free(struct mitm_ca *ca)
{
	size_t i;

	if (!ca)
		return;
	for (i = 0; i < LEAF_CACHE; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	free(ca->pem);
	pthread_mutex_destroy(&ca->lock);
	free(ca);
}

const char *mitm_ca_pem(const struct mitm_ca *ca)
{
	return ca->pem;
}

/* Leaves are for canonical names (hostname.h): the spelling the proxy compared is the one
 * certified and cached, and nothing can carry another field into the extension text. */
static int host_ok(const char *h, char canon[HOSTNAME_MAX + 1], int *is_ip)
{
	const char *why;

	if (hostname_canon(h, strlen(h), canon, &why))
		return 0;
	*is_ip = hostname_is_ip(canon);
	return 1;
}

static SSL_CTX *leaf_mint(struct mitm_ca *ca, const char *host, int is_ip, char *err, size_t errlen)
{
	char san[300];
	X509 *x = cert_new(host, ca->leaf_key, ca->lifetime_s);
	SSL_CTX *ctx = NULL;

	snprintf(san, sizeof(san), "%s:%s", is_ip ? "IP" : "DNS", host);
	if (!x || !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
	    add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
	    add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") ||
	    add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") ||
	    add_ext(x, ca->cert, NID_subject_alt_name, san) ||
	    add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") ||
	    !X509_sign(x, ca->key, EVP_sha256())) {
		ossl_err(err, errlen, "minting a leaf certificate");
		goto out;
	}
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) != 1) {
		ossl_err(err, errlen, "leaf TLS context");
		SSL_CTX_free(ctx);
		ctx = NULL;
		goto out;
	}
	SSL_CTX_set_options(ctx,
			    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
out:
	X509_free(x);
	return ctx;
}

SSL_CTX *mitm_ca_leaf_ctx(struct mitm_ca *ca, const char *host, char *err, size_t errlen)
{
	struct leaf *slot = &ca->leaves[0];
	SSL_CTX *ctx = NULL;
	char canon[HOSTNAME_MAX + 1];
	int is_ip;
	size_t i;

	if (!host_ok(host, canon, &is_ip)) {
		snprintf(err, errlen, "no certificate for the host name %.64s", host);
		return NULL;
	}
	host = canon;
	pthread_mutex_lock(&ca->lock);
	ca->clock++;
	for (i = 0; i < LEAF_CACHE; i++) {
		struct leaf *l = &ca->leaves[i];

		if (l->ctx && !strcasecmp(l->host, host)) {
			l->used = ca->clock;
			ctx = l->ctx;
			break;
		}
		/* Where a new leaf goes: the first empty slot, or else the least recently used. */
		if (slot->ctx && (!l->ctx || l->used < slot->used))
			slot = l;
	}
	if (!ctx) {
		ctx = leaf_mint(ca, host, is_ip, err, errlen);
		if (ctx) {
			SSL_CTX_free(slot->ctx);
			snprintf(slot->host, sizeof(slot->host), "%s", host);
			slot->ctx = ctx;
			slot->used = ca->clock;
		}
	}
	if (ctx)
		SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&ca->lock);
	return ctx;
}
