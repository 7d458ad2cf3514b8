/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_scrub.c: secret scrubbing of response streams — every encoding the matcher
 * claims (raw, base64 std/url at each alignment and line-wrapped, hex in any case, percent in
 * either case and on every byte, JSON \u and short escapes, \x, HTML references, '+' for a
 * space), each split across feeds at every offset; no change to text without a whole secret;
 * and the fixed lag: what comes out after each feed depends on lengths only, never on
 * whether the bytes begin a secret. */
#include "broker/scrub.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#define SECRET "ghp_S3cretValue+/xyz"
#define R      SCRUB_REPLACEMENT

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

static void setup_secret(struct scrub *s, const char *secret)
{
	scrub_init(s);
	assert_int_equal(scrub_add_secret(s, (const uint8_t *)secret, strlen(secret)), 0);
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

/* IN must come out as WANT whatever single cut it is fed with. */
static void expect_every_cut(struct scrub *s, const char *what, const char *in, const char *want)
{
	struct out o;
	size_t i, len = strlen(in);

	for (i = 0; i <= len; i++) {
		run(s, in, &i, 1, &o);
		if (strcmp(o.b, want))
			fail_msg("%s, cut at %zu:\n  in:   %s\n  got:  %s\n  want: %s", what, i, in,
				 o.b, want);
	}
}

/* --- encoders, written plainly for the test ------------------------------------------------ */

static void b64(const char *plain, size_t n, char *enc, int url)
{
	size_t i;

	EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)plain, (int)n);
	for (i = 0; url && enc[i]; i++)
		enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
}

/* Inserts SEP every WIDTH characters (MIME, PEM, JSON-escaped line breaks). */
static void wrap(const char *in, size_t width, const char *sep, char *out)
{
	size_t i, o = 0;

	for (i = 0; in[i]; i++) {
		if (i && i % width == 0)
			o += (size_t)sprintf(out + o, "%s", sep);
		out[o++] = in[i];
	}
	out[o] = 0;
}

/* One byte in one escape form. */
enum esc {
	PCT_UP,
	PCT_LOW,
	JSON_U,
	JSON_U_UP,
	BS_X,
	HTML_DEC,
	HTML_HEX,
	HEX_LOW,
	HEX_UP,
	OCT,
	HTML_HEX8,
	PERL_X10,
	JAVA_U8,
	SHELL_0
};

static int put_esc(char *out, enum esc e, unsigned char c)
{
	switch (e) {
	case PCT_UP:
		return sprintf(out, "%%%02X", c);
	case PCT_LOW:
		return sprintf(out, "%%%02x", c);
	case JSON_U:
		return sprintf(out, "\\u%04x", c);
	case JSON_U_UP:
		return sprintf(out, "\\u%04X", c);
	case BS_X:
		return sprintf(out, "\\x%02x", c);
	case HTML_DEC:
		return sprintf(out, "&#%d;", c);
	case HTML_HEX:
		return sprintf(out, "&#x%X;", c);
	case HEX_LOW:
		return sprintf(out, "%02x", c);
	case HEX_UP:
		return sprintf(out, "%02X", c);
	case OCT:
		return sprintf(out, "\\%03o", c);
	case HTML_HEX8: /* the longest numeric HTML form */
		return sprintf(out, "&#x%08X;", c);
	case PERL_X10:
		return sprintf(out, "\\x{%010x}", c);
	case JAVA_U8:
		return sprintf(out, "\\uuuuuuuu%04X", c);
	case SHELL_0:
		return sprintf(out, "\\0%o", c);
	}
	return 0;
}

