/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/git_https_server.c: a git smart-HTTP server for tests — TLS (>= 1.2) on 127.0.0.1
 * in front of the real `git http-backend` run as a CGI, refusing every request without one exact
 * Authorization value. One forked process and one request per connection (Connection: close).
 * Request bodies (Content-Length or chunked) are spooled to an unlinked temp file, so the CGI
 * gets an exact CONTENT_LENGTH and can never deadlock against us. Prints its port on stdout.
 * This half: TLS, the request's parsing and checks, the log; the CGI is git_https_cgi.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/io.h"
#include "tests/tools/git_https_server.h"

#include <http_parser.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

static SSL_CTX *ctx;
const char *root, *backend; /* for git_https_cgi.c */
static const char *auth;
static char backend_buf[4096], root_buf[PATH_MAX];
static int log_fd = -1, idle_secs = 30;

static int fail(struct conn *c, http_parser *p, int status)
{
	c->status = status;
	http_parser_pause(p, 1);
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	c->method_seen = 1;
	if (n > MAX_URL - c->ulen)
		return fail(c, p, 414);
	memcpy(c->url + c->ulen, at, n);
	c->ulen += n;
	return 0;
}

/* Names and values arrive in pieces; each is stored NUL-terminated in c->head. */
static int head_add(struct conn *c, const char *at, size_t n, int term)
{
	if (n + 1 > MAX_HEAD - c->hlen)
		return -1;
	memcpy(c->head + c->hlen, at, n);
	c->hlen += n;
	if (term)
		c->head[c->hlen++] = 0;
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->in_value || !c->nh) {
		if ((c->nh && head_add(c, "", 0, 1)) || c->nh == MAX_HEADERS)
			return fail(c, p, 431);
		c->h[c->nh++] = (struct hdr){ .name = c->hlen };
		c->in_value = 0;
	}
	c->h[c->nh - 1].nlen += n;
	return head_add(c, at, n, 0) ? fail(c, p, 431) : 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct hdr *h = &c->h[c->nh ? c->nh - 1 : 0];

	if (!c->nh)
		return fail(c, p, 400);
	if (!c->in_value) {
		if (head_add(c, "", 0, 1))
			return fail(c, p, 431);
		h->value = c->hlen;
		c->in_value = 1;
	}
	h->vlen += n;
	return head_add(c, at, n, 0) ? fail(c, p, 431) : 0;
}

/* The value of header NAME, or NULL; *dup counts how often it was sent. */
const char *header(struct conn *c, const char *name, int *dup)
{
	const char *v = NULL;
	int i, k = 0;

	for (i = 0; i < c->nh; i++) {
		if (!strcasecmp(c->head + c->h[i].name, name)) {
			v = c->head + c->h[i].value;
			k++;
		}
	}
	if (dup)
		*dup = k;
	return v;
}

int tls_write(struct conn *c, const void *b, size_t n)
{
	const char *s = b;

	while (n) {
		int w = SSL_write(c->ssl, s, n > INT32_MAX ? INT32_MAX : (int)n);

		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int on_headers(http_parser *p)
{
	struct conn *c = p->data;
	const char *v, *e;
	int i, k;

	if (c->status)
		return 0;
	if (c->nh) {
		if (head_add(c, "", 0, 1))
			return fail(c, p, 431);
		if (!c->in_value) /* a name without a value */
			return fail(c, p, 400);
	}
	for (i = 0; i < c->nh; i++) /* a NUL inside a name or value */
		if (strlen(c->head + c->h[i].name) != c->h[i].nlen ||
		    strlen(c->head + c->h[i].value) != c->h[i].vlen)
			return fail(c, p, 400);
	v = header(c, "Authorization", &k);
	if (!v)
		c->auth_state = "absent";
	else if (k != 1 || strlen(v) != strlen(auth) || CRYPTO_memcmp(v, auth, strlen(auth)))
		c->auth_state = "wrong";
	else
		c->auth_state = "ok";
	c->chunked = !!(p->flags & F_CHUNKED);
	e = header(c, "Content-Encoding", NULL);
	c->gzip = e && (!strcasecmp(e, "gzip") || !strcasecmp(e, "x-gzip"));
	v = header(c, "Git-Protocol", NULL);
	c->v2 = v && strstr(v, "version=2");
	if (strcmp(c->auth_state, "ok"))
		return fail(c, p, 401);
	if (!c->chunked && (p->flags & F_CONTENTLENGTH) && p->content_length > MAX_BODY)
		return fail(c, p, 413);
	v = header(c, "Expect", NULL);
	if (v && !strcasecmp(v, "100-continue") && p->http_minor >= 1 &&
	    tls_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
		return -1;
	return 0;
}

/* An unlinked file in $TMPDIR (or /tmp): the body on disk, not in memory. */
static int spool_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!dir || !*dir || strlen(dir) > sizeof(path) - 32)
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/git-https-server.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->status)
		return 0;
	if (c->spool < 0 && (c->spool = spool_open()) < 0)
		return fail(c, p, 500);
	if (n > MAX_BODY - c->body)
		return fail(c, p, 413);
	c->body += n;
	return io_write_full(c->spool, at, n) ? fail(c, p, 500) : 0;
}

