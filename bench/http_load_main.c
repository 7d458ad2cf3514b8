/* SPDX-License-Identifier: Apache-2.0 */
/* bench/http_load_main.c: http-load, an HTTP/1.1 GET load generator for the broker benchmark,
 * keep-alive or a new connection per request — straight to an HTTPS upstream (verified TLS) or
 * as a guest would, through the broker's Unix socket: absolute-form requests, or CONNECT and
 * verified TLS to the broker's leaf (the session CA) with origin-form requests inside. Prints
 * latency percentiles and requests/s; any response that is not 200 with the expected body ends the
 * run with a non-zero exit. Here: the options, the run (http_load.c's workers) and the report. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "bench/http_load.h"

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
		"       http-load --proxy-unix SOCK --connect --url https://HOST:PORT/PATH\n"
		"                 --ca-file SESSION-CA [options]\n"
		"  -c CONNS          concurrent connections, one thread each (1)\n"
		"  -k, --no-keepalive  a new connection (TLS, CONNECT) per request, with\n"
		"                    Connection: close; its set-up is in the request's latency\n"
		"  -n REQUESTS       measured requests over all connections (5000)\n"
		"  -d SECONDS        or: measure for this long\n"
		"  -w WARMUP         unmeasured requests per connection first (100)\n"
		"  --body-length N   every body must be N bytes (default: as long as the first)\n"
		"  --expect STRING   every body must contain STRING\n"
		"  --label NAME      name on the output line (default: direct or proxy)\n"
		"  --json            one JSON object instead of the text line\n"
		"Every response must be 200 with the expected body, or the run fails (exit 1).\n");
}

/* What main() was asked for beyond the connections' common settings (L). */
struct load_args {
	const char *direct, *ca, *url, *label;
	int conns, json, connect;
};

/* The options into L and A. Returns -1 to go on, or the status to exit with. */
static int parse_args(int argc, char **argv, struct load_args *a)
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
		{ "connect", no_argument, NULL, 'T' },
		{ "no-keepalive", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o, bad = 0;
	char *end = "";

	L.total = 5000;
	L.warmup = 100;
	L.keepalive = 1;
	*a = (struct load_args){ .conns = 1 };
	while (!bad && (o = getopt_long(argc, argv, "c:n:d:w:kh", opts, NULL)) != -1) {
		switch (o) {
		case 'D':
			a->direct = optarg;
			break;
		case 'C':
			a->ca = optarg;
			break;
		case 'P':
			L.sock = optarg;
			break;
		case 'U':
			a->url = optarg;
			break;
		case 'B':
			L.body_len = strtol(optarg, &end, 10);
			bad = *end || L.body_len < 0;
			break;
		case 'E':
			L.expect = optarg;
			break;
		case 'L':
			a->label = optarg;
			break;
		case 'J':
			a->json = 1;
			break;
		case 'T':
			a->connect = L.tunnel = 1;
			break;
		case 'k':
			L.keepalive = 0;
			break;
		case 'c':
			a->conns = (int)strtol(optarg, &end, 10);
			bad = *end || a->conns < 1 || a->conns > 1000;
			break;
		case 'n':
			L.total = strtol(optarg, &end, 10);
			bad = *end || L.total < 1;
			break;
		case 'd':
			L.seconds = strtod(optarg, &end);
			bad = *end || !(L.seconds > 0);
			L.total = 0;
			break;
		case 'w':
			L.warmup = (int)strtol(optarg, &end, 10);
			bad = *end || L.warmup < 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad = 1;
		}
	}
	if (bad || optind != argc || (!a->direct) == (!L.sock) ||
	    (a->direct && (!a->ca || a->url || a->connect)) || (L.sock && !a->url) ||
	    (L.sock && (!a->ca) != !a->connect)) {
		usage(stderr);
		return 2;
	}
	if (!a->label)
		a->label = a->direct ? "direct" : a->connect ? "connect" : "proxy";
	return -1;
}

/* The one request every connection sends, and for --direct the verified TLS context. Returns
 * -1 to go on, or the status to exit with. */
static int build_request(const struct load_args *a)
{
	const char *path, *url = a->direct ? a->direct : a->url;
	const char *scheme = a->direct || a->connect ? "https" : "http";
	const char *close = L.keepalive ? "" : "Connection: close\r\n";

	if (parse_url(url, scheme, L.host, sizeof(L.host), L.port, sizeof(L.port), &path)) {
		fprintf(stderr, "http-load: %s wants %s://HOST[:PORT]/PATH, not %s\n",
			a->direct ? "--direct" : "--url", scheme, url);
		return 2;
	}
	if (a->ca) {
		L.tls = SSL_CTX_new(TLS_client_method());
		if (!L.tls || SSL_CTX_load_verify_locations(L.tls, a->ca, NULL) != 1) {
			fprintf(stderr, "http-load: cannot load CA %s\n", a->ca);
			return 1;
		}
		SSL_CTX_set_min_proto_version(L.tls, TLS1_2_VERSION);
		SSL_CTX_set_verify(L.tls, SSL_VERIFY_PEER, NULL);
	}
	/* Origin form over TLS (straight, or in the tunnel); absolute form to the broker. */
	L.req_len =
		(size_t)snprintf(L.req, sizeof(L.req), "GET %s HTTP/1.1\r\nHost: %s:%s\r\n%s\r\n",
				 L.tls ? path : url, L.host, L.port, close);
	if (L.req_len >= sizeof(L.req)) {
		fprintf(stderr, "http-load: URL too long\n");
		return 2;
	}
	return -1;
}

