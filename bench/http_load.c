/* SPDX-License-Identifier: Apache-2.0 */
/* bench/http_load.c: http-load's connections — one thread each: connect (to the broker's Unix
 * socket, there through CONNECT and verified TLS to the broker's leaf, or verified TLS straight
 * to the upstream), send the request, read and check the response, record its latency. The
 * options, the run and the report are http_load_main.c. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "bench/http_load.h"

struct load_cfg L = { .body_len = -1 };
_Atomic long load_body_len_seen = -1;
atomic_long load_tickets;
atomic_int load_failed;
pthread_barrier_t load_warm;
uint64_t load_deadline_ns;

uint64_t load_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void set_err(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static void conn_close(struct worker *w)
{
	if (w->ssl) {
		SSL_shutdown(w->ssl);
		SSL_free(w->ssl);
		w->ssl = NULL;
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->served = 0;
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = LOAD_IO_TIMEOUT_S };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int connect_unix(struct worker *w)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", L.sock);
	w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (w->fd < 0 || connect(w->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		set_err(w, "cannot connect to %s: %s", L.sock, strerror(errno));
		return -1;
	}
	set_timeouts(w->fd);
	return 0;
}

static int connect_tcp(struct worker *w)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	int one = 1, rc, err = 0;

	rc = getaddrinfo(L.host, L.port, &hints, &res);
	if (rc) {
		set_err(w, "cannot resolve %s: %s", L.host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		w->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (w->fd >= 0 && !connect(w->fd, ai->ai_addr, ai->ai_addrlen))
			break;
		err = errno;
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
	}
	freeaddrinfo(res);
	if (w->fd < 0) {
		set_err(w, "cannot connect to %s port %s: %s", L.host, L.port, strerror(err));
		return -1;
	}
	setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_timeouts(w->fd);
	return 0;
}

/* CONNECT host:port on the open Unix socket, as a guest's client sends it through the shim;
 * anything but 200 fails the run. The answer is peeked first and then taken whole, so no byte
 * past its head is consumed and the TLS handshake starts clean. */
static int open_tunnel(struct worker *w)
{
	char head[512], *end = NULL;
	int l = snprintf(head, sizeof(head), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n",
			 L.host, L.port, L.host, L.port);
	ssize_t n = send(w->fd, head, (size_t)l, MSG_NOSIGNAL);

	if (n != l) {
		set_err(w, "cannot send CONNECT: %s", n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	for (;;) {
		n = recv(w->fd, head, sizeof(head) - 1, MSG_PEEK);
		if (n <= 0) {
			set_err(w, "CONNECT: %s", n ? strerror(errno) : "the broker closed");
			return -1;
		}
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
		if (end || (size_t)n == sizeof(head) - 1)
			break;
		usleep(100); /* a head split across segments: rare on a Unix socket */
	}
	if (!end || strncmp(head, "HTTP/1.1 200", 12)) {
		head[strcspn(head, "\r\n")] = '\0';
		set_err(w, "CONNECT %s:%s answered: %s", L.host, L.port, head);
		return -1;
	}
	l = (int)(end + 4 - head);
	if (recv(w->fd, head, (size_t)l, 0) != l) {
		set_err(w, "CONNECT: the answer could not be read again");
		return -1;
	}
	return 0;
}

/* Verified TLS on the open socket: straight to the upstream, or inside a CONNECT tunnel to the
 * broker's leaf for the same name, signed by the session CA. */
static int start_tls(struct worker *w)
{
	unsigned char ip[16];
	long vr;

	w->ssl = SSL_new(L.tls);
	if (!w->ssl || SSL_set_fd(w->ssl, w->fd) != 1)
		goto fail;
	/* The same checks the broker makes: an address against IP entries, a name with SNI. */
	if (inet_pton(AF_INET, L.host, ip) == 1 || inet_pton(AF_INET6, L.host, ip) == 1) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(w->ssl), L.host) != 1)
			goto fail;
	} else if (SSL_set_tlsext_host_name(w->ssl, L.host) != 1 ||
		   SSL_set1_host(w->ssl, L.host) != 1) {
		goto fail;
	}
	if (SSL_connect(w->ssl) != 1) {
		const char *why = ERR_reason_error_string(ERR_peek_last_error());

		vr = SSL_get_verify_result(w->ssl);
		if (vr != X509_V_OK)
			why = X509_verify_cert_error_string(vr);
		set_err(w, "TLS to %s%s: %s", L.host, L.tunnel ? " in the tunnel" : "",
			why ? why : "handshake failed");
		ERR_clear_error();
		conn_close(w);
		return -1;
	}
	return 0;
fail:
	set_err(w, "TLS to %s: cannot set up the connection", L.host);
	conn_close(w);
	return -1;
}

