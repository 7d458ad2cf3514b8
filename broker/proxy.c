/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy.c: serves one guest connection. The guest's request is parsed by http_parser,
 * decided against the rules at the end of its head, rewritten (proxy_rewrite.c) and streamed
 * to the upstream; the response comes back through proxy_response.c. CONNECT tunnels end here
 * too (proxy_tunnel.c), with a leaf from the session CA. */
#include "broker/proxy_internal.h"

#include "lib/mono.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

_Static_assert(REQCHECK_URL_MAX == PROXY_MAX_URL, "reqcheck and the arena agree on URLs");
_Static_assert(REQCHECK_LINE_MAX > PROXY_MAX_HEAD, "a line as large as a head reaches the arena");
#include "broker/upstream_tls.h"
#include "lib/agent_proto.h"

/* The recorded refusal (proxy_fail) as the guest's one answer. */
static void send_error(struct conn *c)
{
	char buf[2048];
	int l = c->aws ? proxy_error_aws_text(buf, sizeof(buf), c->err_status, c->err_msg,
					      !strcmp(c->aws->aws_service, "s3"))
		       : proxy_error_text(buf, sizeof(buf), c->err_status, c->err_msg);

	/* What the refused request took is given back before the guest hears of it, so its
	 * next request finds it; what it sent past the refusal is dropped, not left to reset
	 * its read. */
	proxy_body_budget_end(c);
	proxy_drop_unread(c->fd);
	if (l > 0)
		proxy_io_client_write(c, buf, (size_t)l);
}

static int request_over(struct conn *c, int at_end);

/* A relay parked inside the parser's callback (c->stream): what the guest sent after its
 * request (B, N) is kept for when the relay ends. 1: parked; -1: out of memory, the
 * connection ends (its record is written). */
static int park_rest(struct conn *c, const char *b, size_t n)
{
	free(c->rest);
	c->rest = NULL;
	c->rest_n = 0;
	if (n && !(c->rest = malloc(n))) {
		proxy_complete_abandon(c, AUDIT_OUTCOME_CUT);
		return -1;
	}
	if (n)
		memcpy(c->rest, b, n);
	c->rest_n = n;
	return 1;
}

/* Feeds what one read returned (N bytes, 0 at the end of the stream, -1 on failure) through
 * reqcheck and the parser, stretch by stretch. Returns 0 to read on, -1 to end the
 * connection (with the error answered and recorded when it can still be), 1 when the answer's
 * relay parked (c->stream). */
static int serve_bytes(struct conn *c, const char *buf, ssize_t n)
{
	size_t off = 0;

	if (n < 0) {
		int timeout = errno == EAGAIN || errno == EWOULDBLOCK;

		c->outcome = timeout ? AUDIT_OUTCOME_GUEST_TIMEOUT : AUDIT_OUTCOME_GUEST_RESET;
		/* A request that stalled mid-way (its body, or a tunnel's TLS) is answered, unless
		 * its answer has begun. */
		if (timeout && c->audit_due && !c->resp_started && !c->err_status) {
			proxy_fail(c, 408, "the request stalled: nothing arrived for %d s",
				   c->cfg->io_timeout_ms / 1000);
			c->outcome = AUDIT_OUTCOME_GUEST_TIMEOUT;
			send_error(c);
			proxy_audit_log(c, 408);
		}
		return -1;
	}
	if (n == 0 && c->cut && c->cut->set && !c->err_status &&
	    (!c->audit_due || !c->resp_started)) {
		/* Taken for another session, between requests or before an answer began. */
		proxy_fail(c, 503, "%s", c->cut->why);
		send_error(c);
		if (c->audit_due) {
			c->outcome = AUDIT_OUTCOME_EVICTED;
			proxy_audit_log(c, 503);
		}
		return -1;
	}
	if (n == 0 && c->audit_due)
		c->outcome = AUDIT_OUTCOME_GUEST_CLOSED;
	do {
		ssize_t k = n ? reqcheck_feed(&c->rc, buf + off, (size_t)n - off) : 0;
		size_t done;

		if (k < 0) {
			/* Refused before the parser saw this request: its record and answer
			 * must not carry the last request's state. */
			if (!c->audit_due)
				proxy_request_reset(c);
			proxy_fail(c, 400, "%s", c->rc.why);
		} else if (n && !k) /* reqcheck waits for a callback the parser did not make */
			proxy_fail(c, 400, "the request's framing is ambiguous");
		if (c->err_status)
			break;
		done = http_parser_execute(&c->rq, &proxy_rq_settings, buf + off, (size_t)k);
		if (c->stream)
			return park_rest(c, buf + off + done, (size_t)n - off - done);
		off += (size_t)k;
		if (c->connect_ok && !c->err_status && HTTP_PARSER_ERRNO(&c->rq) == HPE_OK) {
			if (proxy_tunnel_start(c, off != (size_t)n))
				break;
			if (proxy_tunnel_h2(c)) {
				h2_front_serve(c);
				return -1; /* it served the connection to its end */
			}
			http_parser_init(&c->rq, HTTP_REQUEST);
			c->rq.data = c;
			reqcheck_init(&c->rc);
			return 0;
		}
		if (c->err_status || HTTP_PARSER_ERRNO(&c->rq) != HPE_OK || done != (size_t)k) {
			if (!c->err_status && !c->close_after)
				proxy_fail(c, 400, "malformed HTTP request: %s",
					   http_errno_description(HTTP_PARSER_ERRNO(&c->rq)));
			break;
		}
	} while (off < (size_t)n);
	return request_over(c, n == 0);
}

