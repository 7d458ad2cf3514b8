/* SPDX-License-Identifier: Apache-2.0 */
/* broker/upstream_tls.c: the broker's TLS client. Verification failures are fatal and named
 * (the guest gets a 502 saying which check failed), never downgraded to a warning. */
#include "broker/upstream_tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

SSL_CTX *tlsup_ctx_new(const char *ca_file, char *why, size_t whylen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int ok;

	if (!ctx) {
		snprintf(why, whylen, "cannot create a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* The broker may talk to many hosts per session; keep renegotiation and compression off. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* One read takes a record's header and body (and what follows) instead of two. */
	SSL_CTX_set_read_ahead(ctx, 1);
	ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
		     : SSL_CTX_set_default_verify_paths(ctx);
	if (ok != 1) {
		snprintf(why, whylen, "cannot load CA %s: %s", ca_file ? ca_file : "(system store)",
			 ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (tls_resume_ctx_init(ctx)) {
		snprintf(why, whylen, "cannot set up TLS session resumption");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

SSL *tlsup_connect(SSL_CTX *ctx, struct tls_resume *resume, int fd, const char *host, unsigned port,
		   int offer_h2, char *why, size_t whylen)
{
	SSL *ssl = SSL_new(ctx);
	unsigned char ip[16];
	int is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	long vr;

	if (!ssl || SSL_set_fd(ssl, fd) != 1)
		goto fail_plain;
	SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS); /* none held while it waits */
	if (is_ip) {
		/* An address is checked against the certificate's IP entries; SNI carries names
		 * only (RFC 6066). */
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1)
			goto fail_plain;
	} else {
		if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
			goto fail_plain;
		X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl),
						X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	}
	/* HTTP/2 first when the guest's request came that way (an upstream that speaks only it,
	 * a gRPC server, is reached then); HTTP/1.1 always. */
	if (offer_h2 && SSL_set_alpn_protos(ssl, (const unsigned char *)"\x02h2\x08http/1.1", 12))
		goto fail_plain;
	/* Set after the identity: a resumed session was verified for this very one. */
	if (tls_resume_attach(resume, ssl, host, port) < 0)
		goto fail_plain;
	ERR_clear_error();
	if (SSL_connect(ssl) != 1) {
		vr = SSL_get_verify_result(ssl);
		if (vr != X509_V_OK)
			snprintf(why, whylen, "TLS to %s: certificate verification failed: %s",
				 host, X509_verify_cert_error_string(vr));
		else
			snprintf(why, whylen, "TLS to %s: handshake failed: %s", host,
				 ERR_reason_error_string(ERR_peek_last_error())
					 ? ERR_reason_error_string(ERR_peek_last_error())
					 : "connection closed");
		SSL_free(ssl);
		ERR_clear_error();
		return NULL;
	}
	return ssl;
fail_plain:
	snprintf(why, whylen, "TLS to %s: cannot set up the connection", host);
	SSL_free(ssl);
	return NULL;
}

void tlsup_close(SSL *ssl)
{
	if (!ssl)
		return;
	SSL_shutdown(ssl);
	SSL_free(ssl);
}

int tlsup_is_h2(SSL *ssl)
{
	const unsigned char *p = NULL;
	unsigned n = 0;

	SSL_get0_alpn_selected(ssl, &p, &n);
	return n == 2 && !memcmp(p, "h2", 2);
}
