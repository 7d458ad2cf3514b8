/* SPDX-License-Identifier: Apache-2.0 */
/* broker/reqcheck.h: the strict grammar of what a guest sends the broker (RFC 9112), checked
 * byte by byte before http_parser sees a byte. http_parser 2.9 as Debian builds it (not
 * HTTP_PARSER_STRICT) accepts what an upstream may read differently: a space before a header
 * name's colon, obs-fold, bare LF and CR, TAB and FF in the request target, any HTTP version,
 * junk after chunk sizes and after chunk data. Any of these lets a guest frame a request one
 * way for the broker and another for the upstream. reqcheck refuses them all, in one place,
 * for plain requests and for requests inside CONNECT tunnels alike.
 *
 * The proxy feeds every byte through reqcheck_feed() first and hands the parser only the
 * bytes it accepted; reqcheck stops at each head's end (the proxy then tells it the body's
 * framing, which it decided from the head) and at each message's end, so the two parsers
 * must agree on every boundary, and the proxy checks that they do. */
#ifndef BULKHEAD_BROKER_REQCHECK_H
#define BULKHEAD_BROKER_REQCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest line: a request line with the longest URL, or a header line as big as a head. */
#define REQCHECK_LINE_MAX  (16384 + 64)
#define REQCHECK_URL_MAX   8192
#define REQCHECK_EMPTY_MAX 4 /* empty lines tolerated before a request line (RFC 9112 2.2) */

enum reqcheck_state {
	RC_HEAD,       /* reading a request line and header lines */
	RC_HEAD_DONE,  /* the head ended; waiting for reqcheck_framing() */
	RC_LENGTH,     /* a Content-Length body */
	RC_CHUNK_SIZE, /* a chunk-size line */
	RC_CHUNK_DATA, /* chunk data */
	RC_CHUNK_CRLF, /* the CRLF after chunk data */
	RC_TRAILER,    /* trailer field lines after the last chunk */
	RC_DONE,       /* the message ended; waiting for reqcheck_next() */
	RC_NO_MORE,    /* nothing may follow (a CONNECT before its tunnel starts) */
};

struct reqcheck {
	enum reqcheck_state state;
	uint64_t left; /* body or chunk bytes still to come */
	size_t len;    /* bytes in line */
	int got_request_line;
	unsigned empty_lines;
	char why[160]; /* why the last feed failed */
	char line[REQCHECK_LINE_MAX];
};

void reqcheck_init(struct reqcheck *r);
/* Checks the next bytes. Returns how many of B[0..N) belong to the current stretch (a head,
 * up to and including its empty line; a body, up to its end), 0 when waiting for
 * reqcheck_framing() or reqcheck_next(), or -1 with why set when the bytes break the grammar. */
ssize_t reqcheck_feed(struct reqcheck *r, const char *b, size_t n);
/* The head's framing as the proxy decided it: CHUNKED, else LENGTH bytes (0: no body). */
void reqcheck_framing(struct reqcheck *r, int chunked, uint64_t length);
/* The message ended where the parser says: the next head starts. */
void reqcheck_next(struct reqcheck *r);
/* After a CONNECT: no byte may follow until the tunnel starts (reqcheck_init then). */
void reqcheck_no_more(struct reqcheck *r);

/* Single-line checks, shared with the unit tests. 1 when valid. */
int reqcheck_request_line(const char *l, size_t n, const char **why);
int reqcheck_field_line(const char *l, size_t n, const char **why);
int reqcheck_tchar(int c);

#endif
