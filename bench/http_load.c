/* bench/http_load.c: http-load, a keep-alive HTTP/1.1 GET load generator for the broker benchmark —
 * straight to an HTTPS upstream (verified TLS) or as a guest would, through the broker's Unix
 * socket with absolute-form requests. Prints latency percentiles and requests/s; any response that
 * is not 200 with the expected body ends the run with a non-zero exit. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
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

#define LOAD_BODY_KEEP	  65536 /* body bytes kept per response for --expect */
#define LOAD_IO_TIMEOUT_S 15	/* a stalled server fails the run instead of hanging it */

/* What every connection does; set once in main(). */
static struct {
	const char *sock; /* --proxy-unix: the broker's socket */
	char host[256];	  /* --direct: where to connect, the name TLS verifies */
	char port[8];
	SSL_CTX *tls;	/* --direct only */
	char req[1200]; /* the request, identical every time */
	size_t req_len;
	const char *expect; /* --expect: the body must contain this */
	long body_len;	    /* --body-length, or learnt from the first response (-1: not yet) */
	long total;	    /* -n: measured requests over all connections */
	double seconds;	    /* -d: or for this long */
	int warmup;	    /* -w: requests per connection before measuring */
} L = { .body_len = -1 };

static _Atomic long body_len_seen = -1;
static atomic_long tickets;    /* -n: measured requests still to hand out */
static atomic_int failed;      /* one connection failed: the others stop */
static pthread_barrier_t warm; /* twice: all connections warmed up; the clock has started */
static uint64_t deadline_ns;

struct worker {
	pthread_t t;
	int fd;
	SSL *ssl;
	uint64_t *lat; /* ns per measured request */
	size_t n, cap;
	unsigned long reconnects; /* the server closed a kept-alive connection */
	unsigned long served;	  /* responses on the current connection */
	uint64_t end_ns;
	char err[512];
	/* the response being read */
	http_parser p;
	int done;
	size_t body_n;
	char body[LOAD_BODY_KEEP];
};

static uint64_t now_ns(void)
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

