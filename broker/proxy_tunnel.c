/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_tunnel.c: CONNECT — decided on its host and port before any request inside
 * is known; then the guest's TLS ends at the broker, with a leaf from the session CA for the
 * CONNECT host, and the requests inside are served like any other (proxy.c). */
#include "broker/proxy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>

#include "broker/hostname.h"
#include "broker/mitm_ca.h"
#include "lib/mono.h"

/* CONNECT host:port — allowed when an https rule names that host and port; the request
 * lines inside the tunnel are then decided one by one like any other. */
int proxy_tunnel_connect(struct conn *c)
{
	snprintf(c->rule, sizeof(c->rule), "connect");
	/* Nothing may follow a CONNECT until its tunnel starts. */
	reqcheck_no_more(&c->rc);
	if (c->in_tunnel) {
		proxy_fail(c, 400, "CONNECT inside a tunnel");
		return -1;
	}
	if (proxy_target_connect(c, c->req.arena + c->req.url_off, c->req.url_len))
		return -1;
	c->port = c->tun_port;
	proxy_target_log(c, "https", c->tun_port, "");
	if (!c->cfg->mitm) {
		proxy_fail(c, 501, "CONNECT is not available: this broker has no session CA");
		return -1;
	}
	struct decision d;

	decide_connect(c->cfg->policy, c->cfg->rules, c->host, c->tun_port, &d);
	snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
	c->layer = decide_layer_name(d.layer);
	c->decision = d.verdict == VERDICT_DENY ? "deny" : "allow";
	if (d.verdict != VERDICT_ALLOW) {
		proxy_fail(c, 403, "%s", d.why);
		return -1;
	}
	snprintf(c->tun_host, sizeof(c->tun_host), "%s", c->host);
	c->connect_ok = 1;
	return 0;
}

/* The guest's TLS, read a byte at a time, must not outlast the head's deadline: OpenSSL reads
 * on until a handshake message or a record is whole, and each byte would restart a receive
 * timeout. So every read of the guest's socket under TLS passes here (a BIO callback): the
 * first byte of a head's records (or the handshake) starts the clock, the receive timeout
 * shrinks to what is left, and once nothing is left the read is refused as a timeout. The
 * clock stops when a head is whole (proxy_request_headers). */
static long tls_read_deadline(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
			      int ret, size_t *processed)
{
	struct conn *c = (struct conn *)BIO_get_callback_arg(b);
	int64_t t;

	(void)argp, (void)len, (void)argi, (void)argl;
	if (oper == BIO_CB_READ && c->tls_deadline_ms) {
		t = c->tls_deadline_ms - mono_ms();
		if (t <= 0) {
			c->tls_late = 1;
			errno = EAGAIN;
			return -1;
		}
		proxy_io_rcv_timeout(c, t < c->cfg->io_timeout_ms ? (int)t : c->cfg->io_timeout_ms);
	} else if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
		if (ret > 0 && processed && *processed && !c->tls_deadline_ms &&
		    c->rc.state == RC_HEAD && c->cfg->head_timeout_ms > 0)
			c->tls_deadline_ms = mono_ms() + c->cfg->head_timeout_ms;
		else if (ret <= 0 && c->tls_deadline_ms && mono_ms() >= c->tls_deadline_ms)
			c->tls_late = 1; /* the receive timeout, shrunk to the deadline, ran out */
	}
	return ret;
}

/* After "200 Connection established" the guest's TLS handshake ends here, with a leaf for the
 * CONNECT host; the name the guest asked for (SNI) must be that host. */