/* Every byte of IN escaped; or, with ALL zero, only those a URL encoder escapes. */
static void escape(const char *in, enum esc e, int all, char *out)
{
	size_t o = 0;

	for (; *in; in++)
		if (!all && ((*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z') ||
			     (*in >= '0' && *in <= '9') || strchr("-._~", *in)))
			out[o++] = *in;
		else
			o += (size_t)put_esc(out + o, e, (unsigned char)*in);
	out[o] = 0;
}

/* --- every encoding ------------------------------------------------------------------------ */

static void test_every_split(void **state)
{
	static const char *in = "head " SECRET " mid " SECRET SECRET " tail ghp_S3cret";
	static const char *want = "head " R " mid " R R " tail ghp_S3cret";
	struct scrub s;
	struct out o;
	size_t i, j, len = strlen(in);

	(void)state;
	setup_secret(&s, SECRET);
	expect_every_cut(&s, "raw", in, want);
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
	setup_secret(&s, SECRET);
	for (i = 0; in[i]; i++)
		assert_int_equal(scrub_feed(&s, (const uint8_t *)in + i, 1, collect, &o), 0);
	assert_int_equal(scrub_flush(&s, collect, &o), 0);
	assert_string_equal(o.b, "x" R "y" R);
	assert_int_equal(s.replaced, 2);
	scrub_free(&s);
}

/* Base64 of a document holding the secret at each alignment, in both alphabets, plain and
 * line-wrapped the ways MIME, PEM and JSON wrap it: the secret's characters are replaced. */
static void test_base64(void **state)
{
	static const char *seps[] = { "", "\r\n", "\n", "\\n", "\\r\\n", " ", "%0D%0A" };
	struct scrub s;
	char plain[128], enc[256], wrapped[512], in[600];
	size_t off, k, width;
	int url;

	(void)state;
	setup_secret(&s, SECRET);
	for (url = 0; url < 2; url++)
		for (off = 0; off < 3; off++)
			for (k = 0; k < sizeof(seps) / sizeof(seps[0]); k++)
				for (width = 4; width <= (k ? 13 : 4); width += 3) {
					struct out o;
					size_t i, len;

					memset(plain, 'A', off);
					strcpy(plain + off, SECRET "!tail");
					b64(plain, strlen(plain), enc, url);
					if (k)
						wrap(enc, width, seps[k], wrapped);
					else
						strcpy(wrapped, enc);
					snprintf(in, sizeof(in), "{\"d\":\"%s\"}", wrapped);
					len = strlen(in);
					for (i = 0; i <= len; i++) {
						run(&s, in, &i, 1, &o);
						if (!strstr(o.b, R))
							fail_msg("base64%s at offset %zu, sep '%s' "
								 "every %zu, cut at %zu: %s",
								 url ? "url" : "", off, seps[k],
								 width, i, o.b);
					}
				}
	/* Base64 inside a percent-encoded URL: '+' and '/' as %2B and %2F. */
	b64(SECRET, strlen(SECRET), enc, 0);
	escape(enc, PCT_UP, 0, wrapped);
	snprintf(in, sizeof(in), "GET /cb?t=%s&x=1", wrapped);
	{
		struct out o;

		run(&s, in, NULL, 0, &o);
		assert_non_null(strstr(o.b, R));
		assert_null(strstr(o.b, "S3cr"));
	}
	scrub_free(&s);
}

static void test_escapes(void **state)
{
	static const struct {
		const char *what;
		enum esc e;
		int all;
	} forms[] = {
		{ "percent, upper case", PCT_UP, 0 },
		{ "percent, lower case", PCT_LOW, 0 },
		{ "percent on every byte", PCT_LOW, 1 },
		{ "percent on every byte, upper", PCT_UP, 1 },
		{ "JSON \\u on every byte", JSON_U, 1 },
		{ "JSON \\u upper hex", JSON_U_UP, 1 },
		{ "\\x on every byte", BS_X, 1 },
		{ "HTML decimal references", HTML_DEC, 1 },
		{ "HTML hex references", HTML_HEX, 1 },
		{ "hex, lower case", HEX_LOW, 1 },
		{ "hex, upper case", HEX_UP, 1 },
	};
	struct scrub s;
	char enc[512], in[600], want[600];
	size_t i;

	(void)state;
	setup_secret(&s, SECRET);
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		escape(SECRET, forms[i].e, forms[i].all, enc);
		snprintf(in, sizeof(in), "a=%s;b", enc);
		snprintf(want, sizeof(want), "a=%s;b", R);
		expect_every_cut(&s, forms[i].what, in, want);
	}
	/* Hex in mixed case. */
	escape(SECRET, HEX_LOW, 1, enc);
	for (i = 0; enc[i]; i += 3)
		enc[i] = (char)(enc[i] >= 'a' ? enc[i] - 32 : enc[i]);
	expect_every_cut(&s, "hex, mixed case", enc, R);
	/* JSON: '/' as \/ (PHP's default), a mix of escapes in one value. */
	expect_every_cut(&s, "JSON \\/", "{\"t\":\"ghp_S3cretValue+\\/xyz\"}", "{\"t\":\"" R "\"}");
	expect_every_cut(&s, "mixed escapes", "ghp\\u005fS3cret%56alue&#43;\\/xyz", R);
	scrub_free(&s);
	/* A secret with characters JSON and forms escape: quote, backslash, space. */
	setup_secret(&s, "pa ss\"w\\rd-0123");
	expect_every_cut(&s, "JSON short escapes", "{\"p\":\"pa ss\\\"w\\\\rd-0123\"}",
			 "{\"p\":\"" R "\"}");
	expect_every_cut(&s, "form encoding, + for a space", "p=pa+ss%22w%5Crd-0123&q",
			 "p=" R "&q");
	expect_every_cut(&s, "HTML named references", "<i>pa ss&quot;w\\rd-0123</i>",
			 "<i>" R "</i>");
	scrub_free(&s);
}

