/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/echo_reflect.c: the echo upstream's /reflect answers — the request's X-Reflect
 * value repeated in a chosen encoding (the forms a real API may echo a field in), optionally
 * compressed or sent with a pause in the middle, so tests can check what the broker lets
 * through and what a guest can observe. */
#include "tests/tools/echo_reflect.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <zlib.h>

struct buf {
	char *b;
	size_t n, cap;
};

static void put(struct buf *o, const void *p, size_t n)
{
	if (o->n + n + 1 > o->cap) {
		o->cap = (o->n + n + 1) * 2;
		o->b = realloc(o->b, o->cap);
		if (!o->b)
			abort();
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
	o->b[o->n] = 0;
}

/* PRE, V in DIGITS hex digits (UPPER case or not), POST. */
static void putx(struct buf *o, const char *pre, unsigned v, int digits, int upper,
		 const char *post)
{
	const char *hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char t[8];
	int i;

	for (i = 0; i < digits; i++)
		t[i] = hex[(v >> (4 * (digits - 1 - i))) & 15];
	put(o, pre, strlen(pre));
	put(o, t, (size_t)digits);
	put(o, post, strlen(post));
}

static int unreserved(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("-._~", c);
}

/* Base64 of IN, ALPHABET 0 standard / 1 url; wrapped every WIDTH characters with SEP. */
static void b64(struct buf *o, const uint8_t *in, size_t n, int url, size_t width, const char *sep)
{
	char *e = malloc(4 * ((n + 2) / 3) + 1);
	size_t i, len;

	len = (size_t)EVP_EncodeBlock((unsigned char *)e, in, (int)n);
	for (i = 0; i < len; i++) {
		char ch = e[i];

		if (width && i && i % width == 0)
			put(o, sep, strlen(sep));
		if (url)
			ch = ch == '+' ? '-' : ch == '/' ? '_' : ch;
		if (!strcmp(sep, "json") && ch == '/')
			put(o, "\\/", 2);
		else
			put(o, &ch, 1);
	}
	free(e);
}

/* The HTML5 name an encoder writes for an ASCII punctuation character, or NULL. */
static const char *html5_name(uint8_t c)
{
	static const char *const names[][2] = {
		{ "!", "excl" },   { "\"", "quot" },  { "#", "num" },	{ "$", "dollar" },
		{ "%", "percnt" }, { "&", "amp" },    { "'", "apos" },	{ "(", "lpar" },
		{ ")", "rpar" },   { "*", "ast" },    { "+", "plus" },	{ ",", "comma" },
		{ ".", "period" }, { "/", "sol" },    { ":", "colon" }, { ";", "semi" },
		{ "<", "lt" },	   { "=", "equals" }, { ">", "gt" },	{ "?", "quest" },
		{ "@", "commat" }, { "[", "lsqb" },   { "\\", "bsol" }, { "]", "rsqb" },
		{ "^", "Hat" },	   { "_", "lowbar" }, { "`", "grave" }, { "{", "lcub" },
		{ "|", "verbar" }, { "}", "rcub" },
	}; /* '-' and '~' have none (&hyphen; and &tilde; name other characters) */
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i][0][0] == c)
			return names[i][1];
	return NULL;
}

/* Python's \N{} name of a printable ASCII character C (an encoder's table of its own; the
 * test checks each with Python's decoder). */
static void uname(char *t, size_t cap, uint8_t c)
{
	static const char *const digits[] = { "ZERO", "ONE", "TWO",   "THREE", "FOUR",
					      "FIVE", "SIX", "SEVEN", "EIGHT", "NINE" };
	static const char *const punct[] = {
		" SPACE",
		"!EXCLAMATION MARK",
		"\"QUOTATION MARK",
		"#NUMBER SIGN",
		"$DOLLAR SIGN",
		"%PERCENT SIGN",
		"&AMPERSAND",
		"'APOSTROPHE",
		"(LEFT PARENTHESIS",
		")RIGHT PARENTHESIS",
		"*ASTERISK",
		"+PLUS SIGN",
		",COMMA",
		"-HYPHEN-MINUS",
		".FULL STOP",
		"/SOLIDUS",
		":COLON",
		";SEMICOLON",
		"<LESS-THAN SIGN",
		"=EQUALS SIGN",
		">GREATER-THAN SIGN",
		"?QUESTION MARK",
		"@COMMERCIAL AT",
		"[LEFT SQUARE BRACKET",
		"\\REVERSE SOLIDUS",
		"]RIGHT SQUARE BRACKET",
		"^CIRCUMFLEX ACCENT",
		"_LOW LINE",
		"`GRAVE ACCENT",
		"{LEFT CURLY BRACKET",
		"|VERTICAL LINE",
		"}RIGHT CURLY BRACKET",
		"~TILDE",
	};
	size_t i;

	snprintf(t, cap, "%c", c); /* not printable: itself */
	if (c >= 'a' && c <= 'z')
		snprintf(t, cap, "\\N{LATIN SMALL LETTER %c}", c - 'a' + 'A');
	else if (c >= 'A' && c <= 'Z')
		snprintf(t, cap, "\\N{LATIN CAPITAL LETTER %c}", c);
	else if (c >= '0' && c <= '9')
		snprintf(t, cap, "\\N{DIGIT %s}", digits[c - '0']);
	for (i = 0; i < sizeof(punct) / sizeof(punct[0]); i++)
		if ((uint8_t)punct[i][0] == c)
			snprintf(t, cap, "\\N{%s}", punct[i] + 1);
}

