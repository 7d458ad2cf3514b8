/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_reqcheck.c: the strict request grammar (broker/reqcheck.c) — each leniency
 * of http_parser 2.9 that could frame a request two ways is refused, well-formed requests
 * (also pipelined, chunked with trailers, fed one byte at a time) pass with the right
 * boundaries. */
#include "broker/reqcheck.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static struct reqcheck rc;
static char why[200];

/* Feeds MSG in pieces of STEP bytes (0: whole). At each head's end the framing is what the
 * head says (a "Content-Length: N" or "Transfer-Encoding: chunked" line in it); at each
 * message's end the next one starts. Returns the number of messages, or -1 (why set). */
static int run(const char *msg, size_t len, size_t step)
{
	size_t off = 0, head_start = 0;
	int messages = 0;

	reqcheck_init(&rc);
	while (off < len) {
		size_t n = step && len - off > step ? step : len - off;
		ssize_t k = reqcheck_feed(&rc, msg + off, n);

		if (k < 0) {
			snprintf(why, sizeof(why), "%s", rc.why);
			return -1;
		}
		off += (size_t)k;
		if (rc.state == RC_HEAD_DONE) {
			const char *cl = strstr(msg + head_start, "Content-Length: ");
			const char *end = strstr(msg + head_start, "\r\n\r\n");
			int chunked = strstr(msg + head_start, "chunked\r\n") &&
				      strstr(msg + head_start, "chunked\r\n") < end;

			reqcheck_framing(&rc, chunked,
					 cl && cl < end ? (uint64_t)atoll(cl + 16) : 0);
		}
		if (rc.state == RC_DONE) {
			messages++;
			reqcheck_next(&rc);
			head_start = off;
		}
		assert_true(k || n == 0 || rc.state != RC_HEAD);
	}
	return rc.state == RC_HEAD && !rc.len ? messages : -2;
}

/* MSG as a string literal: its length is known even with a NUL inside. */
#define refused(msg, because) refused_n(msg, sizeof(msg) - 1, because)

static void refused_n(const char *msg, size_t len, const char *because)
{
	size_t step;

	for (step = 0; step < 3; step++) {
		int r = run(msg, len, step);

		if (r != -1)
			fail_msg("accepted (%d, step %zu): %s", r, step, msg);
		if (because && !strstr(why, because))
			fail_msg("%s: refused for \"%s\", not \"%s\"", msg, why, because);
	}
}

static void accepted(const char *msg, int messages)
{
	size_t step;

	for (step = 0; step < 3; step++) {
		int r = run(msg, strlen(msg), step);

		if (r != messages)
			fail_msg("%s: got %d (step %zu, why: %s)", msg, r, step, why);
	}
}

