/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_scrub_forms.c: the scrubber's escape forms beyond percent, JSON and plain
 * HTML (test_scrub.c): every printable ASCII character through each form — octal, \u{..},
 * %uHHHH, \UHHHHHHHH, CSS hex escapes (with their white space, zero-padded), padded and
 * semicolon-less HTML numeric references, Perl's \x{..} \o{..} \N{U+..}, shells' \0NNN,
 * Java's \uu..u, Python's \N{NAME}, a backslash before punctuation, HTML5 named references —
 * the escaped character alone or the whole value escaped, cut at every offset; near misses
 * and forms past the bounds left alone; the longest forms of a long value within the lag. */
#include "broker/scrub.h"
#include "broker/scrub_unames.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define R SCRUB_REPLACEMENT

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

/* IN fed in two pieces cut at CUT, then flushed. */
static void run(struct scrub *s, const char *in, size_t cut, struct out *o)
{
	o->n = 0;
	o->b[0] = 0;
	scrub_reset(s);
	assert_int_equal(scrub_feed(s, (const uint8_t *)in, cut, collect, o), 0);
	assert_int_equal(scrub_feed(s, (const uint8_t *)in + cut, strlen(in) - cut, collect, o), 0);
	assert_int_equal(scrub_flush(s, collect, o), 0);
}

static void expect_every_cut(struct scrub *s, const char *what, const char *in, const char *want)
{
	struct out *o = malloc(sizeof(*o));
	size_t i;

	for (i = 0; i <= strlen(in); i++) {
		run(s, in, i, o);
		if (strcmp(o->b, want))
			fail_msg("%s, cut at %zu:\n  in:   %s\n  got:  %s\n  want: %s", what, i, in,
				 o->b, want);
	}
	free(o);
}

static void setup_secret(struct scrub *s, const char *secret)
{
	scrub_init(s);
	assert_int_equal(scrub_add_secret(s, (const uint8_t *)secret, strlen(secret)), 0);
}

/* One character in one form; NEXT follows it (a reference without ';' needs a non-digit). */
typedef int (*form_fn)(char *o, unsigned char c, unsigned char next);

static int f_octal(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\%03o", c);
}
static int f_ubrace(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\u{%x}", c);
}
static int f_ubrace8(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\u{%08X}", c);
}
static int f_pctu(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "%%u%04X", c);
}
static int f_bigu(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\U%08x", c);
}
static int f_css_space(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\%x ", c);
}
static int f_css_crlf(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\%X\r\n", c);
}
static int f_css6(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\%06x", c);
}
static int f_css_bare(char *o, unsigned char c, unsigned char n)
{
	/* No white space where nothing hex follows. */
	return sprintf(o,
		       (n >= '0' && n <= '9') || ((n | 0x20) >= 'a' && (n | 0x20) <= 'f') ? "\\%x "
											  : "\\%x",
		       c);
}
static int f_dec4(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "&#%04d;", c);
}
static int f_dec9(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "&#%09d;", c);
}
static int f_dec_nosemi(char *o, unsigned char c, unsigned char n)
{
	return sprintf(o, n >= '0' && n <= '9' ? "&#%d;" : "&#%d", c);
}
static int f_hex4(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "&#x%04X;", c);
}
static int f_hex8(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "&#X%08x;", c);
}
static int f_hex_nosemi(char *o, unsigned char c, unsigned char n)
{
	return sprintf(o,
		       (n >= '0' && n <= '9') || ((n | 0x20) >= 'a' && (n | 0x20) <= 'f') ? "&#x%x;"
											  : "&#x%x",
		       c);
}
static int f_xshort(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\x%x", c);
}
static int f_perlx(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\x{%x}", c);
}
static int f_perlx4(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\x{%04X}", c);
}
static int f_perlx10(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\x{%010x}", c);
}
static int f_perlo(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\o{%o}", c);
}
static int f_perlo11(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\o{%011o}", c);
}
static int f_perlnu(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\N{U+%X}", c);
}
static int f_perlnu10(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\N{U+%010x}", c);
}
static int f_shell0(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\0%o", c);
}
static int f_shell03(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\0%03o", c);
}
static int f_javau3(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\uuu%04x", c);
}
static int f_javau8(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return sprintf(o, "\\uuuuuuuu%04X", c);
}
/* Python's \N{NAME}: every name and alias of C in broker/scrub_unames.h (whose names
 * test_scrub_forms.sh checks against Python's decoder), in upper, lower or mixed case. */
static int name_form(char *o, unsigned char c, int which, int fold)
{
	size_t i, j;
	int hit = 0;

	for (i = 0; i < sizeof(scrub_unames) / sizeof(scrub_unames[0]); i++) {
		if (scrub_unames[i].v != c || hit++ != which)
			continue;
		strcpy(o, "\\N{");
		for (j = 0; scrub_unames[i].name[j]; j++) {
			char ch = scrub_unames[i].name[j];

			if (fold == 1 || (fold == 2 && j % 2))
				ch = (char)tolower((unsigned char)ch);
			o[3 + j] = ch;
		}
		strcpy(o + 3 + j, "}");
		return (int)(j + 4);
	}
	return name_form(o, c, 0, fold); /* C has fewer names: its first */
}
static int f_name(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return name_form(o, c, 0, 0);
}
static int f_name_lower(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return name_form(o, c, 0, 1);
}
static int f_name_alias(char *o, unsigned char c, unsigned char n)
{
	(void)n;
	return name_form(o, c, 1, 2);
}