static int connect_tls(struct worker *w)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	unsigned char ip[16];
	int one = 1, rc, err = 0;
	long vr;

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
		set_err(w, "TLS to %s: %s", L.host, why ? why : "handshake failed");
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
	return L.sock ? connect_unix(w) : connect_tls(w);
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
		atomic_compare_exchange_strong(&body_len_seen, &none, (long)w->body_n);
		want = atomic_load(&body_len_seen);
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
	if (!http_should_keep_alive(&w->p)) {
		conn_close(w);
		w->reconnects++;
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

static void *work(void *arg)
{
	struct worker *w = arg;
	int i;

	for (i = 0; i < L.warmup && !atomic_load(&failed); i++)
		if (request(w)) {
			atomic_store(&failed, 1);
			break;
		}
	w->reconnects = 0; /* only those in the measured part count */
	pthread_barrier_wait(&warm);
	pthread_barrier_wait(&warm); /* main() has set the clock and the deadline */
	while (!atomic_load(&failed)) {
		uint64_t s;

		if (L.total ? atomic_fetch_sub(&tickets, 1) <= 0 : now_ns() >= deadline_ns)
			break;
		s = now_ns();
		if (request(w) || record(w, now_ns() - s)) {
			atomic_store(&failed, 1);
			break;
		}
	}
	w->end_ns = now_ns();
	conn_close(w);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least P of all at or below it. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
	size_t r = (size_t)(p * (double)n + 0.999999);

	return (double)v[r ? r - 1 : 0] / 1e6;
}

/* URL: scheme://host[:port][/path]; fills host, port, the path (origin form). */
static int parse_url(const char *url, const char *scheme, char *host, size_t hl, char *port,
		     size_t pl, const char **path)
{
	const char *h, *e, *c;
	size_t sl = strlen(scheme);

	if (strncmp(url, scheme, sl) || strncmp(url + sl, "://", 3))
		return -1;
	h = url + sl + 3;
	e = h + strcspn(h, "/");
	c = memchr(h, ':', (size_t)(e - h));
	if ((size_t)((c ? c : e) - h) >= hl || c == h || e == h)
		return -1;
	snprintf(host, hl, "%.*s", (int)((c ? c : e) - h), h);
	if (c) {
		if ((size_t)(e - c - 1) >= pl || e == c + 1)
			return -1;
		snprintf(port, pl, "%.*s", (int)(e - c - 1), c + 1);
	} else {
		snprintf(port, pl, "%s", !strcmp(scheme, "https") ? "443" : "80");
	}
	*path = *e ? e : "/";
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: http-load --direct https://HOST:PORT/PATH --ca-file CA [options]\n"
		"       http-load --proxy-unix SOCK --url http://HOST:PORT/PATH [options]\n"
		"  -c CONNS          concurrent keep-alive connections, one thread each (1)\n"
		"  -n REQUESTS       measured requests over all connections (5000)\n"
		"  -d SECONDS        or: measure for this long\n"
		"  -w WARMUP         unmeasured requests per connection first (100)\n"
		"  --body-length N   every body must be N bytes (default: as long as the first)\n"
		"  --expect STRING   every body must contain STRING\n"
		"  --label NAME      name on the output line (default: direct or proxy)\n"
		"  --json            one JSON object instead of the text line\n"
		"Every response must be 200 with the expected body, or the run fails (exit 1).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "direct", required_argument, NULL, 'D' },
		{ "ca-file", required_argument, NULL, 'C' },
		{ "proxy-unix", required_argument, NULL, 'P' },
		{ "url", required_argument, NULL, 'U' },
		{ "body-length", required_argument, NULL, 'B' },
		{ "expect", required_argument, NULL, 'E' },
		{ "label", required_argument, NULL, 'L' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *direct = NULL, *ca = NULL, *url = NULL, *label = NULL, *path;
	struct worker *ws;
	uint64_t *all, t0, t1 = 0;
	unsigned long reconnects = 0;
	size_t n = 0, k;
	int o, i, conns = 1, json = 0, rc = 0;
	char *end;

	L.total = 5000;
	L.warmup = 100;
	while ((o = getopt_long(argc, argv, "c:n:d:w:h", opts, NULL)) != -1) {
		switch (o) {
		case 'D':
			direct = optarg;
			break;
		case 'C':
			ca = optarg;
			break;
		case 'P':
			L.sock = optarg;
			break;
		case 'U':
			url = optarg;
			break;
		case 'B':
			L.body_len = strtol(optarg, &end, 10);
			if (*end || L.body_len < 0)
				goto bad;
			break;
		case 'E':
			L.expect = optarg;
			break;
		case 'L':
			label = optarg;
			break;
		case 'J':
			json = 1;
			break;
		case 'c':
			conns = (int)strtol(optarg, &end, 10);
			if (*end || conns < 1 || conns > 1000)
				goto bad;
			break;
		case 'n':
			L.total = strtol(optarg, &end, 10);
			if (*end || L.total < 1)
				goto bad;
			break;
		case 'd':
			L.seconds = strtod(optarg, &end);
			if (*end || !(L.seconds > 0))
				goto bad;
			L.total = 0;
			break;
		case 'w':
			L.warmup = (int)strtol(optarg, &end, 10);
			if (*end || L.warmup < 0)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc || (!direct) == (!L.sock) || (direct && (!ca || url)) ||
	    (L.sock && !url))
		goto bad;
	signal(SIGPIPE, SIG_IGN);
	if (direct) {
		if (parse_url(direct, "https", L.host, sizeof(L.host), L.port, sizeof(L.port),
			      &path)) {
			fprintf(stderr,
				"http-load: --direct wants https://HOST[:PORT]/PATH, not %s\n",
				direct);
			return 2;
		}
		L.tls = SSL_CTX_new(TLS_client_method());
		if (!L.tls || SSL_CTX_load_verify_locations(L.tls, ca, NULL) != 1) {
			fprintf(stderr, "http-load: cannot load CA %s\n", ca);
			return 1;
		}
		SSL_CTX_set_min_proto_version(L.tls, TLS1_2_VERSION);
		SSL_CTX_set_verify(L.tls, SSL_VERIFY_PEER, NULL);
		L.req_len = (size_t)snprintf(L.req, sizeof(L.req),
					     "GET %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", path, L.host,
					     L.port);
	} else {
		char host[256], port[8];

		if (parse_url(url, "http", host, sizeof(host), port, sizeof(port), &path)) {
			fprintf(stderr, "http-load: --url wants http://HOST[:PORT]/PATH, not %s\n",
				url);
			return 2;
		}
		L.req_len =
			(size_t)snprintf(L.req, sizeof(L.req),
					 "GET %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", url, host, port);
	}
	if (L.req_len >= sizeof(L.req)) {
		fprintf(stderr, "http-load: URL too long\n");
		return 2;
	}
	if (!label)
		label = direct ? "direct" : "proxy";

	ws = calloc((size_t)conns, sizeof(*ws));
	if (!ws || pthread_barrier_init(&warm, NULL, (unsigned)conns + 1)) {
		fprintf(stderr, "http-load: out of memory\n");
		return 1;
	}
	atomic_store(&tickets, L.total);
	for (i = 0; i < conns; i++) {
		ws[i].fd = -1;
		if (pthread_create(&ws[i].t, NULL, work, &ws[i])) {
			fprintf(stderr, "http-load: cannot start thread %d\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&warm);
	t0 = now_ns();
	deadline_ns = t0 + (uint64_t)(L.seconds * 1e9);
	pthread_barrier_wait(&warm);
	for (i = 0; i < conns; i++) {
		pthread_join(ws[i].t, NULL);
		if (ws[i].err[0]) {
			fprintf(stderr, "http-load: %s, connection %d: %s\n", label, i, ws[i].err);
			rc = 1;
		}
		n += ws[i].n;
		reconnects += ws[i].reconnects;
		if (ws[i].end_ns > t1)
			t1 = ws[i].end_ns;
	}
	if (rc)
		return 1;
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all || !n) {
		fprintf(stderr, "http-load: %s: no request measured\n", label);
		return 1;
	}
	for (i = 0, k = 0; i < conns; i++) {
		memcpy(all + k, ws[i].lat, ws[i].n * sizeof(*all));
		k += ws[i].n;
		free(ws[i].lat);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	{
		double secs = (double)(t1 - t0) / 1e9, rps = (double)n / secs;
		double p50 = pct_ms(all, n, 0.5), p90 = pct_ms(all, n, 0.9);
		double p99 = pct_ms(all, n, 0.99), max = (double)all[n - 1] / 1e6;
		long blen = L.body_len >= 0 ? L.body_len : atomic_load(&body_len_seen);

		if (json)
			printf("{\"label\": \"%s\", \"conns\": %d, \"requests\": %zu, "
			       "\"seconds\": %.3f, \"rps\": %.0f, \"p50_ms\": %.4f, "
			       "\"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, "
			       "\"body_bytes\": %ld, \"reconnects\": %lu}\n",
			       label, conns, n, secs, rps, p50, p90, p99, max, blen, reconnects);
		else
			printf("%s: %d conn, %zu requests in %.2f s: %.0f req/s, latency p50 %.3f "
			       "ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms; %lu reconnects%s\n",
			       label, conns, n, secs, rps, p50, p90, p99, max, reconnects,
			       reconnects ? " (the server closed kept-alive connections; each "
					    "reconnect is inside the latency of its request)"
					  : "");
	}
	free(all);
	free(ws);
	SSL_CTX_free(L.tls);
	return 0;
bad:
	usage(stderr);
	return 2;
}
