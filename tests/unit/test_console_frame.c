/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_console_frame.c: the console frame encoder and strict parser. */
#include "lib/console_frame.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct rec {
	char noise[8192];
	size_t noise_len;
	char out[16384];
	size_t out_len;
	int types[64];
	int nframes;
	int reject; /* frame callback returns -1 */
};

static void on_noise(void *ctx, const uint8_t *buf, size_t len)
{
	struct rec *r = ctx;
	assert_true(r->noise_len + len <= sizeof(r->noise));
	memcpy(r->noise + r->noise_len, buf, len);
	r->noise_len += len;
}

static int on_frame(void *ctx, int type, const uint8_t *payload, size_t len)
{
	struct rec *r = ctx;
	r->types[r->nframes++] = type;
	memcpy(r->out + r->out_len, payload, len);
	r->out_len += len;
	return r->reject ? -1 : 0;
}

static struct cframe_parser *new_parser(struct rec *r)
{
	static struct cframe_parser p;
	struct cframe_sink sink = { .noise = on_noise, .frame = on_frame, .ctx = r };
	memset(r, 0, sizeof(*r));
	cframe_parser_init(&p, &sink);
	return &p;
}

/* Appends one encoded frame to buf; returns new length. */
static size_t put_frame(char *buf, size_t at, int type, uint64_t seq, const char *payload,
			size_t len)
{
	char hdr[CFRAME_MAX_HEADER], trailer[CFRAME_TRAILER_LEN + 1];
	size_t hl = cframe_encode(hdr, trailer, type, seq, payload, len);
	memcpy(buf + at, hdr, hl);
	memcpy(buf + at + hl, payload, len);
	memcpy(buf + at + hl + len, trailer, CFRAME_TRAILER_LEN);
	return at + hl + len + CFRAME_TRAILER_LEN;
}

static size_t sample_stream(char *buf)
{
	size_t n = 0;
	const char noise1[] = "[    0.1] booting\n\x1e"
			      "BH"; /* a false start of the magic */
	memcpy(buf, noise1, sizeof(noise1) - 1), n += sizeof(noise1) - 1;
	n = put_frame(buf, n, CFRAME_ERROR, 0, "hello\n", 6);
	memcpy(buf + n, "kernel says hi\n", 15), n += 15;
	n = put_frame(buf, n, CFRAME_ERROR, 1,
		      "oops\0\x1e"
		      "BHF2 x",
		      12);
	n = put_frame(buf, n, CFRAME_ERROR, 2, "", 0);
	n = put_frame(buf, n, CFRAME_ERROR, 3, "exit 7", 6);
	memcpy(buf + n, "tail", 4), n += 4;
	return n;
}

static void check_sample(struct rec *r)
{
	assert_int_equal(r->nframes, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r->types[i], CFRAME_ERROR);
	assert_int_equal(r->out_len, 6 + 12 + 0 + 6);
	assert_memory_equal(r->out,
			    "hello\noops\0\x1e"
			    "BHF2 xexit 7",
			    r->out_len);
	const char noise[] = "[    0.1] booting\n\x1e"
			     "BHkernel says hi\ntail";
	assert_int_equal(r->noise_len, sizeof(noise) - 1);
	assert_memory_equal(r->noise, noise, r->noise_len);
}

static void test_whole_stream(void **state)
{
	(void)state;
	char buf[4096];
	struct rec r;
	size_t n = sample_stream(buf);
	struct cframe_parser *p = new_parser(&r);
	assert_int_equal(cframe_feed(p, (uint8_t *)buf, n), 0);
	check_sample(&r);
	assert_true(cframe_idle(p));
}

/* The console delivers bytes in arbitrary pieces: every split point must work. */
static void test_every_split(void **state)
{
	(void)state;
	char buf[4096];
	struct rec r;
	size_t n = sample_stream(buf);
	for (size_t cut = 0; cut <= n; cut++) {
		struct cframe_parser *p = new_parser(&r);
		assert_int_equal(cframe_feed(p, (uint8_t *)buf, cut), 0);
		assert_int_equal(cframe_feed(p, (uint8_t *)buf + cut, n - cut), 0);
		check_sample(&r);
	}
	struct cframe_parser *p = new_parser(&r);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(cframe_feed(p, (uint8_t *)buf + i, 1), 0);
	check_sample(&r);
}