static const struct {
	const char *name;
	form_fn f;
} forms[] = {
	{ "octal \\137", f_octal },
	{ "\\u{5f}", f_ubrace },
	{ "\\u{0000005F}", f_ubrace8 },
	{ "%u005F", f_pctu },
	{ "\\U0000005f", f_bigu },
	{ "CSS \\5f and a space", f_css_space },
	{ "CSS \\5F and CRLF", f_css_crlf },
	{ "CSS \\00005f", f_css6 },
	{ "CSS \\5f, white space only before a hex digit", f_css_bare },
	{ "&#0095;", f_dec4 },
	{ "&#000000095;", f_dec9 },
	{ "&#95 without ';'", f_dec_nosemi },
	{ "&#x005F;", f_hex4 },
	{ "&#X0000005f;", f_hex8 },
	{ "&#x5f without ';'", f_hex_nosemi },
	{ "\\x5f, short digits", f_xshort },
	{ "Perl \\x{5f}", f_perlx },
	{ "Perl \\x{005F}", f_perlx4 },
	{ "Perl \\x{000000005f}", f_perlx10 },
	{ "Perl \\o{137}", f_perlo },
	{ "Perl \\o{00000000137}", f_perlo11 },
	{ "Perl \\N{U+5F}", f_perlnu },
	{ "Perl \\N{U+000000005f}", f_perlnu10 },
	{ "shell \\0137", f_shell0 },
	{ "shell \\0137, three digits", f_shell03 },
	{ "Java \\uuu005f", f_javau3 },
	{ "Java \\uuuuuuuu005F", f_javau8 },
	{ "Python \\N{LOW LINE}", f_name },
	{ "Python \\N{low line}", f_name_lower },
	{ "Python \\N{SP}, mixed case", f_name_alias },
};

/* SECRET with the characters at ONLY (or, when ONLY is NULL, every character) in form F. */
static void encode(const char *secret, form_fn f, const char *only, char *o)
{
	size_t i, n = 0;

	for (i = 0; secret[i]; i++)
		if (!only || strchr(only, secret[i]))
			n += (size_t)f(o + n, (unsigned char)secret[i],
				       (unsigned char)secret[i + 1]);
		else
			o[n++] = secret[i];
	o[n] = 0;
}

/* Each printable ASCII character, inside a value, through each form: alone escaped, and with
 * the whole value escaped. */
static void test_every_printable_every_form(void **state)
{
	char secret[16], enc[1024], in[1100], one[2] = { 0 };
	struct scrub s;
	size_t f;
	int c;

	(void)state;
	for (c = 0x20; c < 0x7f; c++) {
		snprintf(secret, sizeof(secret), "Kp7%cwQ2%c9", c, c);
		setup_secret(&s, secret);
		one[0] = (char)c;
		for (f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			char what[96];

			snprintf(what, sizeof(what), "'%c' as %s", c, forms[f].name);
			encode(secret, forms[f].f, one, enc);
			snprintf(in, sizeof(in), "<%s>", enc);
			expect_every_cut(&s, what, in, "<" R ">");
			snprintf(what, sizeof(what), "'%c' in a value all %s", c, forms[f].name);
			encode(secret, forms[f].f, NULL, enc);
			snprintf(in, sizeof(in), "(%s)", enc);
			expect_every_cut(&s, what, in, "(" R ")");
		}
		scrub_free(&s);
	}
}

/* A backslash before any character that is not a letter or digit (regular expressions,
 * Markdown, Java properties, shells); HTML5's names for punctuation, with and without the
 * legacy missing ';'. */