static void test_unchanged(void **state)
{
	static const char *in = "ghp_S3cretValue+/xy ghp_ ghp_S3cretValu G Z3 plain text 1234 "
				"6768705f53336372657456616c7565 %67%68%70 Z2hwX1MzY3JldFZhbHVlKy94";
	struct scrub s;
	struct out o;
	size_t i, len = strlen(in);

	(void)state;
	setup_secret(&s, SECRET);
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
	assert_int_equal(scrub_lag(&s), 0);
	scrub_free(&s);
}

/* Matches that overlap (two secrets sharing characters, a periodic value) merge into one
 * replacement: no byte of any complete match comes out. */
static void test_overlap(void **state)
{
	struct scrub s;

	(void)state;
	setup_secret(&s, "abcdefgh12");
	assert_int_equal(scrub_add_secret(&s, (const uint8_t *)"efgh12xyzw", 10), 0);
	expect_every_cut(&s, "two overlapping secrets", "<abcdefgh12xyzw>", "<" R ">");
	expect_every_cut(&s, "adjacent", "abcdefgh12abcdefgh12", R R);
	scrub_free(&s);
	setup_secret(&s, "tototototo");
	expect_every_cut(&s, "periodic value", "[totototototototo]", "[" R "]");
	scrub_free(&s);
}

/* A long value (several state words, a lag above the minimum) in wrapped base64. */
static void test_long_secret(void **state)
{
	char secret[301], enc[512], wrapped[600], in[700];
	struct scrub s;
	size_t i;

	(void)state;
	for (i = 0; i < 300; i++)
		secret[i] = (char)('!' + (i * 7919) % 90);
	secret[300] = 0;
	setup_secret(&s, secret);
	assert_true(scrub_lag(&s) > SCRUB_LAG_MIN);
	b64(secret, 300, enc, 0);
	wrap(enc, 64, "\n", wrapped);
	snprintf(in, sizeof(in), "-----BEGIN X-----\n%s\n-----END X-----\n", wrapped);
	expect_every_cut(&s, "long secret, PEM-wrapped base64", in,
			 "-----BEGIN X-----\n" R "\n-----END X-----\n");
	scrub_free(&s);
}

/* Header fields are fed one by one with a flush between: nothing matches across a flush. */
static void test_flush_separates(void **state)
{
	struct scrub s;
	struct out o = { .n = 0 };

	(void)state;
	setup_secret(&s, SECRET);
	assert_int_equal(scrub_feed(&s, (const uint8_t *)"ghp_S3cret", 10, collect, &o), 0);
	assert_int_equal(scrub_flush(&s, collect, &o), 0);
	assert_int_equal(scrub_feed(&s, (const uint8_t *)"Value+/xyz", 10, collect, &o), 0);
	assert_int_equal(scrub_flush(&s, collect, &o), 0);
	assert_string_equal(o.b, "ghp_S3cretValue+/xyz");
	scrub_free(&s);
}

/* A value added in the middle of a message (a vault changed while a stream was open): what is
 * held is matched again, so the new value is replaced wherever it sits in the held bytes, and a
 * secret known before, cut by the addition, is still found whole. Also after bytes went out
 * (a message longer than the lag). Adding a known value changes nothing. */
