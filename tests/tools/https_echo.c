/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/https_echo.c: a test upstream on 127.0.0.1 that answers every request with its
 * request line and headers in the body, plus an optional string (header and body) so tests can
 * make it echo a secret; /reflect echoes the X-Reflect header in a chosen encoding
 * (echo_reflect.c); /tls says whether the connection's TLS session was resumed (--swap
 * changes the certificate after N handshakes, keeping the session ticket keys). Plain HTTP
 * without --cert. Listens on --port, or a port of its own; prints it on stdout. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>
#include <strings.h>

#include "tests/tools/echo_reflect.h"
#include <openssl/err.h>
#include <openssl/ssl.h>

static SSL_CTX *ctx;
/* --swap N:PEM:KEY: after the Nth handshake the certificate changes, the ticket keys stay. */
static long swap_after;
static char swap_cert[512], swap_key[512];
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *also = "";
static FILE *log_file; /* --log: every request head, for the test to inspect */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

struct client {
	int fd;
	SSL *ssl;
	char head[65536];
	size_t hlen;
	int state; /* 0 request line, 1 header name, 2 value */
	size_t body;
	char first[1024]; /* the body's first bytes, for the log */
	size_t nfirst;
	char fname[32]; /* the current header's name (its first bytes) */
	size_t fname_n;
	char reflect[8192]; /* the X-Reflect value */
	size_t reflect_n;
	int abrupt; /* close without TLS close_notify */
};