static void test_backslash_and_names(void **state)
{
	static const struct {
		const char *ref;
		char c;
	} names[] = {
		{ "&excl;", '!' },   { "&quot;", '"' },	  { "&QUOT;", '"' },
		{ "&quot", '"' },    { "&num;", '#' },	  { "&dollar;", '$' },
		{ "&percnt;", '%' }, { "&amp;", '&' },	  { "&amp", '&' },
		{ "&AMP;", '&' },    { "&apos;", '\'' },  { "&lpar;", '(' },
		{ "&rpar;", ')' },   { "&ast;", '*' },	  { "&midast;", '*' },
		{ "&plus;", '+' },   { "&comma;", ',' },  { "&period;", '.' },
		{ "&sol;", '/' },    { "&colon;", ':' },  { "&semi;", ';' },
		{ "&lt;", '<' },     { "&LT", '<' },	  { "&equals;", '=' },
		{ "&gt;", '>' },     { "&gt", '>' },	  { "&quest;", '?' },
		{ "&commat;", '@' }, { "&lsqb;", '[' },	  { "&lbrack;", '[' },
		{ "&bsol;", '\\' },  { "&rsqb;", ']' },	  { "&rbrack;", ']' },
		{ "&Hat;", '^' },    { "&lowbar;", '_' }, { "&UnderBar;", '_' },
		{ "&grave;", '`' },  { "&lcub;", '{' },	  { "&lbrace;", '{' },
		{ "&verbar;", '|' }, { "&vert;", '|' },	  { "&rcub;", '}' },
		{ "&rbrace;", '}' }, { "&hyphen;", '-' }, { "&dash;", '-' },
		{ "&tilde;", '~' },  { "&Tab;", '\t' },	  { "&NewLine;", '\n' },
	};
	char secret[16], in[128];
	struct scrub s;
	size_t i;
	int c;

	(void)state;
	for (c = 0x20; c < 0x7f; c++) {
		if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
			continue;
		snprintf(secret, sizeof(secret), "Kp7%cwQ2%c9", c, c);
		setup_secret(&s, secret);
		snprintf(in, sizeof(in), "x=Kp7\\%cwQ2\\%c9;", c, c);
		expect_every_cut(&s, "backslash before punctuation", in, "x=" R ";");
		scrub_free(&s);
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* A ';'-less legacy name is followed by a character that is not a letter. */
		int semi = names[i].ref[strlen(names[i].ref) - 1] == ';';

		snprintf(secret, sizeof(secret), semi ? "Kp7%cwQ2%c9" : "Kp7%c.wQ2", names[i].c,
			 names[i].c);
		setup_secret(&s, secret);
		snprintf(in, sizeof(in), semi ? "<i>Kp7%swQ2%s9</i>" : "<i>Kp7%s.wQ2</i>",
			 names[i].ref, names[i].ref);
		expect_every_cut(&s, names[i].ref, in, "<i>" R "</i>");
		scrub_free(&s);
	}
}

/* Text that is almost an escape of the secret stays as it is. */
static void test_near_misses(void **state)
{
	static const char *in =
		"Kp7\\136wQ2\\137 Kp7\\u{5e}wQ2 Kp7&lowbar wQ2 Kp7&#x5e;wQ2 "
		"Kp7%u005EwQ2 Kp7\\5e wQ2 Kp7&#0000000095;wQ2 Kp7\\u{000000005f}wQ2 "
		"Kp7&under;wQ2 Kp7\\uuuuuuuuu005fwQ2 Kp7\\x{00000000005f}wQ2 "
		"Kp7\\o{000000000137}wQ2 "
		"Kp7\\N{U+00000000005f}wQ2 Kp7\\00137wQ2 Kp7\\N{LOW  LINE}wQ2 Kp7\\N{LOWLINE}wQ2 "
		"Kp7\\N{LOW LINE }wQ2 Kp7\\N{CIRCUMFLEX ACCENT}wQ2 Kp7\\x{5e}wQ2 Kp7\\0136wQ2";
	struct scrub s;

	(void)state;
	/* The value: "Kp7_wQ2"; the text holds '^' (0x5e) or forms longer than the bound. */
	setup_secret(&s, "Kp7_wQ2");
	expect_every_cut(&s, "near misses", in, in);
	/* The same forms with the right character are replaced. */
	expect_every_cut(&s, "the same, right", "Kp7\\137wQ2 Kp7&#95wQ2", R " " R);
	expect_every_cut(
		&s, "the new forms, right",
		"Kp7\\uuuuuuuu005fwQ2 Kp7\\x{000000005f}wQ2 Kp7\\0137wQ2 Kp7\\N{low LINE}wQ2",
		R " " R " " R " " R);
	assert_true(s.replaced > 0);
	scrub_free(&s);
}

/* Every character of a long value in the longest form, and its base64 with the longest
 * escapes between wrapped lines: matched, so the lag covers the longest span. */
static void test_longest_forms(void **state)
{
	char secret[81], *enc = malloc(4096), *in = malloc(4200);
	struct scrub s;
	size_t i;

	(void)state;
	for (i = 0; i < 80; i++)
		secret[i] = (char)('#' + (i * 37) % 90);
	secret[80] = 0;
	setup_secret(&s, secret);
	assert_true(scrub_lag(&s) >= 80 * 26);
	encode(secret, f_hex8, NULL, enc);
	snprintf(in, 2200, "[%s]", enc);
	expect_every_cut(&s, "80 characters as &#X0000005f;", in, "[" R "]");
	encode(secret, f_dec9, NULL, enc);
	snprintf(in, 2200, "[%s]", enc);
	expect_every_cut(&s, "80 characters as &#000000095;", in, "[" R "]");
	encode(secret, f_name, NULL, enc);
	snprintf(in, 4200, "[%s]", enc);
	expect_every_cut(&s, "80 characters as \\N{LATIN CAPITAL LETTER A}", in, "[" R "]");
	scrub_free(&s);
	free(enc);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_printable_every_form),
		cmocka_unit_test(test_backslash_and_names),
		cmocka_unit_test(test_near_misses),
		cmocka_unit_test(test_longest_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