static void test_added_mid_message(void **state)
{
	static const char added[] = "rotated-Value-7789";
	char in[4200], want[4200];
	struct scrub s;
	struct out o;
	size_t pre, k, n_pats;

	(void)state;
	for (pre = 0; pre <= 3000; pre += 3000) {
		memset(in, 'x', pre);
		snprintf(in + pre, sizeof(in) - pre, "a %s b %s c", SECRET, added);
		memset(want, 'x', pre);
		snprintf(want + pre, sizeof(want) - pre, "a %s b %s c", R, R);
		for (k = pre; k <= strlen(in); k++) {
			setup_secret(&s, SECRET);
			o.n = 0;
			o.b[0] = 0;
			assert_int_equal(scrub_feed(&s, (const uint8_t *)in, k, collect, &o), 0);
			assert_int_equal(
				scrub_add_secret(&s, (const uint8_t *)added, strlen(added)), 0);
			assert_int_equal(scrub_feed(&s, (const uint8_t *)in + k, strlen(in) - k,
						    collect, &o),
					 0);
			assert_int_equal(scrub_flush(&s, collect, &o), 0);
			if (strcmp(o.b, want))
				fail_msg("added after %zu of %zu bytes: got \"%s\"", k, strlen(in),
					 o.b + pre);
			n_pats = s.n_pats;
			assert_int_equal(
				scrub_add_secret(&s, (const uint8_t *)added, strlen(added)), 0);
			assert_int_equal(s.n_pats, n_pats);
			scrub_free(&s);
		}
	}
}

/* --- the fixed lag ------------------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int out_len(void *arg, const uint8_t *b, size_t n)
{
	(void)b;
	*(size_t *)arg += n;
	return 0;
}

/* Output lengths after each feed and after the flush. */
static size_t observe(struct scrub *s, const char *in, size_t len, const size_t *cuts,
		      size_t n_cuts, size_t *lens)
{
	size_t prev = 0, i;

	scrub_reset(s);
	for (i = 0; i <= n_cuts; i++) {
		size_t end = i < n_cuts ? cuts[i] : len;

		lens[i] = 0;
		assert_int_equal(
			scrub_feed(s, (const uint8_t *)in + prev, end - prev, out_len, &lens[i]),
			0);
		prev = end;
	}
	lens[i] = 0;
	assert_int_equal(scrub_flush(s, out_len, &lens[i]), 0);
	return i + 1;
}

/* For random prefixes of the secret and of its encoded forms, against random strings of the
 * same length that are no prefix, inside random text cut at random places (always right after
 * the guess too, where the old scrubber held a prefix back): the output lengths per feed are
 * identical, and each is what the lag alone predicts. */
static void test_fixed_lag(void **state)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				    "+/_-%\\&#;{}";
	char forms[13][512];
	struct scrub s;
	size_t trial, lag, maxk[13], i;

	(void)state;
	setup_secret(&s, SECRET);
	lag = scrub_lag(&s);
	assert_int_equal(lag, SCRUB_LAG_MIN);
	strcpy(forms[0], SECRET);
	b64(SECRET, strlen(SECRET), forms[1], 0);
	b64("x" SECRET, strlen(SECRET) + 1, forms[2], 1);
	escape(SECRET, HEX_LOW, 1, forms[3]);
	escape(SECRET, PCT_UP, 1, forms[4]);
	escape(SECRET, JSON_U, 1, forms[5]);
	escape(SECRET, OCT, 1, forms[6]);
	escape(SECRET, HTML_HEX8, 1, forms[7]);
	strcpy(forms[8], "ghp&lowbar;S3cretValue&plus;&sol;xyz");
	/* Python's names (the longest form a character may take), Perl, Java, shells. */
	strcpy(forms[9], "\\N{LATIN SMALL LETTER G}\\N{latin small letter h}p\\N{LOW LINE}"
			 "\\N{LATIN CAPITAL LETTER S}\\N{DIGIT THREE}cretValue\\N{PLUS SIGN}"
			 "\\N{Solidus}xyz");
	escape(SECRET, PERL_X10, 1, forms[10]);
	escape(SECRET, JAVA_U8, 1, forms[11]);
	escape(SECRET, SHELL_0, 1, forms[12]);
	for (i = 0; i < 13; i++)
		maxk[i] = strlen(forms[i]) - 1;
	/* A base64 form is complete (replaced) before its padding characters. */
	maxk[1] = strlen(SECRET) * 8 / 6 - 1;
	maxk[2] = (strlen(SECRET) + 1) * 8 / 6 - 1;
	/* A reference without its ';' is complete too. */
	maxk[7] = strlen(forms[7]) - 2;
	for (trial = 0; trial < 3000; trial++) {
		size_t form = next() % 13;
		const char *f = forms[form];
		size_t k = 1 + next() % maxk[form], pre = next() % 3000, post = next() % 40;
		size_t len = pre + k + post, cuts[16], n_cuts = 0, la[18], lb[18], na, nb;
		size_t total = 0, released = 0;
		char *a = malloc(len + 1), *b = malloc(len + 1);

		for (i = 0; i < pre; i++)
			a[i] = alpha[next() % (sizeof(alpha) - 1)];
		memcpy(a + pre, f, k);
		/* What follows cannot complete any form (no letter, digit or escape). */
		for (i = pre + k; i < len; i++)
			a[i] = "!#*,."[next() % 5];
		memcpy(b, a, len);
		/* Same length, differs from the prefix (at least in its last character). */
		for (i = pre; i < pre + k; i++)
			b[i] = alpha[next() % (sizeof(alpha) - 1)];
		if (b[pre + k - 1] == f[k - 1])
			b[pre + k - 1] = f[k - 1] == '#' ? '@' : '#';
		a[len] = b[len] = 0;
		while (n_cuts < 15) {
			size_t c = n_cuts ? cuts[n_cuts - 1] + 1 + next() % 700 : next() % 400;

			if (c >= pre + k && (!n_cuts || cuts[n_cuts - 1] < pre + k))
				c = pre + k; /* the guess ends a read */
			if (c >= len)
				break;
			cuts[n_cuts++] = c;
		}
		na = observe(&s, a, len, cuts, n_cuts, la);
		nb = observe(&s, b, len, cuts, n_cuts, lb);
		assert_int_equal(na, nb);
		/* The oracle first: the guess must not change what comes out when. */
		for (i = 0; i < na; i++)
			if (la[i] != lb[i])
				fail_msg(
					"trial %zu: after feed %zu, %zu bytes out with a prefix of "
					"%zu of form '%.12s...', %zu with a wrong guess",
					trial, i, la[i], k, f, lb[i]);
		for (i = 0; i < na; i++) {
			size_t fed = i < n_cuts ? cuts[i] : len, want;

			want = i == na - 1	? len - released
			       : fed >= lag - 1 ? fed - (lag - 1) - released
						: 0;
			if (la[i] != want)
				fail_msg("trial %zu: feed %zu gave %zu, the lag predicts %zu",
					 trial, i, la[i], want);
			released += want;
			total += la[i];
		}
		assert_int_equal(total, len);
		free(a);
		free(b);
	}
	scrub_free(&s);
}

