/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/proxy_client.c: drives bulkhead-broker in tests and benchmarks — raw bytes in and
 * everything back out (so tests can search every byte the guest would see), many concurrent
 * connections, and keep-alive latency through the broker or straight to the upstream. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <openssl/ssl.h>

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct timeval tv = { .tv_sec = 20 };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int write_all(int fd, SSL *ssl, const char *p, size_t n)
{
	while (n) {
		ssize_t w = ssl ? SSL_write(ssl, p, (int)n) : send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* raw: stdin to the socket, then everything the socket returns to stdout. */
static int cmd_raw(const char *sock)
{
	char buf[65536];
	ssize_t n;
	int fd = unix_connect(sock);

	if (fd < 0) {
		perror("proxy-client: connect");
		return 1;
	}
	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write_all(fd, NULL, buf, (size_t)n))
			break;
	shutdown(fd, SHUT_WR);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	close(fd);
	return 0;
}

struct resp {
	int done;
};

static int on_done(http_parser *p)
{
	((struct resp *)p->data)->done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings rs = { .on_message_complete = on_done };

/* One request on a kept-alive connection; returns the status or -1. */
static int roundtrip(int fd, SSL *ssl, const char *req)
{
	struct resp r = { 0 };
	http_parser p;
	char buf[65536];

	http_parser_init(&p, HTTP_RESPONSE);
	p.data = &r;
	if (write_all(fd, ssl, req, strlen(req)))
		return -1;
	while (!r.done) {
		int n = ssl ? SSL_read(ssl, buf, sizeof(buf)) : (int)recv(fd, buf, sizeof(buf), 0);

		if (n <= 0)
			return -1;
		http_parser_execute(&p, &rs, buf, (size_t)n);
		if (!r.done && HTTP_PARSER_ERRNO(&p) != HPE_OK)
			return -1;
	}
	return p.status_code;
}

struct load_arg {
	const char *sock, *req;
	pthread_barrier_t *bar;
	int ok;
};

static void *load_one(void *a)
{
	struct load_arg *l = a;
	int fd = unix_connect(l->sock);

	pthread_barrier_wait(l->bar);
	if (fd >= 0) {
		l->ok = roundtrip(fd, NULL, l->req) == 200;
		close(fd);
	}
	return NULL;
}

/* load: N connections opened together, each one request, all must get 200. */
static int cmd_load(const char *sock, int n, const char *url)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct load_arg *a = calloc((size_t)n, sizeof(*a));
	pthread_barrier_t bar;
	char req[1024];
	int i, ok = 0;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nConnection: close\r\n\r\n", url);
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (i = 0; i < n; i++) {
		a[i] = (struct load_arg){ sock, req, &bar, 0 };
		if (pthread_create(&t[i], NULL, load_one, &a[i])) {
			fprintf(stderr, "proxy-client: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		ok += a[i].ok;
	}
	printf("%d of %d\n", ok, n);
	pthread_barrier_destroy(&bar);
	free(t);
	free(a);
	return ok == n ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* bench: N keep-alive requests on one connection; prints "median_us p90_us req_per_s". */
static int bench(int fd, SSL *ssl, const char *req, int n)
{
	double *lat = calloc((size_t)n, sizeof(double)), t0 = now_us(), total;
	int i;

	for (i = 0; i < n; i++) {
		double s = now_us();

		if (roundtrip(fd, ssl, req) != 200) {
			fprintf(stderr, "proxy-client: request %d failed\n", i);
			return 1;
		}
		lat[i] = now_us() - s;
	}
	total = now_us() - t0;
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	printf("%.1f %.1f %.0f\n", lat[n / 2], lat[n * 9 / 10], n / (total / 1e6));
	free(lat);
	if (ssl) {
		SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);

		SSL_free(ssl);
		SSL_CTX_free(ctx);
	}
	close(fd);
	return 0;
}

static int cmd_bench_proxy(const char *sock, const char *url, int n)
{
	char req[1024];
	int fd = unix_connect(sock);

	if (fd < 0)
		return 1;
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n\r\n", url);
	return bench(fd, NULL, req, n);
}

static int cmd_bench_direct(int port, const char *ca, const char *name, const char *path, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	SSL_CTX_load_verify_locations(ctx, ca, NULL);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, name);
	SSL_set1_host(ssl, name);
	if (SSL_connect(ssl) != 1) {
		fprintf(stderr, "proxy-client: TLS to the upstream failed\n");
		return 1;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", path, name, port);
	return bench(fd, ssl, req, n);
}

/* tunnel: CONNECT AUTHORITY through the broker, TLS inside with server name SNI ("-": none),
 * verified against CAFILE for the name VERIFY; then stdin in and everything back out. The
 * CONNECT's answer goes to stdout as it came; a failed handshake prints "tls-failed". */
static int cmd_tunnel(const char *sock, const char *authority, const char *sni, const char *verify,
		      const char *ca)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	char buf[65536], head[1024];
	size_t hl = 0;
	ssize_t n;
	int fd = unix_connect(sock), l, rc = 1;
	SSL *ssl = NULL;

	/* Every way out frees what it made: a sanitizer build's leak check ends the tool
	 * otherwise, before stdout is flushed. */
	if (fd < 0 || !ctx || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
		goto out;
	l = snprintf(head, sizeof(head), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority,
		     authority);
	if (write_all(fd, NULL, head, (size_t)l))
		goto out;
	/* The CONNECT's answer, byte by byte so nothing of the TLS stream is taken. */
	while (hl < sizeof(head) - 1 && (hl < 4 || memcmp(head + hl - 4, "\r\n\r\n", 4))) {
		if (recv(fd, head + hl, 1, 0) != 1)
			break;
		hl++;
	}
	fwrite(head, 1, hl, stdout);
	rc = 0;
	if (strncmp(head, "HTTP/1.1 200", 12)) {
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
			fwrite(buf, 1, (size_t)n, stdout);
		goto out;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (strcmp(sni, "-"))
		SSL_set_tlsext_host_name(ssl, sni);
	SSL_set1_host(ssl, verify);
	if (SSL_connect(ssl) != 1) {
		printf("tls-failed\n");
		goto out;
	}
	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write_all(fd, ssl, buf, (size_t)n))
			break;
	while ((l = SSL_read(ssl, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)l, stdout);
out:
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* register: what `bulkhead run --broker` does — a listening socket at SOCK, registered with
 * the broker's control socket CTL for SESSION with the scope in SCOPE (a JSON file). Prints
 * the broker's answer, then holds the registration until stdin ends. */
static int cmd_register(const char *ctl, const char *session, const char *scope_path,
			const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char scope[65536], msg[70000], ans[1024];
	FILE *f = fopen(scope_path, "r");
	size_t n = f ? fread(scope, 1, sizeof(scope) - 1, f) : 0;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t r;
	int l;

	if (f)
		fclose(f);
	scope[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (scope[i] == '\n')
			scope[i] = ' ';
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (!n || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 256)) {
		perror("proxy-client register: session socket");
		return 1;
	}
	fd = unix_connect(ctl);
	if (fd < 0) {
		perror("proxy-client register: control socket");
		return 1;
	}
	l = snprintf(msg, sizeof(msg),
		     "{\"v\":1,\"op\":\"register\",\"session\":\"%s\",\"scope\":%s}\n", session,
		     scope);
	iov.iov_base = msg;
	iov.iov_len = (size_t)l;
	m.msg_control = cbuf.b;
	m.msg_controllen = sizeof(cbuf.b);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &lfd, sizeof(int));
	if (sendmsg(fd, &m, 0) != l) {
		perror("proxy-client register: send");
		return 1;
	}
	close(lfd);
	r = recv(fd, ans, sizeof(ans) - 1, 0);
	ans[r > 0 ? r : 0] = '\0';
	fputs(ans, stdout);
	fflush(stdout);
	while (read(0, msg, sizeof(msg)) > 0)
		;
	close(fd);
	return strstr(ans, "\"ok\":true") ? 0 : 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "raw"))
		return cmd_raw(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "load"))
		return cmd_load(argv[2], atoi(argv[3]), argv[4]);
	if (argc == 5 && !strcmp(argv[1], "bench"))
		return cmd_bench_proxy(argv[2], argv[3], atoi(argv[4]));
	if (argc == 7 && !strcmp(argv[1], "bench-direct"))
		return cmd_bench_direct(atoi(argv[2]), argv[3], argv[4], argv[5], atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "register"))
		return cmd_register(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 7 && !strcmp(argv[1], "tunnel"))
		return cmd_tunnel(argv[2], argv[3], argv[4], argv[5], argv[6]);
	fprintf(stderr,
		"usage: proxy-client raw SOCK < request-bytes\n"
		"       proxy-client register CTL SESSION SCOPE-FILE SOCK < hold\n"
		"       proxy-client tunnel SOCK HOST:PORT SNI|- VERIFY-NAME CAFILE < request\n"
		"       proxy-client load SOCK N URL\n"
		"       proxy-client bench SOCK URL N\n"
		"       proxy-client bench-direct PORT CAFILE NAME PATH N\n");
	return 2;
}