/* After a request: its refusal answered and recorded when no answer began. 0 to read on,
 * -1 to end the connection (AT_END: the guest's stream has ended). */
static int request_over(struct conn *c, int at_end)
{
	if (c->err_status && !c->resp_started) {
		send_error(c);
		proxy_audit_log(c, c->err_status);
	}
	return c->err_status || c->close_after || at_end ? -1 : 0;
}

/* A parked relay served again: it runs on, and once it ends what the guest sent after its
 * request is served. As serve_bytes returns. */
static int stream_resume(struct conn *c)
{
	char buf[sizeof(c->carry)];
	int rc = proxy_complete_resume(c);
	size_t n = c->rest_n;

	if (c->stream)
		return 1;
	if (request_over(c, 0) || rc)
		return -1;
	/* The parser stopped at the request's end (a callback's -1): the next one starts anew. */
	http_parser_init(&c->rq, HTTP_REQUEST);
	c->rq.data = c;
	if (!n)
		return 0;
	if (n > sizeof(buf))
		n = sizeof(buf); /* a read's worth at most: it came from one */
	memcpy(buf, c->rest, n);
	free(c->rest);
	c->rest = NULL;
	c->rest_n = 0;
	return serve_bytes(c, buf, (ssize_t)n);
}

/* A request's whole head must arrive within head_timeout_ms, however it trickles in: the
 * idle timeout alone lets a guest hold a connection (and its descriptors) for ever by sending
 * a byte now and then. The clock starts with the head's first byte. */
static int head_arriving(const struct conn *c)
{
	return c->rc.state == RC_HEAD && (c->rc.len || c->rc.got_request_line || c->rc.empty_lines);
}

/* Before a read: the receive timeout that keeps the head's deadline. 1 when it has passed. */
static int head_deadline(struct conn *c)
{
	int64_t left;

	if (!c->head_clock || c->cfg->head_timeout_ms <= 0) {
		proxy_io_rcv_timeout(c, c->cfg->io_timeout_ms);
		return 0;
	}
	left = c->cfg->head_timeout_ms - (mono_ms() - c->head_t0_ms);
	if (left <= 0)
		return 1;
	proxy_io_rcv_timeout(c, left < c->cfg->io_timeout_ms ? (int)left : c->cfg->io_timeout_ms);
	return 0;
}

/* After a read: a head that began and has not ended starts the clock; an ended one stops it. */
static void head_track(struct conn *c)
{
	if (!head_arriving(c))
		c->head_clock = 0;
	else if (!c->head_clock) {
		c->head_t0_ms = mono_ms();
		c->head_clock = 1;
	}
}

/* The deadline passed: 408, recorded, and the connection ends. */
static void head_too_slow(struct conn *c)
{
	if (!c->audit_due) {
		proxy_request_reset(c);
		c->audit_due = 1;
	}
	proxy_fail(c, 408, "the request head did not arrive within %d s",
		   c->cfg->head_timeout_ms / 1000);
	c->outcome = AUDIT_OUTCOME_GUEST_TIMEOUT;
	send_error(c);
	proxy_audit_log(c, 408);
}

/* Between two requests, with nothing of the next one read: the connection may be parked. */
static int at_boundary(const struct conn *c)
{
	return c->rc.state == RC_HEAD && !head_arriving(c) && !c->audit_due && !c->err_status &&
	       !c->close_after && !(c->cl_ssl && SSL_has_pending(c->cl_ssl));
}

/* Reads and serves until the connection ends (0), or until it has stayed silent LINGER_MS at a
 * boundary between requests (1; LINGER_MS < 0: never), or YIELD asks for its turn there (2),
 * or an answer's relay went quiet (3: c->stream). */