static int on_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->complete = 1;
	http_parser_pause(p, 1);
	return 0;
}

const char *reason(int status)
{
	static const struct {
		int status;
		const char *text;
	} r[] = { { 200, "OK" },
		  { 400, "Bad Request" },
		  { 401, "Unauthorized" },
		  { 403, "Forbidden" },
		  { 404, "Not Found" },
		  { 408, "Request Timeout" },
		  { 413, "Content Too Large" },
		  { 414, "URI Too Long" },
		  { 431, "Request Header Fields Too Large" },
		  { 502, "Bad Gateway" } };
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].status == status)
			return r[i].text;
	return status < 500 ? "Error" : "Internal Server Error";
}

static void send_error(struct conn *c, int status)
{
	char b[512];
	const char *r = reason(status);
	int n = snprintf(b, sizeof(b),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "%sConnection: close\r\n\r\n%s\n",
			 status, r, strlen(r) + 1,
			 status == 401 ? "WWW-Authenticate: Basic realm=\"test\"\r\n" : "", r);

	tls_write(c, b, (size_t)n);
}

/* One line per request; the URL is made printable, the Authorization value never appears. */
static void log_request(struct conn *c, http_parser *p, int status, int cgi_exit)
{
	char line[MAX_URL + 256];
	size_t i, n;

	if (log_fd < 0)
		return;
	n = (size_t)snprintf(line, sizeof(line), "%s ",
			     c->method_seen ? http_method_str((enum http_method)p->method) : "-");
	for (i = 0; i < c->ulen; i++)
		line[n++] = c->url[i] > ' ' && c->url[i] < 127 ? c->url[i] : '?';
	if (!c->ulen)
		line[n++] = '-';
	n += (size_t)snprintf(line + n, sizeof(line) - n, " %d auth=%s body=%llu%s%s%s", status,
			      c->auth_state, (unsigned long long)c->body,
			      c->chunked ? " chunked" : "", c->gzip ? " gzip" : "",
			      c->v2 ? " v2" : "");
	if (cgi_exit)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " cgi-exit=%d", cgi_exit);
	line[n++] = '\n';
	if (write(log_fd, line, n) != (ssize_t)n)
		perror("git-https-server: log");
}