/* One character C (followed by NEXT) in one of the escape forms of many languages; a name
 * ending in "all": every character, else only what is not a letter or digit (what most
 * encoders escape). 0, or -1: ENC is not one of them. */
static int lang_escape(struct buf *o, const char *enc, uint8_t c, uint8_t next)
{
	int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
	size_t l = strlen(enc);
	int all = l > 3 && !strcmp(enc + l - 3, "all");
	char t[48], base[16];

	snprintf(base, sizeof(base), "%.*s", (int)(all ? l - 3 : l), enc);
	if (!strcmp(base, "css6") || !strcmp(base, "bigu"))
		all = 1;
	if (!strcmp(base, "bspunct")) /* regex and Markdown escaping */
		snprintf(t, sizeof(t), "\\%c", c);
	else if (!strcmp(base, "octal"))
		snprintf(t, sizeof(t), "\\%03o", c);
	else if (!strcmp(base, "ubrace")) /* JavaScript, Rust, Swift */
		snprintf(t, sizeof(t), "\\u{%x}", c);
	else if (!strcmp(base, "pctu")) /* JavaScript's escape() */
		snprintf(t, sizeof(t), "%%u%04X", c);
	else if (!strcmp(base, "css"))
		snprintf(t, sizeof(t), "\\%x ", c);
	else if (!strcmp(base, "css6"))
		snprintf(t, sizeof(t), "\\%06x", c);
	else if (!strcmp(base, "html0"))
		snprintf(t, sizeof(t), "&#%04d;", c);
	else if (!strcmp(base, "htmlx0"))
		snprintf(t, sizeof(t), "&#x%04X;", c);
	else if (!strcmp(base, "htmlnosemi")) /* the ';' only where a digit follows */
		snprintf(t, sizeof(t), "&#%d%s", c, next >= '0' && next <= '9' ? ";" : "");
	else if (!strcmp(base, "html5"))
		snprintf(t, sizeof(t), "&%s;", html5_name(c) ? html5_name(c) : "");
	else if (!strcmp(base, "bigu")) /* Python's and C's \U */
		snprintf(t, sizeof(t), "\\U%08X", c);
	else if (!strcmp(base, "perlx")) /* Perl, PCRE, PHP, Go's and Rust's regexes */
		snprintf(t, sizeof(t), "\\x{%x}", c);
	else if (!strcmp(base, "perlx0"))
		snprintf(t, sizeof(t), "\\x{%04x}", c);
	else if (!strcmp(base, "perlo"))
		snprintf(t, sizeof(t), "\\o{%o}", c);
	else if (!strcmp(base, "perlnu"))
		snprintf(t, sizeof(t), "\\N{U+%04X}", c);
	else if (!strcmp(base, "sh0")) /* printf %b, echo -e */
		snprintf(t, sizeof(t), "\\0%o", c);
	else if (!strcmp(base, "javau")) /* Java's source: any number of 'u's */
		snprintf(t, sizeof(t), "\\uuu%04x", c);
	else if (!strcmp(base, "pyname") || !strcmp(base, "pynamelc")) {
		uname(t, sizeof(t), c);
		for (l = 3; base[6] && t[l]; l++) /* Python reads names in any case */
			t[l] = (char)tolower((unsigned char)t[l]);
	} else
		return -1;
	if ((alnum && !all) || (!strcmp(base, "html5") && !html5_name(c)))
		snprintf(t, sizeof(t), "%c", c);
	put(o, t, strlen(t));
	return 0;
}