int proxy_tunnel_start(struct conn *c, int early_bytes)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char why[300];
	char sni_canon[HOSTNAME_MAX + 1];
	const char *sni, *bad;
	SSL_CTX *ctx;
	int is_ip = hostname_is_ip(c->tun_host);

	c->connect_ok = 0;
	if (early_bytes) {
		proxy_fail(c, 400, "bytes sent before the CONNECT was answered");
		return -1;
	}
	ctx = mitm_ca_leaf_ctx(c->cfg->mitm, c->tun_host, why, sizeof(why));
	if (!ctx) {
		proxy_fail(c, 502, "%s", why);
		return -1;
	}
	c->cl_ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (!c->cl_ssl || SSL_set_fd(c->cl_ssl, c->fd) != 1) {
		proxy_fail(c, 502, "cannot set up TLS toward the guest");
		return -1;
	}
	/* Its record buffers go back whenever they are empty: a tunnel that waits (a stream
	 * between events, an idle keep-alive) holds none. */
	SSL_set_mode(c->cl_ssl, SSL_MODE_RELEASE_BUFFERS);
	BIO_set_callback_ex(SSL_get_rbio(c->cl_ssl), tls_read_deadline);
	BIO_set_callback_arg(SSL_get_rbio(c->cl_ssl), (char *)c);
	/* The 200 goes out in clear: the guest's TLS starts after it. */
	{
		SSL *tls = c->cl_ssl;

		c->cl_ssl = NULL;
		if (proxy_io_client_write(c, ok, sizeof(ok) - 1) || proxy_io_client_flush(c)) {
			SSL_free(tls);
			return -1;
		}
		c->cl_ssl = tls;
	}
	c->resp_started = 1; /* from here on an error cannot be an HTTP answer to the CONNECT */
	ERR_clear_error();
	/* The handshake is part of the first request's head: it has the head's time. */
	c->tls_deadline_ms = c->cfg->head_timeout_ms > 0 ? mono_ms() + c->cfg->head_timeout_ms : 0;
	if (SSL_accept(c->cl_ssl) != 1) {
		if (c->tls_late) {
			snprintf(c->err_msg, sizeof(c->err_msg),
				 "the TLS handshake with the guest did not complete within %d s",
				 c->cfg->head_timeout_ms / 1000);
			c->err_status = 408;
			c->outcome = AUDIT_OUTCOME_GUEST_TIMEOUT;
		} else {
			snprintf(c->err_msg, sizeof(c->err_msg),
				 "TLS handshake with the guest failed: %s",
				 ERR_reason_error_string(ERR_peek_last_error())
					 ? ERR_reason_error_string(ERR_peek_last_error())
					 : "connection closed");
			c->err_status = 502;
		}
		ERR_clear_error();
		SSL_free(c->cl_ssl);
		c->cl_ssl = NULL;
		proxy_audit_log(c, c->err_status);
		return -1;
	}
	c->tls_deadline_ms = 0;
	c->resp_started = 0;
	sni = SSL_get_servername(c->cl_ssl, TLSEXT_NAMETYPE_host_name);
	/* Compared in canonical spelling, as the CONNECT host was (a trailing dot, upper case). */
	if (is_ip ? sni != NULL
		  : !sni || hostname_canon(sni, strlen(sni), sni_canon, &bad) ||
			    strcmp(sni_canon, c->tun_host)) {
		proxy_fail(c, 400, "the TLS server name (%.64s) does not match the CONNECT host %s",
			   sni ? sni : "none", c->tun_host);
		snprintf(c->rule, sizeof(c->rule), "sni-mismatch");
		c->decision = NULL; /* refused as inconsistent, not by a rule */
		return -1;
	}
	c->in_tunnel = 1;
	proxy_audit_log(c, 200);
	return 0;
}

int proxy_tunnel_h2(const struct conn *c)
{
	const unsigned char *p = NULL;
	unsigned n = 0;

	if (c->cl_ssl)
		SSL_get0_alpn_selected(c->cl_ssl, &p, &n);
	return n == 2 && !memcmp(p, "h2", 2);
}

void proxy_tunnel_stream(struct conn *c, const char *host, int port)
{
	snprintf(c->tun_host, sizeof(c->tun_host), "%s", host);
	c->tun_port = port;
	c->in_tunnel = 1;
	c->up_offer_h2 = 1;
}

void proxy_tunnel_stream_record(const struct conn *tun, const char *method, const char *path,
				int status, const char *why, const char *outcome)
{
	struct conn *c = proxy_conn_new(tun->cfg, -1, tun->id);

	if (!c)
		return;
	proxy_tunnel_stream(c, tun->tun_host, tun->tun_port);
	snprintf(c->method, sizeof(c->method), "%s", method && *method ? method : "-");
	snprintf(c->host, sizeof(c->host), "%s", tun->tun_host);
	c->port = tun->tun_port;
	/* A long path is cut in the log line only: the record keeps what fits here as well. */
	if (snprintf(c->log_path, sizeof(c->log_path), "https://%s:%d%s", tun->tun_host,
		     tun->tun_port, path ? path : "") >= (int)sizeof(c->log_path))
		c->log_path[sizeof(c->log_path) - 1] = 0;
	snprintf(c->rule, sizeof(c->rule), "h2-stream");
	if (status >= 400) {
		c->err_status = status;
		snprintf(c->err_msg, sizeof(c->err_msg), "%s", why);
	}
	c->outcome = outcome;
	proxy_audit_log(c, status);
	proxy_conn_free(c);
}