static int serve_loop(struct conn *c, int linger_ms, const _Atomic unsigned *yield)
{
	char buf[16384];
	unsigned long served = c->served;

	if (c->stream) {
		int r = stream_resume(c);

		if (r)
			return r > 0 ? 3 : 0;
	}
	for (;;) {
		ssize_t n;
		int sb;

		if (linger_ms >= 0 && at_boundary(c)) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

			if (proxy_io_client_flush(c))
				return 0;
			if (yield && *yield && c->served != served)
				return 2; /* others of its session wait for a worker: take turns */
			int r = poll(&pfd, 1, linger_ms);
			if (r == 0)
				return 1;
		}
		if (head_deadline(c)) {
			head_too_slow(c);
			return 0;
		}
		n = proxy_io_client_read(c, buf, sizeof(buf));
		if (n < 0 && c->tls_late) { /* a head's TLS records past its deadline */
			head_too_slow(c);
			return 0;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && c->head_clock &&
		    c->cfg->head_timeout_ms > 0)
			continue; /* the deadline's own timeout: answered above */
		if ((sb = serve_bytes(c, buf, n)))
			return sb > 0 ? 3 : 0;
		head_track(c);
	}
}

/* A connection's state is about 128 KiB, mostly buffers a connection seldom fills (heads,
 * bodies, answers waiting for the guest). It is mapped on its own: pages it never touches take
 * no memory (a thousand parked streams cost what they hold, not what they could), and unmapped
 * at its end, what it held goes back to the kernel, which gives no one its bytes again. */
static struct conn *conn_map(void)
{
	void *p = mmap(NULL, sizeof(struct conn), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct conn *proxy_conn_new(const struct proxy_config *cfg, int fd, unsigned long conn_id)
{
	struct conn *c = conn_map();

	if (!c)
		return NULL;
	c->cfg = cfg;
	c->fd = fd;
	c->id = conn_id;
	c->up_fd = -1;
	scrub_init(&c->scrub);
	c->secrets = calloc(cfg->rules->n_secrets + 1, sizeof(*c->secrets));
	if (!c->secrets) {
		scrub_free(&c->scrub);
		munmap(c, sizeof(*c));
		return NULL;
	}
	proxy_io_timeouts(fd, cfg->io_timeout_ms);
	c->rcv_ms = cfg->io_timeout_ms;
	c->t0_ns = mono_ns(); /* for a connection that fails before a request */
	http_parser_init(&c->rq, HTTP_REQUEST);
	c->rq.data = c;
	reqcheck_init(&c->rc);
	return c;
}

int proxy_conn_serve(struct conn *c, int linger_ms, const _Atomic unsigned *yield,
		     struct proxy_cut *cut)
{
	int r;

	c->cut = cut;
	c->linger_ms = linger_ms;
	r = serve_loop(c, linger_ms, yield);
	c->cut = NULL;

	if (r == 3) {
		/* Quiet between a stream's messages: TLS gives its buffers back while it waits. */
		if (c->cl_ssl)
			SSL_set_mode(c->cl_ssl, SSL_MODE_RELEASE_BUFFERS);
		if (c->up_ssl)
			SSL_set_mode(c->up_ssl, SSL_MODE_RELEASE_BUFFERS);
		return PROXY_STREAM;
	}
	if (r) {
		/* Idle: the upstream connection is not kept for a guest that went quiet (one that
		 * only gave its turn keeps it). */
		if (r == 1)
			proxy_io_up_close(c);
		return PROXY_IDLE;
	}
	/* A request the guest abandoned after its head went upstream is recorded too. */
	proxy_audit_due(c);
	proxy_io_client_flush(c);
	return PROXY_DONE;
}

int proxy_conn_stream(const struct conn *c, int *up_fd, int *guest_reads, int64_t *due_ms)
{
	if (!c || !c->stream)
		return 0;
	*up_fd = c->up_fd;
	*guest_reads = c->stream == STREAM_WS;
	*due_ms = c->stream_due_ms;
	return 1;
}

void proxy_conn_stream_end(struct conn *c, const char *outcome)
{
	if (c && c->stream)
		proxy_complete_abandon(c, outcome);
}

int proxy_conn_stateless(const struct conn *c)
{
	return !c->cl_ssl && c->up_fd < 0;
}

void proxy_conn_free(struct conn *c)
{
	if (!c)
		return;
	proxy_conn_stream_end(c, AUDIT_OUTCOME_CUT);
	proxy_ws_free(c, AUDIT_OUTCOME_CUT);
	proxy_io_up_close(c);
	tlsup_close(c->cl_ssl);
	free(c->rest);
	free(c->up_head);
	free(c->ws_early);
	proxy_secret_wipe(c);
	secbuf_wipe(&c->body_buf);
	proxy_hold_end(c);
	proxy_body_budget_end(c);
	proxy_audit_release(c);
	scrub_free(&c->scrub);
	munmap(c, sizeof(*c));
}

unsigned long proxy_serve(const struct proxy_config *cfg, int fd, unsigned long conn_id)
{
	struct conn *c = proxy_conn_new(cfg, fd, conn_id);
	unsigned long served = 0;

	if (c) {
		proxy_conn_serve(c, -1, NULL, NULL);
		served = c->served;
		proxy_conn_free(c);
	}
	close(fd);
	return served;
}