int reflect_encode(const char *enc, const uint8_t *in, size_t n, char **out, size_t *out_n)
{
	struct buf o = { 0 };
	size_t i;

	put(&o, "", 0);
	if (!strcmp(enc, "raw"))
		put(&o, in, n);
	else if (!strcmp(enc, "b64"))
		b64(&o, in, n, 0, 0, "");
	else if (!strcmp(enc, "b64url"))
		b64(&o, in, n, 1, 0, "");
	else if (!strcmp(enc, "mime")) /* MIME: 76 columns, CRLF */
		b64(&o, in, n, 0, 76, "\r\n");
	else if (!strcmp(enc, "pem")) /* PEM: 64 columns, LF, here only 8 to wrap short values */
		b64(&o, in, n, 0, 8, "\n");
	else if (!strcmp(enc, "b64json")) /* in a JSON string, '/' escaped as PHP does */
		b64(&o, in, n, 0, 0, "json");
	else if (!strcmp(enc, "b64jsonwrap")) /* wrapped base64 inside a JSON string */
		b64(&o, in, n, 0, 8, "\\r\\n");
	else {
		for (i = 0; i < n; i++) {
			uint8_t c = in[i];

			if (!strcmp(enc, "hex"))
				putx(&o, "", c, 2, 0, "");
			else if (!strcmp(enc, "HEX"))
				putx(&o, "", c, 2, 1, "");
			else if (!strcmp(enc, "pct"))
				unreserved(c) ? put(&o, &c, 1) : putx(&o, "%", c, 2, 1, "");
			else if (!strcmp(enc, "pctl"))
				unreserved(c) ? put(&o, &c, 1) : putx(&o, "%", c, 2, 0, "");
			else if (!strcmp(enc, "pctall"))
				putx(&o, "%", c, 2, 0, "");
			else if (!strcmp(enc, "form"))
				c == ' '	? put(&o, "+", 1)
				: unreserved(c) ? put(&o, &c, 1)
						: putx(&o, "%", c, 2, 1, "");
			else if (!strcmp(enc, "jsonu"))
				putx(&o, "\\u", c, 4, 0, "");
			else if (!strcmp(enc, "html")) {
				char t[8];

				put(&o, t, (size_t)snprintf(t, sizeof(t), "&#%u;", c));
			} else if (!strcmp(enc, "bsx"))
				putx(&o, "\\x", c, 2, 0, "");
			else if (lang_escape(&o, enc, c, i + 1 < n ? in[i + 1] : 0)) {
				free(o.b);
				return -1;
			}
		}
	}
	*out = o.b;
	*out_n = o.n;
	return 0;
}