static void expect_error(const char *buf, size_t n, const char *why)
{
	struct rec r;
	struct cframe_parser *p = new_parser(&r);
	assert_int_equal(cframe_feed(p, (const uint8_t *)buf, n), -1);
	assert_non_null(strstr(p->error, why));
	/* Failed stays failed. */
	assert_int_equal(cframe_feed(p, (const uint8_t *)"x", 1), -1);
}

static void test_corruption_detected(void **state)
{
	(void)state;
	char buf[256];
	size_t n = put_frame(buf, 0, CFRAME_ERROR, 0, "payload", 7);
	buf[n - CFRAME_TRAILER_LEN - 2] ^= 1; /* flip a payload bit */
	expect_error(buf, n, "checksum");

	n = put_frame(buf, 0, CFRAME_ERROR, 0, "payload", 7);
	buf[n - 3] = buf[n - 3] == '0' ? '1' : '0'; /* damage the CRC itself */
	expect_error(buf, n, "checksum");
}

static void test_sequence_enforced(void **state)
{
	(void)state;
	char buf[256];
	size_t n = put_frame(buf, 0, CFRAME_ERROR, 1, "x", 1); /* 0 expected */
	expect_error(buf, n, "sequence");
	n = put_frame(buf, 0, CFRAME_ERROR, 0, "x", 1);
	n = put_frame(buf, n, CFRAME_ERROR, 0, "x", 1); /* replayed */
	expect_error(buf, n, "sequence");
}

static void test_bad_headers(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"\x1e"
		"BHF2 q 0 1\n", /* unknown type */
		"\x1e"
		"BHF2 ! 0 4097\n", /* over CFRAME_MAX_PAYLOAD */
		"\x1e"
		"BHF2 ! 00 1\n", /* leading zero */
		"\x1e"
		"BHF2 ! 0 01\n",
		"\x1e"
		"BHF2 ! -0 1\n",
		"\x1e"
		"BHF2 ! 0 +1\n",
		"\x1e"
		"BHF2 ! 0\n", /* missing length */
		"\x1e"
		"BHF2 !  0 1\n",
		"\x1e"
		"BHF2 ! 0 1 \n",
		"\x1e"
		"BHF2 ! 18446744073709551616 1\n", /* seq overflow */
		"\x1e"
		"BHF2 \n",
		"\x1e"
		"BHF2 !! 0 1\n",
		"\x1e"
		"BHF2 o 0 1\n", /* a v1 type, no longer defined */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rec r;
		struct cframe_parser *p = new_parser(&r);
		assert_int_equal(cframe_feed(p, (const uint8_t *)bad[i], strlen(bad[i])), -1);
		assert_int_equal(r.nframes, 0);
	}
	char longhdr[200];
	memcpy(longhdr, CFRAME_MAGIC, CFRAME_MAGIC_LEN);
	memset(longhdr + CFRAME_MAGIC_LEN, '1', sizeof(longhdr) - CFRAME_MAGIC_LEN);
	expect_error(longhdr, sizeof(longhdr), "too long");
}

static void test_receiver_can_reject(void **state)
{
	(void)state;
	char buf[256];
	struct rec r;
	size_t n = put_frame(buf, 0, CFRAME_ERROR, 0, "a", 1);
	struct cframe_parser *p = new_parser(&r);
	r.reject = 1;
	assert_int_equal(cframe_feed(p, (uint8_t *)buf, n), -1);
	assert_non_null(strstr(p->error, "rejected"));
}

static void test_max_payload(void **state)
{
	(void)state;
	static char buf[2 * CFRAME_MAX_PAYLOAD + 256];
	static char big[CFRAME_MAX_PAYLOAD];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	struct rec r;
	size_t n = put_frame(buf, 0, CFRAME_ERROR, 0, big, sizeof(big));
	struct cframe_parser *p = new_parser(&r);
	assert_int_equal(cframe_feed(p, (uint8_t *)buf, n), 0);
	assert_int_equal(r.out_len, sizeof(big));
	assert_memory_equal(r.out, big, sizeof(big));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_stream),
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_corruption_detected),
		cmocka_unit_test(test_sequence_enforced),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_receiver_can_reject),
		cmocka_unit_test(test_max_payload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