/* Starts the connections, starts the clock once all are warm, joins them. Returns 0, or 1 after
 * a line per failure; *t0 and *t1: the measured span. */
static int run(const struct load_args *a, struct worker *ws, uint64_t *t0, uint64_t *t1)
{
	pthread_attr_t attr;
	int rc = 0;

	/* Small stacks: 512 connections are 512 threads beside the server on the same CPUs. */
	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 256 << 10) ||
	    pthread_barrier_init(&load_warm, NULL, (unsigned)a->conns + 1)) {
		fprintf(stderr, "http-load: out of memory\n");
		return 1;
	}
	atomic_store(&load_tickets, L.total);
	for (int i = 0; i < a->conns; i++) {
		ws[i].fd = -1;
		if (pthread_create(&ws[i].t, &attr, load_work, &ws[i])) {
			/* The started ones wait at the barrier: end the process, not just main. */
			fprintf(stderr, "http-load: cannot start thread %d\n", i);
			exit(1);
		}
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&load_warm);
	*t0 = load_now_ns();
	load_deadline_ns = *t0 + (uint64_t)(L.seconds * 1e9);
	pthread_barrier_wait(&load_warm);
	*t1 = 0;
	for (int i = 0; i < a->conns; i++) {
		pthread_join(ws[i].t, NULL);
		if (ws[i].err[0]) {
			fprintf(stderr, "http-load: %s, connection %d: %s\n", a->label, i,
				ws[i].err);
			rc = 1;
		}
		if (ws[i].end_ns > *t1)
			*t1 = ws[i].end_ns;
	}
	return rc;
}

/* Every measured latency, sorted, and the one line (or JSON object) that reports them. */
static int report(const struct load_args *a, struct worker *ws, uint64_t t0, uint64_t t1)
{
	unsigned long reconnects = 0;
	size_t n = 0, k = 0;
	uint64_t *all;

	for (int i = 0; i < a->conns; i++) {
		n += ws[i].n;
		reconnects += ws[i].reconnects;
	}
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all || !n) {
		fprintf(stderr, "http-load: %s: no request measured\n", a->label);
		return 1;
	}
	for (int i = 0; i < a->conns; i++) {
		memcpy(all + k, ws[i].lat, ws[i].n * sizeof(*all));
		k += ws[i].n;
		free(ws[i].lat);
	}
	qsort(all, n, sizeof(*all), cmp_u64);

	double secs = (double)(t1 - t0) / 1e9, rps = (double)n / secs;
	double p50 = pct_ms(all, n, 0.5), p90 = pct_ms(all, n, 0.9);
	double p99 = pct_ms(all, n, 0.99), max = (double)all[n - 1] / 1e6;
	long blen = L.body_len >= 0 ? L.body_len : atomic_load(&load_body_len_seen);

	if (a->json)
		printf("{\"label\": \"%s\", \"conns\": %d, \"requests\": %zu, "
		       "\"seconds\": %.3f, \"rps\": %.0f, \"p50_ms\": %.4f, "
		       "\"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, "
		       "\"body_bytes\": %ld, \"reconnects\": %lu}\n",
		       a->label, a->conns, n, secs, rps, p50, p90, p99, max, blen, reconnects);
	else
		printf("%s: %d conn, %zu requests in %.2f s: %.0f req/s, latency p50 %.3f "
		       "ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms; %lu reconnects%s\n",
		       a->label, a->conns, n, secs, rps, p50, p90, p99, max, reconnects,
		       reconnects ? " (the server closed kept-alive connections; each "
				    "reconnect is inside the latency of its request)"
				  : "");
	free(all);
	return 0;
}

int main(int argc, char **argv)
{
	struct load_args a;
	struct worker *ws;
	uint64_t t0, t1;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	rc = build_request(&a);
	if (rc >= 0)
		return rc;
	ws = calloc((size_t)a.conns, sizeof(*ws));
	if (!ws) {
		fprintf(stderr, "http-load: out of memory\n");
		return 1;
	}
	rc = run(&a, ws, &t0, &t1);
	if (!rc)
		rc = report(&a, ws, t0, t1);
	free(ws);
	SSL_CTX_free(L.tls);
	return rc;
}