/* The lag depends on the longest secret's length only, in powers of two. */
static void test_lag_value(void **state)
{
	struct scrub a, b;
	char v[200];

	(void)state;
	memset(v, 'q', sizeof(v));
	setup_secret(&a, "short");
	setup_secret(&b, "a-forty-character-token-0123456789abcdef");
	assert_int_equal(scrub_lag(&a), scrub_lag(&b));
	assert_int_equal(scrub_add_secret(&b, (const uint8_t *)v, sizeof(v)), 0);
	assert_true(scrub_lag(&b) > scrub_lag(&a));
	assert_int_equal(scrub_lag(&b) & (scrub_lag(&b) - 1), 0);
	scrub_free(&a);
	scrub_free(&b);
}

/* Hostile text cannot make the matcher slow: every byte is the same fixed work. A megabyte
 * of escapes, prefixes and whitespace is scrubbed, and its one real secret replaced. */
static void test_adversarial_input(void **state)
{
	static const char *pieces[] = { "%25",	"\\u00", "ghp_S3cretValu", "Z2hwX1Mz",
					"\r\n", "&#x",	 "6768705f",	   "\\\\" };
	size_t n = 1 << 20, i = 0, k = 0;
	char *in = malloc(n + 64);
	struct scrub s;
	struct out *o = malloc(sizeof(*o));
	size_t count = 0;

	(void)state;
	setup_secret(&s, SECRET);
	while (i < n) {
		const char *p = pieces[k++ % 8];

		memcpy(in + i, p, strlen(p));
		i += strlen(p);
	}
	memcpy(in + n - 40, "<" SECRET ">", strlen(SECRET) + 2);
	scrub_reset(&s);
	for (i = 0; i < n; i += count) {
		o->n = 0;
		count = n - i < 16384 ? n - i : 16384;
		assert_int_equal(scrub_feed(&s, (const uint8_t *)in + i, count, out_len, &o->n), 0);
	}
	assert_int_equal(scrub_flush(&s, out_len, &o->n), 0);
	assert_int_equal(s.replaced, 1);
	scrub_free(&s);
	free(in);
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_long_secret),
		cmocka_unit_test(test_flush_separates),
		cmocka_unit_test(test_added_mid_message),
		cmocka_unit_test(test_fixed_lag),
		cmocka_unit_test(test_lag_value),
		cmocka_unit_test(test_adversarial_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