/* One gzip (or zlib-wrapped deflate) stream of IN. */
static void compress_into(struct buf *o, const void *in, size_t n, int gzip)
{
	z_stream z = { 0 };
	uint8_t t[16384];
	int rc;

	deflateInit2(&z, 6, Z_DEFLATED, gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	do {
		z.next_out = t;
		z.avail_out = sizeof(t);
		rc = deflate(&z, Z_FINISH);
		put(o, t, sizeof(t) - z.avail_out);
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
}

static int param(const char *path, const char *name, char *val, size_t cap)
{
	const char *q = strchr(path, '?');
	size_t nl = strlen(name);

	while (q) {
		q++;
		if (!strncmp(q, name, nl) && q[nl] == '=') {
			size_t l = strcspn(q + nl + 1, "&\n ");

			if (l >= cap)
				l = cap - 1;
			memcpy(val, q + nl + 1, l);
			val[l] = 0;
			return 1;
		}
		q = strchr(q, '&');
	}
	return 0;
}

static int chunk(reflect_write_fn w, void *arg, const void *b, size_t n)
{
	char h[32];
	int l = snprintf(h, sizeof(h), "%zx\r\n", n);

	return !n ? 0 : w(arg, h, (size_t)l) || w(arg, b, n) || w(arg, "\r\n", 2);
}

/* A gzip body of MIB mebibytes of zeros, streamed in chunks as it is made. */
static int bomb(reflect_write_fn w, void *arg, long mib)
{
	static const uint8_t zeros[65536];
	z_stream z = { 0 };
	uint8_t t[65536];
	long i;
	int rc = 0;

	deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
	for (i = 0; i <= mib * 16 && !rc; i++) {
		z.next_in = (Bytef *)zeros;
		z.avail_in = i < mib * 16 ? sizeof(zeros) : 0;
		do {
			z.next_out = t;
			z.avail_out = sizeof(t);
			deflate(&z, i < mib * 16 ? Z_NO_FLUSH : Z_FINISH);
			rc = chunk(w, arg, t, sizeof(t) - z.avail_out);
		} while (!rc && z.avail_out == 0);
	}
	deflateEnd(&z);
	return rc;
}

int reflect_answer(reflect_write_fn w, void *arg, const char *path, const uint8_t *payload,
		   size_t n, FILE *log)
{
	char enc[32] = "raw", ce[32] = "", te[32] = "", pause[16] = "0", mib[16] = "64",
	     pad[16] = "0", range[16] = "", hdr[512];
	struct buf body = { 0 }, z = { 0 };
	char *e;
	size_t en;
	int l, rc = 0, has_nl, eof;

	param(path, "enc", enc, sizeof(enc));
	param(path, "ce", ce, sizeof(ce));
	param(path, "te", te, sizeof(te));
	param(path, "pause", pause, sizeof(pause));
	param(path, "mib", mib, sizeof(mib));
	param(path, "pad", pad, sizeof(pad));
	param(path, "range", range, sizeof(range));
	if (reflect_encode(enc, payload, n, &e, &en))
		return w(arg, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 47);
	if (log) {
		fprintf(log, "reflect: %s\n", e);
		fflush(log);
	}
	has_nl = memchr(e, '\n', en) || memchr(e, '\r', en);
	/* te=eof: no framing at all, the body ends where the connection does. */
	eof = !strncmp(te, "eof", 3);
	l = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %s\r\nContent-Type: application/json\r\n%s%s%s%s%s%s%s%s",
		     !strcmp(range, "206") ? "206 Partial Content" : "200 OK",
		     *ce ? "Content-Encoding: " : "",
		     !strcmp(ce, "stacked") ? "gzip, gzip"
		     : !strcmp(ce, "bomb")  ? "gzip"
					    : ce,
		     *ce ? "\r\n" : "", *range ? "Content-Range: bytes 0-99/1000\r\n" : "",
		     eof ? "" : "Transfer-Encoding: ",
		     eof   ? ""
		     : *te ? te
			   : "chunked",
		     eof ? "Connection: close" : "", "\r\n");
	if (w(arg, hdr, (size_t)l) ||
	    (!has_nl && en < 8000 &&
	     (w(arg, "X-Reflect-Out: ", 15) || w(arg, e, en) || w(arg, "\r\n", 2))) ||
	    w(arg, "\r\n", 2)) {
		free(e);
		return -1;
	}
	/* The value ends the first part: where the old scrubber held a prefix back. */
	put(&body, "{\"pad\":\"", 8);
	for (l = 0; l < atoi(pad) && l < (1 << 20); l++)
		put(&body, ".", 1);
	put(&body, "\",\"echo\":\"", 10);
	put(&body, e, en);
	free(e);
	if (!strcmp(ce, "bomb")) {
		rc = bomb(w, arg, atol(mib));
	} else if (*ce) {
		put(&body, "\"}\n", 3);
		if (!strcmp(ce, "stacked")) {
			compress_into(&z, body.b, body.n, 1);
			body.n = 0;
			compress_into(&body, z.b, z.n, 1);
		} else {
			/* br and other codings the broker must refuse: sent as they are. */
			if (!strcmp(ce, "gzip") || !strcmp(ce, "deflate"))
				compress_into(&z, body.b, body.n, !strcmp(ce, "gzip"));
			else
				put(&z, body.b, body.n);
			body.n = 0;
			put(&body, z.b, z.n);
		}
		rc = chunk(w, arg, body.b, body.n);
	} else {
		struct timespec ts = { atol(pause) / 1000, (atol(pause) % 1000) * 1000000L };

		rc = eof ? w(arg, body.b, body.n) : chunk(w, arg, body.b, body.n);
		if (!rc && (ts.tv_sec || ts.tv_nsec))
			nanosleep(&ts, NULL);
		rc = rc || (eof ? w(arg, "\"}\n", 3) : chunk(w, arg, "\"}\n", 3));
	}
	free(body.b);
	free(z.b);
	if (rc)
		return -1;
	if (eof)
		return !strcmp(te, "eof-abrupt") ? REFLECT_CLOSE_ABRUPT : REFLECT_CLOSE;
	return w(arg, "0\r\n\r\n", 5);
}