static void serve(int fd, const struct sockaddr_in *peer)
{
	static const http_parser_settings s = { .on_url = on_url,
						.on_header_field = on_field,
						.on_header_value = on_value,
						.on_headers_complete = on_headers,
						.on_body = on_body,
						.on_message_complete = on_complete };
	static struct conn conn;
	struct conn *c = &conn;
	struct timeval tv = { .tv_sec = idle_secs };
	http_parser p;
	char buf[16384];
	int status = 0, cgi_exit = 0, got = 0;

	c->fd = fd;
	c->spool = -1;
	c->auth_state = "-"; /* until the request's headers are complete */
	inet_ntop(AF_INET, &peer->sin_addr, c->peer, sizeof(c->peer));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->ssl = SSL_new(ctx);
	if (!c->ssl || !SSL_set_fd(c->ssl, fd) || SSL_accept(c->ssl) != 1)
		return;
	http_parser_init(&p, HTTP_REQUEST);
	p.data = c;
	while (!c->complete && !c->status) {
		size_t done;
		int n;

		errno = 0;
		n = SSL_read(c->ssl, buf, sizeof(buf));
		if (n <= 0) {
			if (!got)
				return; /* connected and left (or idled out) before a request */
			c->status = errno == EAGAIN || errno == EWOULDBLOCK ? 408 : 400;
			break;
		}
		got = 1;
		done = http_parser_execute(&p, &s, buf, (size_t)n);
		if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED)
			break;
		if (done != (size_t)n || HTTP_PARSER_ERRNO(&p) != HPE_OK) {
			if (!c->status)
				c->status = 400;
			break;
		}
	}
	if (!c->status)
		status = run_cgi(c, &p, &cgi_exit);
	else
		status = c->status;
	if (status > 0)
		send_error(c, status);
	log_request(c, &p, status < 0 ? -status : status, cgi_exit);
	SSL_shutdown(c->ssl);
	if (!c->complete) {
		/* Unread request bytes would make close() send a reset that can destroy our
		 * answer before the client reads it: drain for a moment first. */
		tv.tv_sec = 2;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		shutdown(fd, SHUT_WR);
		for (got = 0; got < 1024 && recv(fd, buf, sizeof(buf), 0) > 0; got++)
			;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	const char *cert = NULL, *key = NULL, *logname = NULL;
	FILE *git;
	int i, lfd, one = 1;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cert"))
			cert = argv[i + 1];
		else if (!strcmp(argv[i], "--key"))
			key = argv[i + 1];
		else if (!strcmp(argv[i], "--root"))
			root = argv[i + 1];
		else if (!strcmp(argv[i], "--auth"))
			auth = argv[i + 1];
		else if (!strcmp(argv[i], "--idle"))
			idle_secs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--log"))
			logname = argv[i + 1];
		else
			break;
	}
	if (i != argc || !cert || !key || !root || !auth || idle_secs <= 0) {
		fprintf(stderr, "usage: git-https-server --cert PEM --key PEM --root DIR "
				"--auth VALUE [--log FILE] [--idle SECONDS]\n");
		return 2;
	}
	if (!realpath(root, root_buf)) {
		fprintf(stderr, "git-https-server: --root %s: %s\n", root, strerror(errno));
		return 1;
	}
	root = root_buf;
	if (logname &&
	    (log_fd = open(logname, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "git-https-server: %s: %s\n", logname, strerror(errno));
		return 1;
	}
	git = popen("git --exec-path", "r");
	if (!git || !fgets(backend_buf, sizeof(backend_buf) - 32, git) || pclose(git)) {
		fprintf(stderr, "git-https-server: `git --exec-path` failed; is git installed?\n");
		return 1;
	}
	backend_buf[strcspn(backend_buf, "\n")] = 0;
	strcat(backend_buf, "/git-http-backend");
	backend = backend_buf;
	if (access(backend, X_OK)) {
		fprintf(stderr, "git-https-server: %s: %s\n", backend, strerror(errno));
		return 1;
	}
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "git-https-server: cannot load %s / %s\n", cert, key);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* connection processes reap themselves */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		perror("git-https-server: listen");
		return 1;
	}
	printf("%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	for (;;) {
		struct sockaddr_in peer;
		socklen_t pl = sizeof(peer);
		int fd = accept(lfd, (struct sockaddr *)&peer, &pl);
		pid_t pid;

		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pid = fork();
		if (!pid) {
			close(lfd);
			signal(SIGCHLD, SIG_DFL); /* we wait for our CGI ourselves */
			alarm(CONN_LIMIT);
			serve(fd, &peer);
			_exit(0);
		}
		close(fd);
	}
}
