/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub_token.c: the escaping layers the scrubber sees through — which characters the
 * bytes just before a position may decode to. One decoder for every form (percent and %uHHHH,
 * JSON/JavaScript \uHHHH and Java's \uu..uHHHH, \u{H..}, \UHHHHHHHH, \xHH, Perl's \x{H..},
 * \o{O..} and \N{U+H..}, octal and shell \0NNN, Python's \N{NAME}, a backslash before any
 * other character, CSS hex escapes, HTML numeric and named references, hex pairs, '+' for a
 * space), each at most SCRUB_TOKEN_MAX bytes. It reads only bytes before the position, so it never
 * waits for what follows; where a real decoder would read on (a semicolon-less reference or
 * a CSS escape followed by more digits) it accepts the shorter reading too: only a complete
 * secret is ever replaced, so reading too much costs nothing but the rare false match. */
#include "broker/scrub_internal.h"
#include "broker/scrub_unames.h"
#include "lib/hex.h"

#include <string.h>

#define H SCRUB_C_HEX
#define X SCRUB_C_SPECIAL
#define N SCRUB_C_NUMPRE
#define L SCRUB_C_LEGACY
#define U SCRUB_C_RUNPRE
const uint8_t scrub_class[256] = {
	['\t'] = X, ['\n'] = X, ['\r'] = X,    ['\f'] = X,    [' '] = X,     ['+'] = X,
	[';'] = X,  ['}'] = X,	['#'] = N | U, ['x'] = N | U, ['X'] = N | U, ['\\'] = N | U,
	['u'] = U,  ['U'] = U,	['%'] = U,     ['p'] = L,     ['t'] = L,     ['P'] = L,
	['T'] = L,  ['0'] = H,	['1'] = H,     ['2'] = H,     ['3'] = H,     ['4'] = H,
	['5'] = H,  ['6'] = H,	['7'] = H,     ['8'] = H,     ['9'] = H,     ['a'] = H,
	['b'] = H,  ['c'] = H,	['d'] = H,     ['e'] = H,     ['f'] = H,     ['A'] = H,
	['B'] = H,  ['C'] = H,	['D'] = H,     ['E'] = H,     ['F'] = H,
};
#undef H
#undef X
#undef N
#undef L
#undef U

static int digit(uint8_t c, int base)
{
	int v = base == 16 ? hex_digit(c) : c >= '0' && c <= '9' ? c - '0' : -1;

	return v < base ? v : -1;
}

static int is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The tokens found so far at one position. */
struct toks {
	struct scrub_tok *t;
	size_t n;
};

/* Adds a token of LEN bytes decoding to V (dropped when V is not a byte). At most
 * SCRUB_TOKENS_MAX can exist at one position (see scrub_internal.h). */
static void add(struct toks *k, size_t len, long v, int ws, int raw)
{
	size_t i;

	if (v < 0 || v > 255 || len > SCRUB_TOKEN_MAX || k->n == SCRUB_TOKENS_MAX)
		return;
	for (i = 0; i < k->n; i++)
		if (k->t[i].len == len && k->t[i].val == v && k->t[i].raw == raw)
			return;
	k->t[k->n++] = (struct scrub_tok){ (uint8_t)len, (uint8_t)v, (uint8_t)ws, (uint8_t)raw };
}

/* The run of BASE digits that ends SKIP bytes before END (at most MAX+1 of them, within
 * AVAIL): how many, and their value in *V. */
static size_t run(const uint8_t *end, size_t avail, size_t skip, int base, size_t max, long *v)
{
	size_t n = 0;
	long mul = 1;

	*v = 0;
	while (n <= max && skip + n < avail) {
		int d = digit(end[-1 - (long)(skip + n)], base);

		if (d < 0)
			break;
		*v += d * mul;
		mul *= base;
		n++;
	}
	return n;
}

/* Whether PRE stands right before the AT bytes that end at END. */
static int before(const uint8_t *end, size_t avail, size_t at, const char *pre)
{
	size_t l = strlen(pre);

	return at + l <= avail && !memcmp(end - at - l, pre, l);
}

/* A number of DIGITS to MAX digits in BASE, then SKIP bytes of terminator, after PRE. */
static void number(struct toks *k, const uint8_t *end, size_t avail, size_t skip, int base,
		   size_t max, const char *pre)
{
	long v;
	size_t n = run(end, avail, skip, base, max, &v);

	if (n && n <= max && before(end, avail, n + skip, pre))
		add(k, n + skip + strlen(pre), v, 0, 0);
}