static void test_well_formed(void **state)
{
	(void)state;
	accepted("GET http://a.test/x?y=1 HTTP/1.1\r\nHost: a.test\r\n\r\n", 1);
	accepted("GET /x HTTP/1.0\r\n\r\n", 1);
	accepted("\r\nGET /x HTTP/1.1\r\nX:v\r\nY: \t v w \t\r\n\r\n", 1);
	accepted("POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 1);
	accepted("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
		 "A\r\n0123456789\r\n0\r\nTrailer-X: y\r\n\r\n",
		 1);
	/* Pipelined, bodies of both framings between heads. */
	accepted("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n"
		 "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
		 3);
	accepted("GET /%41%2f?q=%7E HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n", 1);
	accepted("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", 1);
	accepted("GET http://[::1]:8/ HTTP/1.1\r\n\r\n", 1);
	/* What WHATWG URL clients leave unescaped. */
	accepted("GET /a|b^c?q={\"x\":`1`}<> HTTP/1.1\r\n\r\n", 1);
}

static void test_header_names(void **state)
{
	(void)state;
	/* The smuggling of issue 13: a name with a space before its colon. */
	refused("POST /x HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello", "before its colon");
	refused("POST /x HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
		"before its colon");
	refused("GET /x HTTP/1.1\r\nX\t: v\r\n\r\n", "before its colon");
	refused("GET /x HTTP/1.1\r\nX{: v\r\n\r\n", "token");
	refused("GET /x HTTP/1.1\r\nX@Y: v\r\n\r\n", "token");
	refused("GET /x HTTP/1.1\r\n: v\r\n\r\n", "without a name");
	refused("GET /x HTTP/1.1\r\nNoColon\r\n\r\n", "without a name or a colon");
	refused("GET /x HTTP/1.1\r\nX\xc3\xa9: v\r\n\r\n", "token");
}

static void test_lines(void **state)
{
	(void)state;
	refused("GET /x HTTP/1.1\r\nX: a\r\n b\r\n\r\n", "obs-fold");
	refused("GET /x HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", "obs-fold");
	refused("GET /x HTTP/1.1\r\n X: a\r\n\r\n", "obs-fold");
	refused("GET /x HTTP/1.1\nX: a\n\n", "bare LF");
	refused("GET /x HTTP/1.1\r\nX: a\n\r\n", "bare LF");
	refused("GET /x HTTP/1.1\r\nX: a\rY: b\r\n\r\n", "CR not followed");
	refused("GET /x HTTP/1.1\r\nX: a\x00z\r\n\r\n", "control character");
	refused("GET /x HTTP/1.1\r\nX: a\x0bz\r\n\r\n", "control character");
	refused("GET /x HTTP/1.1\r\nX: a\x0cz\r\n\r\n", "control character");
	refused("GET /x HTTP/1.1\r\nX: a\x7fz\r\n\r\n", "control character");
	refused("\r\n\r\n\r\n\r\n\r\nGET /x HTTP/1.1\r\n\r\n", "empty lines");
	refused("\nGET /x HTTP/1.1\r\n\r\n", "bare LF");
}

static void test_request_line(void **state)
{
	(void)state;
	refused("GET /a\t HTTP/1.1\r\n\r\n", "control character");
	refused("GET /prefix/..\t HTTP/1.1\r\n\r\n", "control character");
	refused("GET /a\x0c HTTP/1.1\r\n\r\n", "control character");
	refused("GET /a\x0b HTTP/1.1\r\n\r\n", "control character");
	refused("GET /\x80 HTTP/1.1\r\n\r\n", "non-ASCII");
	refused("GET /a b HTTP/1.1\r\n\r\n", "request line");
	refused("GET  /a HTTP/1.1\r\n\r\n", "request line");
	refused("GET /a  HTTP/1.1\r\n\r\n", "request line");
	refused("GET /a#frag HTTP/1.1\r\n\r\n", "fragment");
	refused("GET /a\\b HTTP/1.1\r\n\r\n", "backslash");
	refused("GET /a%2 HTTP/1.1\r\n\r\n", "two hex digits");
	refused("GET /a%zz HTTP/1.1\r\n\r\n", "two hex digits");
	refused("GE\tT /a HTTP/1.1\r\n\r\n", "method");
	refused("G(T /a HTTP/1.1\r\n\r\n", "method");
	refused("GET /a HTTP/1.2\r\n\r\n", "HTTP/1.1 and HTTP/1.0");
	refused("GET /a HTTP/2.0\r\n\r\n", "HTTP/1.1 and HTTP/1.0");
	refused("GET /a http/1.1\r\n\r\n", "HTTP/1.1 and HTTP/1.0");
	refused("GET /a\r\n\r\n", "request line");
	refused("GET /a HTTP/1.1 \r\n\r\n", "request line");
}

static void test_chunked(void **state)
{
	(void)state;
#define CH "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	refused(CH "5;ext=1\r\nhello\r\n0\r\n\r\n", "no extensions");
	refused(CH "5 junk\r\nhello\r\n0\r\n\r\n", "no extensions");
	refused(CH " 5\r\nhello\r\n0\r\n\r\n", "no extensions");
	refused(CH "-5\r\nhello\r\n0\r\n\r\n", "no extensions");
	refused(CH "0x5\r\nhello\r\n0\r\n\r\n", "no extensions");
	refused(CH "5\rXhello\r\n0\r\n\r\n", "CR not followed");
	refused(CH "5\r\nhelloXX0\r\n\r\n", "not followed by CRLF");
	refused(CH "5\r\nhello\n0\r\n\r\n", "not followed by CRLF");
	refused(CH "\r\nhello\r\n0\r\n\r\n", "empty chunk-size");
	refused(CH "1000000000000000\r\n", "15 hex digits");
	refused(CH "0\r\nBad Trailer: x\r\n\r\n", "before its colon");
	refused(CH "0\r\n\n", "bare LF");
#undef CH
}

static void test_connect_no_more(void **state)
{
	(void)state;
	reqcheck_init(&rc);
	assert_int_equal(reqcheck_feed(&rc, "CONNECT a:1 HTTP/1.1\r\n\r\nX", 25), 24);
	reqcheck_no_more(&rc);
	assert_int_equal(reqcheck_feed(&rc, "X", 1), -1);
	assert_non_null(strstr(rc.why, "before the CONNECT was answered"));
	/* A head waits for its framing: nothing past it is taken before. */
	reqcheck_init(&rc);
	assert_int_equal(reqcheck_feed(&rc, "GET /a HTTP/1.1\r\n\r\nGET", 22), 19);
	assert_int_equal(reqcheck_feed(&rc, "GET", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed), cmocka_unit_test(test_header_names),
		cmocka_unit_test(test_lines),	    cmocka_unit_test(test_request_line),
		cmocka_unit_test(test_chunked),	    cmocka_unit_test(test_connect_no_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
