/* tests/unit/test_scrub.c: secret scrubbing of response streams — every split point of the
 * input, byte-at-a-time feeding, base64 at all three alignments, and no change to text that
 * holds no secret. */
#include "broker/scrub.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#define SECRET "ghp_S3cretValue+/xyz"
#define R      SCRUB_REPLACEMENT

struct out {
	char b[8192];
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

static void setup_secret(struct scrub *s)
{
	scrub_init(s);
	assert_int_equal(scrub_add_secret(s, (const uint8_t *)SECRET, strlen(SECRET)), 0);
}

/* Feeds IN cut at SPLITS (sorted offsets) and returns the output. */
static void run(struct scrub *s, const char *in, const size_t *splits, size_t n_splits,
		struct out *o)
{
	size_t prev = 0, i, len = strlen(in);

	o->n = 0;
	o->b[0] = 0;
	scrub_reset(s);
	for (i = 0; i <= n_splits; i++) {
		size_t end = i < n_splits ? splits[i] : len;

		assert_int_equal(scrub_feed(s, (const uint8_t *)in + prev, end - prev, collect, o),
				 0);
		prev = end;
	}
	assert_int_equal(scrub_flush(s, collect, o), 0);
}

static void test_every_split(void **state)
{
	static const char *in = "head " SECRET " mid " SECRET SECRET " tail ghp_S3cret";
	static const char *want = "head " R " mid " R R " tail ghp_S3cret";
	struct scrub s;
	struct out o;
	size_t i, j, len = strlen(in);

	(void)state;
	setup_secret(&s);
	run(&s, in, NULL, 0, &o);
	assert_string_equal(o.b, want);
	for (i = 0; i <= len; i++) {
		run(&s, in, &i, 1, &o);
		if (strcmp(o.b, want))
			fail_msg("split at %zu: %s", i, o.b);
	}
	/* Two cuts anywhere: the value may span three reads. */
	for (i = 0; i <= len; i++)
		for (j = i; j <= len; j++) {
			size_t cuts[2] = { i, j };

			run(&s, in, cuts, 2, &o);
			if (strcmp(o.b, want))
				fail_msg("splits at %zu,%zu: %s", i, j, o.b);
		}
	scrub_free(&s);
}

static void test_byte_at_a_time(void **state)
{
	static const char *in = "x" SECRET "y" SECRET;
	struct scrub s;
	struct out o = { .n = 0 };
	size_t i;

	(void)state;
	setup_secret(&s);
	for (i = 0; in[i]; i++)
		assert_int_equal(scrub_feed(&s, (const uint8_t *)in + i, 1, collect, &o), 0);
	assert_int_equal(scrub_flush(&s, collect, &o), 0);
	assert_string_equal(o.b, "x" R "y" R);
	assert_int_equal(s.replaced, 2);
	scrub_free(&s);
}

static void test_base64_alignments(void **state)
{
	struct scrub s;
	struct out o;
	size_t off, i;
	int url;

	(void)state;
	setup_secret(&s);
	for (url = 0; url < 2; url++)
		for (off = 0; off < 3; off++) {
			char plain[128], enc[256];
			int n;

			memset(plain, 'A', off);
			strcpy(plain + off, SECRET "!tail");
			n = EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)plain,
					    (int)strlen(plain));
			enc[n] = 0;
			for (i = 0; url && enc[i]; i++)
				enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
			/* Alone, and inside a larger document, split at every point. */
			for (i = 0; i <= (size_t)n; i++) {
				run(&s, enc, &i, 1, &o);
				if (!strstr(o.b, R))
					fail_msg("base64%s at offset %zu not scrubbed (split %zu): "
						 "%s",
						 url ? "url" : "", off, i, o.b);
			}
		}
	/* Percent-encoded form. */
	run(&s, "q=ghp_S3cretValue%2B%2Fxyz&x", NULL, 0, &o);
	assert_string_equal(o.b, "q=" R "&x");
	scrub_free(&s);
}

static void test_unchanged(void **state)
{
	static const char *in = "ghp_S3cretValue+/xy ghp_ ghp_S3cretValu G Z3 plain text 1234";
	struct scrub s;
	struct out o;
	size_t i, len = strlen(in);

	(void)state;
	setup_secret(&s);
	for (i = 0; i <= len; i++) {
		run(&s, in, &i, 1, &o);
		assert_string_equal(o.b, in);
	}
	assert_int_equal(s.replaced, 0);
	scrub_free(&s);
	/* No patterns at all: a pass-through. */
	scrub_init(&s);
	run(&s, in, NULL, 0, &o);
	assert_string_equal(o.b, in);
	scrub_free(&s);
}

static void test_overlap_and_longest(void **state)
{
	struct scrub s;
	struct out o;

	(void)state;
	scrub_init(&s);
	assert_int_equal(scrub_add(&s, (const uint8_t *)"abc", 3), 0);
	assert_int_equal(scrub_add(&s, (const uint8_t *)"abcdef", 6), 0);
	assert_int_equal(scrub_add(&s, (const uint8_t *)"aab", 3), 0);
	run(&s, "aabcdef abcdex abcdef", NULL, 0, &o);
	assert_string_equal(o.b, R "cdef " R "dex " R);
	scrub_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split),	    cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_base64_alignments),   cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_overlap_and_longest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
