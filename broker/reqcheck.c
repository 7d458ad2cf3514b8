/* SPDX-License-Identifier: Apache-2.0 */
/* broker/reqcheck.c: RFC 9112's request grammar, strictly (see reqcheck.h). Lines are
 * collected whole (bounded) and judged whole; bodies are only counted. */
#include "broker/reqcheck.h"
#include "lib/hex.h"

#include <stdio.h>
#include <string.h>

int reqcheck_tchar(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Visible ASCII but '#' (a fragment is never sent) and '\\' (read as '/' by some servers, and
 * no client sends it), and '%' only before two hex digits: a malformed escape is where two
 * decoders disagree. The rest of what RFC 3986 leaves out ({ } | ^ ` " < >) is let through:
 * WHATWG URL clients (browsers, Node) send some of it unescaped, and none of it can end a
 * line, a field or a path segment. */
static int target_ok(const char *t, size_t n, const char **why)
{
	size_t i;

	if (!n || n > REQCHECK_URL_MAX) {
		*why = n ? "request URL longer than 8192 bytes" : "empty request target";
		return 0;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c <= ' ' || c >= 0x7f) {
			*why = "control character, space or non-ASCII byte in the request target";
			return 0;
		}
		if (c == '#' || c == '\\') {
			*why = c == '#' ? "a fragment (#) in the request target"
					: "a backslash in the request target";
			return 0;
		}
		if (c == '%') {
			if (i + 2 >= n || hex_digit(t[i + 1]) < 0 || hex_digit(t[i + 2]) < 0) {
				*why = "'%' not followed by two hex digits in the request target";
				return 0;
			}
			i += 2;
		}
	}
	return 1;
}

int reqcheck_request_line(const char *l, size_t n, const char **why)
{
	const char *sp1 = memchr(l, ' ', n), *sp2;
	size_t i, ml;

	if (!sp1) {
		*why = "malformed request line";
		return 0;
	}
	ml = (size_t)(sp1 - l);
	for (i = 0; i < ml; i++)
		if (!reqcheck_tchar((unsigned char)l[i]))
			break;
	if (!ml || i < ml || ml > 15) {
		*why = "malformed request line: bad method";
		return 0;
	}
	sp2 = memchr(sp1 + 1, ' ', n - ml - 1);
	if (!sp2 || l + n - sp2 != 9) {
		*why = "malformed request line: want METHOD SP TARGET SP HTTP/1.1";
		return 0;
	}
	if (!target_ok(sp1 + 1, (size_t)(sp2 - sp1 - 1), why))
		return 0;
	if (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)) {
		*why = "malformed request line: only HTTP/1.1 and HTTP/1.0 are accepted";
		return 0;
	}
	return 1;
}

int reqcheck_field_line(const char *l, size_t n, const char **why)
{
	size_t i;

	if (n && (l[0] == ' ' || l[0] == '\t')) {
		*why = "a header line starting with whitespace (obs-fold line folding)";
		return 0;
	}
	for (i = 0; i < n && l[i] != ':'; i++)
		if (!reqcheck_tchar((unsigned char)l[i])) {
			*why = l[i] == ' ' || l[i] == '\t'
				       ? "whitespace in a header name or before its colon"
				       : "a character outside RFC 9110's token in a header name";
			return 0;
		}
	if (!i || i == n) {
		*why = "a header line without a name or a colon";
		return 0;
	}
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)l[i];

		if ((c < ' ' && c != '\t') || c == 0x7f) {
			*why = "a control character in a header value";
			return 0;
		}
	}
	return 1;
}

void reqcheck_init(struct reqcheck *r)
{
	r->state = RC_HEAD;
	r->left = 0;
	r->len = 0;
	r->got_request_line = 0;
	r->empty_lines = 0;
	r->why[0] = '\0';
}

void reqcheck_next(struct reqcheck *r)
{
	reqcheck_init(r);
}

void reqcheck_no_more(struct reqcheck *r)
{
	r->state = RC_NO_MORE;
}

void reqcheck_framing(struct reqcheck *r, int chunked, uint64_t length)
{
	r->len = 0;
	r->left = length;
	r->state = chunked ? RC_CHUNK_SIZE : length ? RC_LENGTH : RC_DONE;
}

static int refuse(struct reqcheck *r, const char *why)
{
	snprintf(r->why, sizeof(r->why), "%s", why);
	return -1;
}

/* A chunk-size line: hex digits only. Extensions are refused: no client we serve sends them,
 * and an upstream's reading of them is one more place to disagree. */
static int chunk_size(struct reqcheck *r, const char *l, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (!n || n > 15)
		return refuse(r,
			      n ? "chunk size longer than 15 hex digits" : "empty chunk-size line");
	for (i = 0; i < n; i++) {
		int h = hex_digit(l[i]);

		if (h < 0)
			return refuse(r, "a chunk size must be hex digits only (no extensions)");
		v = v << 4 | (uint64_t)h;
	}
	r->left = v;
	r->state = v ? RC_CHUNK_DATA : RC_TRAILER;
	return 0;
}

/* One complete line (without its CRLF). 1 when it ends the stretch, 0 to go on, -1 bad. */
static int line_done(struct reqcheck *r, const char *l, size_t n)
{
	const char *why = NULL;

	switch (r->state) {
	case RC_HEAD:
		if (!r->got_request_line) {
			if (!n)
				return ++r->empty_lines > REQCHECK_EMPTY_MAX
					       ? refuse(r, "too many empty lines before the "
							   "request line")
					       : 0;
			if (!reqcheck_request_line(l, n, &why))
				return refuse(r, why);
			r->got_request_line = 1;
			return 0;
		}
		if (!n) {
			r->state = RC_HEAD_DONE;
			return 1;
		}
		return reqcheck_field_line(l, n, &why) ? 0 : refuse(r, why);
	case RC_CHUNK_SIZE:
		return chunk_size(r, l, n);
	default: /* RC_TRAILER */
		if (!n) {
			r->state = RC_DONE;
			return 1;
		}
		return reqcheck_field_line(l, n, &why) ? 0 : refuse(r, why);
	}
}

/* Collects line bytes from B; lines end in CRLF, and a CR anywhere else is refused. */
static ssize_t lines(struct reqcheck *r, const char *b, size_t n)
{
	size_t i;

	for (i = 0;
	     i < n && (r->state == RC_HEAD || r->state == RC_CHUNK_SIZE || r->state == RC_TRAILER);
	     i++) {
		char c = b[i];
		int end;

		if (r->len && r->line[r->len - 1] == '\r' && c != '\n')
			return refuse(r, "a CR not followed by LF");
		if (c != '\n') {
			if (r->len == sizeof(r->line))
				return refuse(r, "a request line or header line longer than the "
						 "largest head");
			r->line[r->len++] = c;
			continue;
		}
		if (!r->len || r->line[r->len - 1] != '\r')
			return refuse(r, "a bare LF: lines end in CRLF");
		end = line_done(r, r->line, r->len - 1);
		r->len = 0;
		if (end < 0)
			return -1;
		if (end)
			return (ssize_t)i + 1;
	}
	return (ssize_t)i;
}

ssize_t reqcheck_feed(struct reqcheck *r, const char *b, size_t n)
{
	size_t off = 0;

	while (off < n) {
		size_t take;
		ssize_t k;

		switch (r->state) {
		case RC_HEAD_DONE:
		case RC_DONE:
			return (ssize_t)off;
		case RC_NO_MORE:
			return refuse(r, "bytes sent before the CONNECT was answered");
		case RC_LENGTH:
		case RC_CHUNK_DATA:
			take = n - off < r->left ? n - off : (size_t)r->left;
			r->left -= take;
			off += take;
			if (!r->left)
				r->state = r->state == RC_LENGTH ? RC_DONE : RC_CHUNK_CRLF;
			if (r->state == RC_DONE)
				return (ssize_t)off;
			break;
		case RC_CHUNK_CRLF:
			if (b[off] != (r->len ? '\n' : '\r'))
				return refuse(r, "chunk data not followed by CRLF");
			off++;
			if (r->len++) {
				r->len = 0;
				r->state = RC_CHUNK_SIZE;
			}
			break;
		default:
			k = lines(r, b + off, n - off);
			if (k < 0)
				return -1;
			off += (size_t)k;
			if (r->state == RC_HEAD_DONE || r->state == RC_DONE)
				return (ssize_t)off;
		}
	}
	return (ssize_t)off;
}
