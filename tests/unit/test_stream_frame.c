/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_stream_frame.c: message ends in streamed responses (broker/stream_frame.c):
 * the media types that have them, each SSE line ending (LF, CRLF, CR) and NDJSON, with the
 * bytes cut at every offset; and, with the scrubber, the rule of docs/THREAT-MODEL.md
 * "Streamed responses": a message goes out whole when it ends, a secret in it replaced, and
 * what goes out after each read never depends on whether the bytes begin a secret. */
#include "broker/scrub.h"
#include "broker/stream_frame.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_kind(void **state)
{
	static const struct {
		const char *ct;
		enum stream_framing k;
	} cases[] = {
		{ "text/event-stream", STREAM_FRAME_SSE },
		{ "Text/Event-Stream; charset=utf-8", STREAM_FRAME_SSE },
		{ " text/event-stream ;x=y", STREAM_FRAME_SSE },
		{ "application/x-ndjson", STREAM_FRAME_LINES },
		{ "application/jsonl", STREAM_FRAME_LINES },
		{ "application/json-seq", STREAM_FRAME_LINES },
		{ "text/event-streams", STREAM_FRAME_NONE },
		{ "text/event", STREAM_FRAME_NONE },
		{ "application/json", STREAM_FRAME_NONE },
		{ "text/plain", STREAM_FRAME_NONE },
		{ "", STREAM_FRAME_NONE },
		{ ";", STREAM_FRAME_NONE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(stream_frame_kind(cases[i].ct, strlen(cases[i].ct)), cases[i].k);
	/* Not NUL-terminated: only N bytes are read. */
	assert_int_equal(stream_frame_kind("text/event-streamXYZ", 17), STREAM_FRAME_SSE);
	assert_string_equal(stream_frame_name(STREAM_FRAME_SSE), "sse");
}

/* The stream positions after which a message ends, IN cut once at CUT (0: not cut). */
static size_t ends_at(enum stream_framing k, const char *in, size_t cut, size_t *pos, size_t max)
{
	struct stream_frame f;
	size_t len = strlen(in), n = 0, at = 0;

	stream_frame_init(&f, k);
	while (at < len) {
		size_t stop = at < cut ? cut : len, took;
		int end;

		took = stream_frame_scan(&f, (const uint8_t *)in + at, stop - at, &end);
		assert_true(took <= stop - at);
		assert_true(took || end); /* never stuck */
		at += took;
		if (end) {
			assert_true(n < max);
			pos[n++] = at;
		}
	}
	return n;
}

static void check_ends(enum stream_framing k, const char *in, const size_t *want, size_t n_want)
{
	size_t cut, pos[32], n, i;

	for (cut = 0; cut < strlen(in); cut++) {
		n = ends_at(k, in, cut, pos, 32);
		if (n != n_want)
			fail_msg("%s cut at %zu: %zu ends, not %zu", in, cut, n, n_want);
		for (i = 0; i < n; i++) {
			/* A read that ends at the CR of an empty line's CRLF ends the event there:
			 * it never waits for the LF. */
			size_t w = want[i];

			if (k == STREAM_FRAME_SSE && w >= 2 && cut == w - 1 && in[w - 1] == '\n' &&
			    in[w - 2] == '\r')
				w--;
			if (pos[i] != w)
				fail_msg("%s cut at %zu: end %zu at %zu, not %zu", in, cut, i,
					 pos[i], w);
		}
	}
}

static void test_sse(void **state)
{
	(void)state;
	{ /* LF; a comment line is a line like any other */
		const size_t w[] = { 9, 27, 42 };
		check_ends(STREAM_FRAME_SSE, "data: #\n\nevent: x\ndata: !\n\n: keep-alive.\n\n", w,
			   3);
	}
	{ /* CRLF: the event ends after the LF of the empty line */
		const size_t w[] = { 11, 22 };
		check_ends(STREAM_FRAME_SSE, "data: #\r\n\r\ndata: !\r\n\r\n", w, 2);
	}
	{ /* a lone CR: the event ends at it, also at the stream's last byte (nothing waits
	   * for a byte that may never come) */
		const size_t w[] = { 9, 18 };
		check_ends(STREAM_FRAME_SSE, "data: #\r\rdata: !\r\r", w, 2);
	}
	{ /* the CRLF of an empty line split across reads: its LF is no second empty line */
		struct stream_frame f;
		int end;

		stream_frame_init(&f, STREAM_FRAME_SSE);
		assert_int_equal(stream_frame_scan(&f, (const uint8_t *)"data: #\r\n\r", 10, &end),
				 10);
		assert_true(end);
		assert_int_equal(stream_frame_scan(&f, (const uint8_t *)"\ndata: !\n", 9, &end), 9);
		assert_false(end);
	}
	{ /* mixed, and an empty line at the very start */
		const size_t w[] = { 1, 11, 21 };
		check_ends(STREAM_FRAME_SSE, "\ndata: #\n\r\ndata: !\r\n\ndata: ?\n", w, 3);
	}
	{ /* one line break is no event end */
		check_ends(STREAM_FRAME_SSE, "data: a\ndata: b\r\ndata: c\rdata: d", NULL, 0);
	}
}

/* No message ends at a line end that may be inside a covered form of a secret: after a
 * character that can end one of base64's characters (wrapped base64, escapes of its
 * characters) or a CSS escape's digits. A red-team round recovered a key from an NDJSON
 * answer whose base64 wrapped at a line end the guest had placed. */
static void test_form_line_ends(void **state)
{
	(void)state;
	{ /* base64 wrapped at 76 columns, as MIME and PEM do, inside a record */
		const size_t w[] = { 26 };
		check_ends(STREAM_FRAME_LINES, "{\"b\":\"eHRvay1B\nQUFBLXMz\"}\n", w, 1);
	}
	{ /* CSS escapes, each ended by a LF; an HTML reference; a braced escape */
		const size_t w[] = { 17 };
		check_ends(STREAM_FRAME_LINES, "\\74\n\\6f\n&#107;\n}\n", w, 1);
		const size_t w2[] = { 9, 11 };
		check_ends(STREAM_FRAME_LINES, "\\u{41}\n}\n]\n", w2, 2);
	}
	{ /* a JSON object's brace is no escape's: records end there */
		const size_t w[] = { 8, 17 };
		check_ends(STREAM_FRAME_LINES, "{\"a\":1}\n{\"u\":{}}\n", w, 2);
	}
	{ /* SSE: an empty line after such a character is no event end, nor after a CRLF */
		const size_t w[] = { 21 };
		check_ends(STREAM_FRAME_SSE, "data: abc\n\ndata: {}\n\n", w, 1);
		const size_t w2[] = { 26 };
		check_ends(STREAM_FRAME_SSE, "data: QUFB\r\n\r\ndata: []\r\n\r\n", w2, 1);
	}
}

static void test_lines(void **state)
{
	const size_t w[] = { 8, 17, 18 };

	(void)state;
	check_ends(STREAM_FRAME_LINES, "{\"a\":1}\n{\"b\":2}\r\n\n{", w, 3);
	check_ends(STREAM_FRAME_NONE, "a\n\nb\n\n", NULL, 0);
}

/* --- with the scrubber ------------------------------------------------------------------- */

#define SECRET "sk-Str3amT0ken-0123456789abcdef"

struct out {
	char b[1 << 16];
	size_t n;
};

static int collect(void *arg, const uint8_t *b, size_t n)
{
	struct out *o = arg;

	assert_true(o->n + n < sizeof(o->b));
	memcpy(o->b + o->n, b, n);
	o->n += n;
	o->b[o->n] = 0;
	return 0;
}

/* What the relay does with one read (proxy_response.c rp_body). */
static void relay(struct scrub *s, struct stream_frame *f, const char *in, size_t len,
		  struct out *o)
{
	while (len) {
		int end;
		size_t k = stream_frame_scan(f, (const uint8_t *)in, len, &end);

		assert_int_equal(scrub_feed(s, (const uint8_t *)in, k, collect, o), 0);
		if (end)
			assert_int_equal(scrub_flush(s, collect, o), 0);
		in += k;
		len -= k;
	}
}

static void setup(struct scrub *s, struct stream_frame *f, const char *secret)
{
	scrub_init(s);
	assert_int_equal(scrub_add_secret(s, (const uint8_t *)secret, strlen(secret)), 0);
	stream_frame_init(f, STREAM_FRAME_SSE);
}

/* Each event goes out whole as its read ends it, the secret inside it replaced; an event
 * still open waits at the fixed lag. */
static void test_released_whole(void **state)
{
	struct scrub s;
	struct stream_frame f;
	static struct out o;
	const char *e1 = "data: {\"delta\":\"hello\"}\n\n";
	const char *e2 = "data: {\"echo\":\"" SECRET "\"}\n\n";
	const char *open = "data: {\"delta\":\"still";

	(void)state;
	setup(&s, &f, SECRET);
	o.n = 0;
	relay(&s, &f, e1, strlen(e1), &o);
	assert_int_equal(o.n, strlen(e1));
	assert_memory_equal(o.b, e1, o.n);
	relay(&s, &f, e2, strlen(e2), &o);
	assert_non_null(strstr(o.b, "data: {\"echo\":\"" SCRUB_REPLACEMENT "\"}\n\n"));
	assert_null(strstr(o.b, "Str3am"));
	o.n = 0;
	relay(&s, &f, open, strlen(open), &o);
	assert_int_equal(o.n, 0); /* shorter than the lag, and not ended */
	relay(&s, &f, "\"}\n\n", 4, &o);
	assert_int_equal(o.n, strlen(open) + 4);
	scrub_free(&s);
}

/* The oracle test: an event whose data ends in a true prefix of the secret, or of its base64,
 * and one that ends in a wrong guess of the same length give the same number of bytes after
 * every read, at every cut, with the event still open and after it ends. */
static void test_no_oracle(void **state)
{
	static const char *const guesses[][2] = {
		{ "sk-Str3amT0ken-0123", "sk-Str3amT0ken-0124" },
		{ "c2stU3RyM2FtVDBrZW4t", "c2stU3RyM2FtVDBrZW4u" },
		{ "sk-Str3amT0ken-0123456789abcde", "sk-Str3amT0ken-0123456789abcdX" },
	};
	size_t g, cut;

	(void)state;
	for (g = 0; g < sizeof(guesses) / sizeof(guesses[0]); g++) {
		char a[256], b[256];

		snprintf(a, sizeof(a), "data: %s\n\ndata: %s", guesses[g][0], guesses[g][0]);
		snprintf(b, sizeof(b), "data: %s\n\ndata: %s", guesses[g][1], guesses[g][1]);
		for (cut = 1; cut < strlen(a); cut++) {
			struct scrub sa, sb;
			struct stream_frame fa, fb;
			static struct out oa, ob;

			setup(&sa, &fa, SECRET);
			setup(&sb, &fb, SECRET);
			oa.n = ob.n = 0;
			relay(&sa, &fa, a, cut, &oa);
			relay(&sb, &fb, b, cut, &ob);
			assert_int_equal(oa.n, ob.n);
			relay(&sa, &fa, a + cut, strlen(a) - cut, &oa);
			relay(&sb, &fb, b + cut, strlen(b) - cut, &ob);
			assert_int_equal(oa.n, ob.n);
			/* A guess ends in a character of base64's alphabet: the event ends at the
			 * next empty line after one that is not. */
			relay(&sa, &fa, "]\n\n", 3, &oa);
			relay(&sb, &fb, "]\n\n", 3, &ob);
			assert_int_equal(oa.n, strlen(a) + 3);
			assert_int_equal(ob.n, strlen(b) + 3);
			scrub_free(&sa);
			scrub_free(&sb);
		}
	}
}

/* A secret with a line end would let a message end fall inside it: the relay is told not to
 * frame (the fixed lag alone then applies). */
static void test_secret_with_line_end(void **state)
{
	struct scrub s;

	(void)state;
	scrub_init(&s);
	assert_int_equal(scrub_add_secret(&s, (const uint8_t *)"abc", 3), 0);
	assert_true(scrub_frames_ok(&s));
	assert_int_equal(scrub_add_secret(&s, (const uint8_t *)"-----BEGIN\nKEY", 14), 0);
	assert_false(scrub_frames_ok(&s));
	scrub_free(&s);
	scrub_init(&s);
	assert_int_equal(scrub_add_secret(&s, (const uint8_t *)"a\rb", 3), 0);
	assert_false(scrub_frames_ok(&s));
	scrub_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind),
		cmocka_unit_test(test_sse),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_form_line_ends),
		cmocka_unit_test(test_released_whole),
		cmocka_unit_test(test_no_oracle),
		cmocka_unit_test(test_secret_with_line_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