static int conn_open(struct worker *w)
{
	if (!L.sock)
		return connect_tcp(w) || start_tls(w) ? -1 : 0;
	if (connect_unix(w))
		return -1;
	if (L.tunnel && (open_tunnel(w) || start_tls(w))) {
		conn_close(w);
		return -1;
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct worker *w = p->data;

	if (w->body_n < sizeof(w->body)) {
		size_t room = sizeof(w->body) - w->body_n;

		memcpy(w->body + w->body_n, at, n < room ? n : room);
	}
	w->body_n += n;
	return 0;
}

static int on_complete(http_parser *p)
{
	((struct worker *)p->data)->done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings rs = { .on_body = on_body, .on_message_complete = on_complete };

/* One write and read of the request on the open connection. Returns 0, 1 when the server had
 * closed a kept-alive connection before this request (nothing received: safe to resend), or -1. */
static int exchange(struct worker *w)
{
	const char *q = L.req;
	size_t left = L.req_len, got = 0;
	char buf[16384];

	while (left) {
		ssize_t n = w->ssl ? SSL_write(w->ssl, q, (int)left)
				   : send(w->fd, q, left, MSG_NOSIGNAL);

		if (n <= 0) {
			if (w->served && !got)
				return 1;
			set_err(w, "cannot send the request: %s",
				n < 0 && !w->ssl ? strerror(errno) : "connection closed");
			return -1;
		}
		q += n;
		left -= (size_t)n;
	}
	http_parser_init(&w->p, HTTP_RESPONSE);
	w->p.data = w;
	w->done = 0;
	w->body_n = 0;
	while (!w->done) {
		int n = w->ssl ? SSL_read(w->ssl, buf, sizeof(buf))
			       : (int)recv(w->fd, buf, sizeof(buf), 0);
		size_t used;

		if (n <= 0) {
			if (w->served && !got && (n == 0 || errno == ECONNRESET))
				return 1;
			set_err(w, "%s after %zu response bytes",
				n == 0		  ? "the server closed the connection"
				: errno == EAGAIN ? "timed out"
						  : "read failed",
				got);
			return -1;
		}
		got += (size_t)n;
		used = http_parser_execute(&w->p, &rs, buf, (size_t)n);
		if (!w->done && HTTP_PARSER_ERRNO(&w->p) != HPE_OK) {
			set_err(w, "malformed response: %s",
				http_errno_description(HTTP_PARSER_ERRNO(&w->p)));
			return -1;
		}
		/* One request in flight: anything past the response is a framing error. */
		if (w->done && used != (size_t)n) {
			set_err(w, "%zu bytes beyond the end of the response", (size_t)n - used);
			return -1;
		}
	}
	return 0;
}

/* The start of the body, on one line, for an error message. */
static const char *body_shown(struct worker *w, int *len)
{
	size_t i, n = w->body_n < 300 ? w->body_n : 300;

	for (i = 0; i < n; i++)
		if ((unsigned char)w->body[i] < ' ')
			w->body[i] = ' ';
	*len = (int)n;
	return w->body;
}

/* The checks that make a measured request count: 200, the same body length every time, and
 * the --expect string in it. */
static int check_response(struct worker *w)
{
	size_t kept = w->body_n < sizeof(w->body) ? w->body_n : sizeof(w->body);
	long want = L.body_len;
	const char *b;
	int bl;

	if (w->p.status_code != 200) {
		b = body_shown(w, &bl);
		set_err(w, "status %u (want 200): %.*s", w->p.status_code, bl, b);
		return -1;
	}
	if (want < 0) {
		long none = -1;

		/* The first response anywhere sets the length all others must have. */
		atomic_compare_exchange_strong(&load_body_len_seen, &none, (long)w->body_n);
		want = atomic_load(&load_body_len_seen);
	}
	if ((long)w->body_n != want) {
		set_err(w, "body of %zu bytes (want %ld)", w->body_n, want);
		return -1;
	}
	if (L.expect && !memmem(w->body, kept, L.expect, strlen(L.expect))) {
		b = body_shown(w, &bl);
		set_err(w, "body lacks \"%s\": %.*s", L.expect, bl, b);
		return -1;
	}
	return 0;
}

/* One request, connecting first when there is no open connection. The time of a reconnect
 * (the server closed after the previous response) is part of this request's latency. */
static int request(struct worker *w)
{
	int rc, tries = 0;

	for (;;) {
		if (w->fd < 0 && conn_open(w))
			return -1;
		rc = exchange(w);
		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		conn_close(w);
		w->reconnects++;
		if (++tries > 1) {
			set_err(w, "the server closed a fresh connection without answering");
			return -1;
		}
	}
	w->served++;
	if (check_response(w))
		return -1;
	if (!L.keepalive || !http_should_keep_alive(&w->p)) {
		conn_close(w);
		w->reconnects += L.keepalive; /* asked for: not a reconnect */
	}
	return 0;
}

static int record(struct worker *w, uint64_t ns)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4096;
		uint64_t *l = realloc(w->lat, cap * sizeof(*l));

		if (!l) {
			set_err(w, "out of memory");
			return -1;
		}
		w->lat = l;
		w->cap = cap;
	}
	w->lat[w->n++] = ns;
	return 0;
}

void *load_work(void *arg)
{
	struct worker *w = arg;
	int i;

	for (i = 0; i < L.warmup && !atomic_load(&load_failed); i++)
		if (request(w)) {
			atomic_store(&load_failed, 1);
			break;
		}
	w->reconnects = 0; /* only those in the measured part count */
	pthread_barrier_wait(&load_warm);
	pthread_barrier_wait(&load_warm); /* main() has set the clock and the deadline */
	while (!atomic_load(&load_failed)) {
		uint64_t s;

		if (L.total ? atomic_fetch_sub(&load_tickets, 1) <= 0
			    : load_now_ns() >= load_deadline_ns)
			break;
		s = load_now_ns();
		if (request(w) || record(w, load_now_ns() - s)) {
			atomic_store(&load_failed, 1);
			break;
		}
	}
	w->end_ns = load_now_ns();
	conn_close(w);
	return NULL;
}