/* HTML5's named references for ASCII characters (the short ones: at most SCRUB_TOKEN_MAX
 * bytes with '&' and ';'; `&DiacriticalGrave;` and `&VerticalLine;` are longer). &hyphen;,
 * &dash; and &tilde; name other characters, but encoders' tables use them for '-' and '~'. */
static const struct {
	const char *name;
	uint8_t v;
} named[] = {
	{ "excl", '!' },   { "quot", '"' },	{ "QUOT", '"' },     { "num", '#' },
	{ "dollar", '$' }, { "percnt", '%' },	{ "amp", '&' },	     { "AMP", '&' },
	{ "apos", '\'' },  { "lpar", '(' },	{ "rpar", ')' },     { "ast", '*' },
	{ "midast", '*' }, { "plus", '+' },	{ "comma", ',' },    { "period", '.' },
	{ "sol", '/' },	   { "colon", ':' },	{ "semi", ';' },     { "lt", '<' },
	{ "LT", '<' },	   { "equals", '=' },	{ "gt", '>' },	     { "GT", '>' },
	{ "quest", '?' },  { "commat", '@' },	{ "lsqb", '[' },     { "lbrack", '[' },
	{ "bsol", '\\' },  { "rsqb", ']' },	{ "rbrack", ']' },   { "Hat", '^' },
	{ "lowbar", '_' }, { "UnderBar", '_' }, { "grave", '`' },    { "lcub", '{' },
	{ "lbrace", '{' }, { "verbar", '|' },	{ "vert", '|' },     { "rcub", '}' },
	{ "rbrace", '}' }, { "Tab", '\t' },	{ "NewLine", '\n' }, { "hyphen", '-' },
	{ "dash", '-' },   { "tilde", '~' },
};

/* A named reference ending at END: with its ';' (SEMI), or one of the legacy names that
 * HTML also reads without it. */
static void named_ref(struct toks *k, const uint8_t *end, size_t avail, int semi)
{
	static const struct {
		const char *name;
		uint8_t v;
	} legacy[] = { { "amp", '&' }, { "AMP", '&' }, { "lt", '<' },	{ "LT", '<' },
		       { "gt", '>' },  { "GT", '>' },  { "quot", '"' }, { "QUOT", '"' } };
	size_t i, n = (size_t)semi, len;

	for (i = 0; !semi && i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		len = strlen(legacy[i].name);
		if (before(end, avail, len, "&") && !memcmp(end - len, legacy[i].name, len))
			add(k, len + 1, legacy[i].v, 0, 0);
	}
	if (!semi)
		return;
	while (n < avail && n < SCRUB_TOKEN_MAX - 1 && (end[-1 - (long)n] | 0x20) >= 'a' &&
	       (end[-1 - (long)n] | 0x20) <= 'z')
		n++;
	len = n - 1; /* the name's bytes */
	if (!len || !before(end, avail, n, "&"))
		return;
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (strlen(named[i].name) == len && !memcmp(end - 1 - len, named[i].name, len))
			add(k, len + 2, named[i].v, 0, 0);
}

/* A backslash and one character: JSON's, JavaScript's and C's short escapes, and any other
 * character but a hex digit escaped as itself (regular expressions, Markdown, shells, CSS). */
static void backslash(struct toks *k, uint8_t b)
{
	static const char from[] = "bfnrtv", to[] = "\b\f\n\r\t\v";
	const char *s = b ? strchr(from, b) : NULL;

	if (s)
		add(k, 2, to[s - from], is_ws((uint8_t)to[s - from]), 0);
	if (b >= 0x20 && b < 0x7f && hex_digit(b) < 0)
		add(k, 2, b, is_ws(b), 0);
}

/* JSON's \uHHHH and Java's \uu..uHHHH (any number of 'u's; here up to SCRUB_U_MAX): V is
 * the four digits before END. */
#define SCRUB_U_MAX 8
static void java_u(struct toks *k, const uint8_t *end, size_t avail, long v)
{
	size_t u = 0;

	while (u <= SCRUB_U_MAX && 4 + u < avail && end[-5 - (long)u] == 'u')
		u++;
	if (u && u <= SCRUB_U_MAX && before(end, avail, 4 + u, "\\"))
		add(k, 5 + u, v, 0, 0);
}

