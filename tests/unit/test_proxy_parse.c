/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_proxy_parse.c: hostile request heads against proxy_serve() over a socketpair —
 * bad lengths, both framings, oversized and too many headers, non-absolute URLs, dot segments,
 * CONNECT, Host mismatch, default deny, tripwire, private addresses — each answered with the
 * right status before anything leaves the broker. */
#include "broker/proxy.h"
#include "broker/rules.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static struct rules rules;
static struct proxy_config cfg;

static int fake_get(void *arg, const struct rules_secret *s, int flags, uint8_t **val, size_t *len,
		    int64_t *until_ms, char *why, size_t whylen)
{
	(void)arg;
	(void)flags;
	(void)until_ms;
	(void)why;
	(void)whylen;
	if (strcmp(s->name, "TOK"))
		return -ENOENT;
	*val = (uint8_t *)strdup("tok-value-123");
	*len = strlen("tok-value-123");
	return 0;
}

static struct secret_source src = { .get = fake_get };

struct srv {
	int fd;
};

static void *serve(void *arg)
{
	proxy_serve(&cfg, ((struct srv *)arg)->fd, 1);
	return NULL;
}

/* Sends REQ (LEN bytes), closes our write side, returns everything the broker answered. */
static char *exchange(const char *req, size_t len)
{
	static char out[65536];
	struct srv s;
	pthread_t t;
	size_t n = 0, off = 0;
	ssize_t r;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s.fd = sv[1];
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	while (off < len) {
		r = send(sv[0], req + off, len - off, MSG_NOSIGNAL);
		if (r <= 0)
			break; /* the broker may stop reading early: that is allowed */
		off += (size_t)r;
	}
	shutdown(sv[0], SHUT_WR);
	while ((r = recv(sv[0], out + n, sizeof(out) - 1 - n, 0)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(sv[0]);
	pthread_join(t, NULL);
	return out;
}

static void expect(const char *req, const char *status, const char *body_part)
{
	char *out = exchange(req, strlen(req));

	if (strncmp(out, status, strlen(status)))
		fail_msg("request %.60s...: expected %s, got: %.200s", req, status, out);
	if (body_part && !strstr(out, body_part))
		fail_msg("request %.60s...: no \"%s\" in: %.300s", req, body_part, out);
}

static int setup(void **state)
{
	static const char *json =
		"{\"secrets\":[{\"name\":\"TOK\",\"inject\":{\"header\":\"Authorization\","
		"\"value\":\"Bearer {}\"},\"destinations\":[{\"scheme\":\"https\",\"host\":"
		"\"api.test\"}]}],\"allow\":[{\"scheme\":\"http\",\"host\":\"127.0.0.1\",\"port\":"
		"9},{\"scheme\":\"http\",\"host\":\"other.test\",\"port\":9}]}";
	char err[256];

	(void)state;
	assert_int_equal(rules_load_json(&rules, json, err, sizeof(err)), 0);
	cfg.rules = &rules;
	cfg.secrets = &src;
	cfg.io_timeout_ms = 5000;
	cfg.connect_timeout_ms = 1000;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rules_free(&rules);
	return 0;
}

#define GET "GET http://nowhere.test/x HTTP/1.1\r\nHost: nowhere.test\r\n"

static void test_lengths(void **state)
{
	(void)state;
	expect("POST http://nowhere.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
	       "chunked\r\n\r\n0\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-"
	       "Length: 5\r\n\r\n0\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: "
	       "5\r\n\r\nhello",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 400",
	       NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nContent-Length: "
	       "99999999999999999999999\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("POST http://nowhere.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	       "HTTP/1.1 400", NULL);
}

static void test_sizes(void **state)
{
	static char big[PROXY_MAX_HEAD + 4096];
	size_t n;
	int i;

	(void)state;
	/* One huge header value. */
	n = (size_t)snprintf(big, sizeof(big), GET "X-Big: ");
	memset(big + n, 'a', PROXY_MAX_HEAD);
	memcpy(big + n + PROXY_MAX_HEAD, "\r\n\r\n", 5);
	expect(big, "HTTP/1.1 400", "larger than");
	/* Too many small headers. */
	n = (size_t)snprintf(big, sizeof(big), GET);
	for (i = 0; i < PROXY_MAX_HEADERS + 1; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X-H%d: v\r\n", i);
	snprintf(big + n, sizeof(big) - n, "\r\n");
	expect(big, "HTTP/1.1 400", "more than");
	/* A URL past the limit. */
	n = (size_t)snprintf(big, sizeof(big), "GET http://nowhere.test/");
	memset(big + n, 'u', PROXY_MAX_URL);
	snprintf(big + n + PROXY_MAX_URL, sizeof(big) - n - PROXY_MAX_URL, " HTTP/1.1\r\n\r\n");
	expect(big, "HTTP/1.1 400", "URL longer");
	/* At the limits (64 headers), the request is parsed and decided: default deny. */
	n = (size_t)snprintf(big, sizeof(big), GET);
	for (i = 0; i < PROXY_MAX_HEADERS - 1; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X-H%d: v\r\n", i);
	snprintf(big + n, sizeof(big) - n, "\r\n");
	expect(big, "HTTP/1.1 403", "no rule allows GET http://nowhere.test/x");
}

static void test_targets(void **state)
{
	(void)state;
	expect("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n", "HTTP/1.1 400", "absolute URL");
	expect("GET ftp://api.test/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400", NULL);
	expect("GET http://u:p@api.test/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400", "credentials");
	expect("GET http://api.test/a/../b HTTP/1.1\r\n\r\n", "HTTP/1.1 400", "dot segment");
	expect("GET http://api.test/a/%2e%2e/b HTTP/1.1\r\n\r\n", "HTTP/1.1 400", NULL);
	expect("GET http://api.test/a%2Fb HTTP/1.1\r\n\r\n", "HTTP/1.1 400", NULL);
	expect("GET http://api.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", "HTTP/1.1 400",
	       "Host header");
	expect("GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\nHost: api.test\r\n\r\n",
	       "HTTP/1.1 400", NULL);
	expect("GET http://api.test/ HTTP/1.1\r\nHost: api.test:443\r\n\r\n", "HTTP/1.1 400",
	       "Host header");
	expect("GET http://api.test:9/ HTTP/1.1\r\nHost: api.test:09x\r\n\r\n", "HTTP/1.1 400",
	       "Host header");
	expect("GET http://[::1]:9/ HTTP/1.1\r\nHost: [::2]:9\r\n\r\n", "HTTP/1.1 400",
	       "Host header");
	/* Matching Host headers pass the check and reach the decision (default deny). */
	expect("GET http://[::1]:9/ HTTP/1.1\r\nHost: [::1]:9\r\n\r\n", "HTTP/1.1 403", NULL);
	expect("GET http://API.test:9/ HTTP/1.1\r\nHost: api.TEST:9\r\n\r\n", "HTTP/1.1 403",
	       "no rule allows");
	expect("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n", "HTTP/1.1 501",
	       "CONNECT");
	/* Only WebSocket upgrades, and only a well-formed handshake (proxy_ws.c). */
	expect("GET http://api.test/ HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
	       "HTTP/1.1 501", "websocket");
	expect("GET http://api.test/ HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	       "HTTP/1.1 400", "Sec-WebSocket-Key");
	expect("GET http://api.test/ HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
	       "HTTP/1.1 400", "Version: 13");
	expect("POST http://api.test/ HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
	       "HTTP/1.1 400", "GET in HTTP/1.1");
	expect("this is not http\r\n\r\n", "HTTP/1.1 400", "malformed");
	expect("GET http://api.test/ HTTP/1.1\r\nBad Header\r\n\r\n", "HTTP/1.1 400", NULL);
}

static void test_policy(void **state)
{
	(void)state;
	expect(GET "\r\n", "HTTP/1.1 403", "no rule allows GET http://nowhere.test/x");
	/* The rule is for port 443; another port on the same host is another destination. */
	expect("GET http://api.test:8443/ HTTP/1.1\r\n\r\n", "HTTP/1.1 403", "no rule allows");
	/* A placeholder toward a host its secret is not bound to: blocked, in a header ... */
	expect("GET http://other.test:9/ HTTP/1.1\r\nX-Token: BULKHEAD_SECRET_TOK\r\n\r\n",
	       "HTTP/1.1 403", "tripwire");
	/* ... in the query, and in a header the broker would drop anyway. */
	expect("GET http://other.test:9/?k=BULKHEAD_SECRET_TOK HTTP/1.1\r\n\r\n", "HTTP/1.1 403",
	       "tripwire");
	expect("GET http://other.test:9/ HTTP/1.1\r\nProxy-Authorization: "
	       "BULKHEAD_SECRET_TOK\r\n\r\n",
	       "HTTP/1.1 403", "tripwire");
	/* An unknown secret name is a tripwire too. */
	expect("GET http://other.test:9/ HTTP/1.1\r\nX-Token: BULKHEAD_SECRET_NOPE\r\n\r\n",
	       "HTTP/1.1 403", "tripwire");
	/* Loopback, allowed by name but not by address: refused before connecting. */
	expect("GET http://127.0.0.1:9/ HTTP/1.1\r\n\r\n", "HTTP/1.1 403", "non-public");
}

static void test_deny_keeps_nothing(void **state)
{
	/* A pipelined second request after a refusal is not served: the connection ends. */
	char *out;

	(void)state;
	out = exchange(GET "\r\n" GET "\r\n", strlen(GET "\r\n" GET "\r\n"));
	assert_non_null(strstr(out, "403"));
	assert_null(strstr(strstr(out, "403") + 3, "HTTP/1.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_deny_keeps_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