static int cwrite(struct client *c, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = c->ssl ? SSL_write(c->ssl, p, (int)n) : send(c->fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int client_out(void *arg, const void *b, size_t n)
{
	return cwrite(arg, b, n);
}

static void hput(struct client *c, const char *s, size_t n)
{
	if (c->hlen + n < sizeof(c->head)) {
		memcpy(c->head + c->hlen, s, n);
		c->hlen += n;
	}
}

/* The head is rebuilt as text: "METHOD TARGET" then "Name: value" lines. */
static int on_url(http_parser *p, const char *at, size_t n)
{
	struct client *c = p->data;

	if (!c->hlen) {
		hput(c, http_method_str(p->method), strlen(http_method_str(p->method)));
		hput(c, " ", 1);
	}
	hput(c, at, n);
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct client *c = p->data;

	if (c->state != 1) {
		hput(c, "\n", 1);
		c->fname_n = 0;
	}
	c->state = 1;
	hput(c, at, n);
	while (n-- && c->fname_n < sizeof(c->fname) - 1)
		c->fname[c->fname_n++] = *at++;
	c->fname[c->fname_n] = 0;
	return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct client *c = p->data;

	if (c->state != 2)
		hput(c, ": ", 2);
	c->state = 2;
	hput(c, at, n);
	if (!strcasecmp(c->fname, "x-reflect") && c->reflect_n + n <= sizeof(c->reflect)) {
		memcpy(c->reflect + c->reflect_n, at, n);
		c->reflect_n += n;
	}
	return 0;
}

static int on_headers(http_parser *p)
{
	struct client *c = p->data;

	if (log_file) {
		pthread_mutex_lock(&log_lock);
		fwrite(c->head, 1, c->hlen, log_file);
		fputs("\n\n", log_file);
		fflush(log_file);
		pthread_mutex_unlock(&log_lock);
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct client *c = p->data;
	size_t k = sizeof(c->first) - c->nfirst < n ? sizeof(c->first) - c->nfirst : n;

	memcpy(c->first + c->nfirst, at, k);
	c->nfirst += k;
	c->body += n;
	return 0;
}

static int on_complete(http_parser *p)
{
	struct client *c = p->data;
	char hdr[512], *path;
	int l;

	c->head[c->hlen < sizeof(c->head) ? c->hlen : sizeof(c->head) - 1] = 0;
	if (log_file && c->body) {
		pthread_mutex_lock(&log_lock);
		fprintf(log_file, "body: %.*s\n\n", (int)c->nfirst, c->first);
		fflush(log_file);
		pthread_mutex_unlock(&log_lock);
	}
	path = strchr(c->head, ' ');
	if (path && !strncmp(path + 1, "/", 1) && strstr(path, "/reflect") &&
	    strstr(path, "/reflect") < path + strcspn(path + 1, " \n") + 1) {
		int rc = reflect_answer(client_out, c, path + 1, (const uint8_t *)c->reflect,
					c->reflect_n, log_file);

		c->reflect_n = 0;
		c->hlen = 0;
		c->body = 0;
		c->nfirst = 0;
		c->state = 0;
		c->abrupt = rc == REFLECT_CLOSE_ABRUPT;
		return rc ? -1 : 0; /* -1 also ends the connection after an EOF-framed answer */
	}
	if (path && !strncmp(path + 1, "/tls", 4) && (path[5] == '\n' || !path[5])) {
		/* /tls: whether this connection's handshake resumed a session ("resumed"), or was
		 * full ("full"); "plain" without TLS. */
		const char *how = !c->ssl		       ? "plain"
				  : SSL_session_reused(c->ssl) ? "resumed"
							       : "full";

		l = snprintf(hdr, sizeof(hdr),
			     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
			     "%zu\r\n\r\n%s\n",
			     strlen(how) + 1, how);
		if (cwrite(c, hdr, (size_t)l))
			return -1;
	} else if (path && !strncmp(path + 1, "/repeat/", 8)) {
		path++;
		/* /repeat/N: ALSO N times, chunked, in pieces of odd sizes. */
		long count = atol(path + 8), i;
		size_t al = strlen(also);

		l = snprintf(hdr, sizeof(hdr),
			     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
		if (cwrite(c, hdr, (size_t)l))
			return -1;
		for (i = 0; i < count; i++) {
			size_t off = 0, piece = (size_t)(i % 7) + 1;

			while (off < al) {
				size_t k = al - off < piece ? al - off : piece;

				l = snprintf(hdr, sizeof(hdr), "%zx\r\n", k);
				if (cwrite(c, hdr, (size_t)l) || cwrite(c, also + off, k) ||
				    cwrite(c, "\r\n", 2))
					return -1;
				off += k;
			}
		}
		if (cwrite(c, "0\r\n\r\n", 5))
			return -1;
	} else {
		/* One write: the answer goes out as one TLS record, as a real server's would. */
		size_t al = strlen(also), cap = sizeof(hdr) + c->hlen + 2 * al + 4, n;
		char *out = malloc(cap);
		int rc;

		if (!out)
			return -1;
		l = snprintf(out, cap,
			     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Echo: %s\r\n"
			     "X-Body-Bytes: %zu\r\nContent-Length: %zu\r\n\r\n",
			     also, c->body, c->hlen + 2 + al + 1);
		n = (size_t)l;
		memcpy(out + n, c->head, c->hlen);
		n += c->hlen;
		memcpy(out + n, "\n\n", 2);
		n += 2;
		memcpy(out + n, also, al);
		n += al;
		out[n++] = '\n';
		rc = cwrite(c, out, n);
		free(out);
		if (rc)
			return -1;
	}
	c->hlen = 0;
	c->body = 0;
	c->nfirst = 0;
	c->state = 0;
	return 0;
}

static void *serve(void *arg)
{
	static const http_parser_settings s = { .on_url = on_url,
						.on_header_field = on_field,
						.on_header_value = on_value,
						.on_headers_complete = on_headers,
						.on_body = on_body,
						.on_message_complete = on_complete };
	struct client *c = arg;
	http_parser p;
	char buf[16384];

	if (ctx) {
		c->ssl = SSL_new(ctx);
		SSL_set_fd(c->ssl, c->fd);
		if (SSL_accept(c->ssl) != 1)
			goto out;
		pthread_mutex_lock(&swap_lock);
		if (swap_after && !--swap_after &&
		    (SSL_CTX_use_certificate_chain_file(ctx, swap_cert) != 1 ||
		     SSL_CTX_use_PrivateKey_file(ctx, swap_key, SSL_FILETYPE_PEM) != 1))
			fprintf(stderr, "https-echo: cannot load %s / %s\n", swap_cert, swap_key);
		pthread_mutex_unlock(&swap_lock);
	}
	http_parser_init(&p, HTTP_REQUEST);
	p.data = c;
	for (;;) {
		int n = c->ssl ? SSL_read(c->ssl, buf, sizeof(buf))
			       : (int)recv(c->fd, buf, sizeof(buf), 0);

		if (n <= 0)
			break;
		if (http_parser_execute(&p, &s, buf, (size_t)n) != (size_t)n ||
		    HTTP_PARSER_ERRNO(&p) != HPE_OK)
			break;
	}
out:
	if (c->ssl) {
		if (!c->abrupt)
			SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	close(c->fd);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	const char *cert = NULL, *key = NULL;
	int i, lfd, one = 1;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cert"))
			cert = argv[i + 1];
		else if (!strcmp(argv[i], "--key"))
			key = argv[i + 1];
		else if (!strcmp(argv[i], "--also"))
			also = argv[i + 1];
		else if (!strcmp(argv[i], "--log"))
			log_file = fopen(argv[i + 1], "a");
		else if (!strcmp(argv[i], "--port"))
			sa.sin_port = htons((uint16_t)atoi(argv[i + 1]));
		else if (!strcmp(argv[i], "--swap") &&
			 sscanf(argv[i + 1], "%ld:%511[^:]:%511s", &swap_after, swap_cert,
				swap_key) == 3 &&
			 swap_after > 0)
			;
		else
			break;
	}
	if (i != argc || (!cert) != (!key)) {
		fprintf(stderr, "usage: https-echo [--cert PEM --key PEM] [--also STRING] [--log "
				"FILE] [--port N]\n"
				"                  [--swap N:PEM:KEY]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (cert) {
		ctx = SSL_CTX_new(TLS_server_method());
		if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
		    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
			fprintf(stderr, "https-echo: cannot load %s / %s\n", cert, key);
			return 1;
		}
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1024) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		perror("https-echo: listen");
		return 1;
	}
	printf("%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	for (;;) {
		struct client *c = calloc(1, sizeof(*c));
		pthread_t t;

		c->fd = accept(lfd, NULL, NULL);
		if (c->fd < 0) {
			free(c);
			continue;
		}
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (pthread_create(&t, NULL, serve, c)) {
			close(c->fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
}
