/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_mitm_ca.c: the session CA — leaves chain to it and carry exactly the host
 * they were minted for; nothing that could smuggle another name gets a leaf; the cache hands
 * back the same context for a host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "broker/mitm_ca.h"

static X509 *pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	return x;
}

/* Verifies LEAF against CA only, for NAME (a DNS name or an IP literal). 1 when it passes. */
static int verifies(X509 *ca, X509 *leaf, const char *name, int ip)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *vc = X509_STORE_CTX_new();
	int ok;

	X509_STORE_add_cert(st, ca);
	X509_STORE_CTX_init(vc, st, leaf, NULL);
	X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(vc), X509_PURPOSE_SSL_SERVER);
	if (ip)
		X509_VERIFY_PARAM_set1_ip_asc(X509_STORE_CTX_get0_param(vc), name);
	else
		X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(vc), name, 0);
	ok = X509_verify_cert(vc) == 1;
	X509_STORE_CTX_free(vc);
	X509_STORE_free(st);
	return ok;
}

static void test_ca_is_a_ca(void **state)
{
	char err[200];
	struct mitm_ca *ca = mitm_ca_new("0123456789abcdef", 3600, err, sizeof(err));
	X509 *x;

	(void)state;
	assert_non_null(ca);
	x = pem_cert(mitm_ca_pem(ca));
	assert_non_null(x);
	assert_int_equal(X509_check_ca(x), 1);
	assert_true(X509_check_issued(x, x) == X509_V_OK);
	X509_free(x);
	mitm_ca_free(ca);
}

static void test_leaf_chains_and_names(void **state)
{
	char err[200];
	struct mitm_ca *ca = mitm_ca_new("s", 3600, err, sizeof(err));
	struct mitm_ca *other = mitm_ca_new("t", 3600, err, sizeof(err));
	X509 *cax = pem_cert(mitm_ca_pem(ca)), *otherx = pem_cert(mitm_ca_pem(other));
	SSL_CTX *ctx = mitm_ca_leaf_ctx(ca, "api.example.test", err, sizeof(err));
	SSL_CTX *ipctx = mitm_ca_leaf_ctx(ca, "127.0.0.1", err, sizeof(err));
	X509 *leaf, *ipleaf;

	(void)state;
	assert_non_null(ctx);
	assert_non_null(ipctx);
	leaf = SSL_CTX_get0_certificate(ctx);
	ipleaf = SSL_CTX_get0_certificate(ipctx);
	assert_true(verifies(cax, leaf, "api.example.test", 0));
	assert_false(verifies(cax, leaf, "other.example.test", 0));
	assert_false(verifies(otherx, leaf, "api.example.test", 0)); /* another session's CA */
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_true(verifies(cax, ipleaf, "127.0.0.1", 1));
	assert_false(verifies(cax, ipleaf, "127.0.0.2", 1));
	SSL_CTX_free(ctx);
	SSL_CTX_free(ipctx);
	X509_free(cax);
	X509_free(otherx);
	mitm_ca_free(ca);
	mitm_ca_free(other);
}

/* A pooled guest's CA moves from its supervisor to the broker it is bound to: the imported CA
 * presents the same certificate and signs leaves the exported one's guest trusts. */
static void test_export_import(void **state)
{
	char err[200];
	struct mitm_ca *ca = mitm_ca_new("pool", 3600, err, sizeof(err)), *other, *in;
	char *pem = mitm_ca_export(ca, err, sizeof(err)), *cert_only, *mixed;
	X509 *cax = pem_cert(mitm_ca_pem(ca));
	SSL_CTX *ctx;

	(void)state;
	assert_non_null(pem);
	assert_non_null(strstr(pem, "PRIVATE KEY"));
	in = mitm_ca_import(pem, 3600, err, sizeof(err));
	assert_non_null(in);
	assert_string_equal(mitm_ca_pem(in), mitm_ca_pem(ca));
	ctx = mitm_ca_leaf_ctx(in, "api.example.test", err, sizeof(err));
	assert_non_null(ctx);
	assert_true(verifies(cax, SSL_CTX_get0_certificate(ctx), "api.example.test", 0));
	SSL_CTX_free(ctx);
	mitm_ca_free(in);

	/* A certificate without its key, another CA's key with this certificate, and bytes that
	 * are no PEM: each refused with a line. */
	cert_only = strstr(pem, "-----BEGIN CERTIFICATE");
	assert_null(mitm_ca_import(cert_only, 3600, err, sizeof(err)));
	assert_non_null(strstr(err, "session CA"));
	other = mitm_ca_new("other", 3600, err, sizeof(err));
	char *opem = mitm_ca_export(other, err, sizeof(err));
	*strstr(opem, "-----BEGIN CERTIFICATE") = '\0';
	mixed = malloc(strlen(opem) + strlen(cert_only) + 1);
	strcpy(mixed, opem);
	strcat(mixed, cert_only);
	assert_null(mitm_ca_import(mixed, 3600, err, sizeof(err)));
	assert_non_null(strstr(err, "key is not its certificate's"));
	assert_null(mitm_ca_import("garbage", 3600, err, sizeof(err)));
	free(mixed);
	mitm_ca_pem_free(opem);
	mitm_ca_free(other);
	mitm_ca_pem_free(pem);
	X509_free(cax);
	mitm_ca_free(ca);
}

static void test_cache_and_bad_names(void **state)
{
	char err[200];
	struct mitm_ca *ca = mitm_ca_new("s", 3600, err, sizeof(err));
	SSL_CTX *a = mitm_ca_leaf_ctx(ca, "a.test", err, sizeof(err));
	SSL_CTX *b = mitm_ca_leaf_ctx(ca, "A.TEST", err, sizeof(err));
	char name[32];
	int i;

	(void)state;
	assert_ptr_equal(a, b); /* one leaf per host, names compared without case */
	SSL_CTX_free(a);
	SSL_CTX_free(b);
	assert_null(mitm_ca_leaf_ctx(ca, "a.test,DNS:evil.test", err, sizeof(err)));
	assert_null(mitm_ca_leaf_ctx(ca, "", err, sizeof(err)));
	assert_null(mitm_ca_leaf_ctx(ca, "sp ace.test", err, sizeof(err)));
	/* More hosts than the cache holds: every one still gets a working leaf. */
	for (i = 0; i < 300; i++) {
		SSL_CTX *c;

		snprintf(name, sizeof(name), "h%d.test", i);
		c = mitm_ca_leaf_ctx(ca, name, err, sizeof(err));
		assert_non_null(c);
		SSL_CTX_free(c);
	}
	mitm_ca_free(ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_is_a_ca),
		cmocka_unit_test(test_leaf_chains_and_names),
		cmocka_unit_test(test_cache_and_bad_names),
		cmocka_unit_test(test_export_import),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