/* Forms that end in a hex digit. */
static void hex_end(struct toks *k, const uint8_t *end, size_t avail)
{
	int p1 = avail >= 2 ? hex_digit(end[-2]) : -1, v = p1 * 16 + hex_digit(end[-1]);
	size_t n;
	long w;

	if (p1 >= 0) {
		/* A hex pair is a hex dump's character: only the raw value's patterns take it. */
		add(k, 2, v, 0, 1);
		if (before(end, avail, 2, "%"))
			add(k, 3, v, is_ws((uint8_t)v), 0);
		if (before(end, avail, 2, "\\x"))
			add(k, 4, v, 0, 0);
	}
	if (before(end, avail, 1, "\\x"))
		add(k, 3, hex_digit(end[-1]), 0, 0);
	/* \uHHHH and %uHHHH take four digits, \UHHHHHHHH eight, whatever stands before them. */
	n = run(end, avail, 0, 16, 8, &w);
	if (n >= 4 && (before(end, avail, 4, "%u") || before(end, avail, 4, "%U")))
		add(k, 6, w & 0xffff, 0, 0);
	if (n >= 4)
		java_u(k, end, avail, w & 0xffff);
	if (n >= 8 && before(end, avail, 8, "\\U"))
		add(k, 10, w & 0xffffffff, 0, 0);
	/* Octal \D to \DDD, and shells' \0NNN (printf %b, echo -e): "\0" and one to three
	 * octal digits. */
	n = run(end, avail, 0, 8, 4, &w);
	if (n && n <= 4 && before(end, avail, n, "\\") && (n <= 3 || end[-(long)n] == '0'))
		add(k, n + 1, w, 0, 0);
	number(k, end, avail, 0, 16, 6, "\\"); /* CSS */
	number(k, end, avail, 0, 10, 9, "&#"); /* a reference without its ';' */
	number(k, end, avail, 0, 16, 8, "&#x");
	number(k, end, avail, 0, 16, 8, "&#X");
}

static int name_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == ' ' || c == '-';
}

/* Python's \N{NAME}: a character's Unicode name or alias, in any case (broker/scrub_unames.h,
 * generated from Python's own table). */
static void uname(struct toks *k, const uint8_t *end, size_t avail)
{
	size_t n = 0, i, j;
	const uint8_t *nm;

	while (n <= SCRUB_UNAME_MAX && n + 1 < avail && name_char(end[-2 - (long)n]))
		n++;
	if (!n || n > SCRUB_UNAME_MAX || !before(end, avail, n + 1, "\\N{"))
		return;
	nm = end - 1 - n;
	for (i = 0; i < sizeof(scrub_unames) / sizeof(scrub_unames[0]); i++) {
		const char *name = scrub_unames[i].name;

		/* Name characters are letters, digits, ' ' and '-': OR-ing 0x20 folds case only. */
		for (j = 0; j < n && name[j] && (name[j] | 0x20) == (nm[j] | 0x20); j++)
			;
		if (j == n && !name[j])
			add(k, n + 4, scrub_unames[i].v, is_ws(scrub_unames[i].v), 0);
	}
}

/* Forms that end in '}': \u{H..} (JavaScript, Rust, Swift; 1 to 8 digits), Perl's (and PCRE's,
 * PHP's, Go's and Rust's regular expressions') \x{H..} and Perl's \N{U+H..} (1 to 10 hex
 * digits) and \o{O..} (1 to 11 octal digits): a printable character with at least 8 leading
 * zeros; and \N{NAME}. */
static void braced(struct toks *k, const uint8_t *end, size_t avail)
{
	number(k, end, avail, 1, 16, 8, "\\u{");
	number(k, end, avail, 1, 16, 10, "\\x{");
	number(k, end, avail, 1, 8, 11, "\\o{");
	number(k, end, avail, 1, 16, 10, "\\N{U+");
	uname(k, end, avail);
}

size_t scrub_tokens(const uint8_t *end, size_t avail, struct scrub_tok *t)
{
	struct toks k = { t, 0 };
	uint8_t b = end[-1];

	add(&k, 1, b, is_ws(b), 0);
	if (b == '+') /* form encoding */
		add(&k, 1, ' ', 0, 0);
	if (avail >= 2 && end[-2] == '\\')
		backslash(&k, b);
	if (hex_digit(b) >= 0)
		hex_end(&k, end, avail);
	if (b == ';') {
		number(&k, end, avail, 1, 10, 9, "&#");
		number(&k, end, avail, 1, 16, 8, "&#x");
		number(&k, end, avail, 1, 16, 8, "&#X");
		named_ref(&k, end, avail, 1);
	}
	if (scrub_class[b] & SCRUB_C_LEGACY)
		named_ref(&k, end, avail, 0);
	if (b == '}')
		braced(&k, end, avail);
	/* CSS: a hex escape ends at the first white space after it (CRLF counts as one). */
	if (b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f') {
		number(&k, end, avail, 1, 16, 6, "\\");
		if (b == '\n' && avail >= 2 && end[-2] == '\r')
			number(&k, end, avail, 2, 16, 6, "\\");
	}
	return k.n;
}
