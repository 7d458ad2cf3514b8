/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub_internal.h: the scrubber's pieces, shared by its files — scrub.c runs the
 * stream and the fixed lag, scrub_pattern.c turns secrets into compiled patterns,
 * scrub_token.c decodes escapes, scrub_start.c finds where a complete match began. */
#ifndef BULKHEAD_BROKER_SCRUB_INTERNAL_H
#define BULKHEAD_BROKER_SCRUB_INTERNAL_H

#include "broker/scrub.h"

/* Longest escape: Python's \N{LATIN CAPITAL LETTER A} (26 bytes; the padded numeric forms,
 * &#x0000005F;, \x{000000005f}, \o{00000000137}, \N{U+000000005F}, \uuuuuuuu005f, are at
 * most 16), and longest whitespace escape (%0A). */
#define SCRUB_TOKEN_MAX	   26
#define SCRUB_WS_TOKEN_MAX 3
/* The matcher keeps its state at this many stream boundaries (a power of two above
 * SCRUB_TOKEN_MAX: a token of that length reads the state from where it began). */
#define SCRUB_RING 32

/* One way the bytes just before a position decode to one character. */
struct scrub_tok {
	uint8_t len; /* bytes */
	uint8_t val; /* the character */
	uint8_t ws;  /* may separate base64 characters */
	uint8_t raw; /* a hex pair: only for the raw value's patterns */
};

/* Every token that ends at END, using at most AVAIL bytes before it (AVAIL >= 1). Writes at
 * most SCRUB_TOKENS_MAX tokens; the first is always the raw byte. At one position there are
 * at most six (the raw byte, a hex pair, and the readings of one escape: "\012" is also
 * octal, shell \0NNN and CSS), so none is ever dropped. */
#define SCRUB_TOKENS_MAX 8
size_t scrub_tokens(const uint8_t *end, size_t avail, struct scrub_tok *t);

/* Byte classes for the decoder's fast tests: a hex digit; a byte that may end an escape by
 * itself ('+', ';', '}', white space); a byte before a hex digit that may make it an escape
 * ('#', 'x', 'X', a backslash); the last letter of a legacy reference (&amp &lt &gt &quot);
 * a byte before a run of hex digits that may make them an escape (those, 'u', 'U', '%'). */
enum {
	SCRUB_C_HEX = 1,
	SCRUB_C_SPECIAL = 2,
	SCRUB_C_NUMPRE = 4,
	SCRUB_C_LEGACY = 8,
	SCRUB_C_RUNPRE = 16
};
extern const uint8_t scrub_class[256];

/* Whether the only token ending at END is its raw byte, not whitespace: what scrub_tokens
 * would say, cheaply (most bytes of most bodies). */
static inline int scrub_only_raw(const uint8_t *end, size_t avail)
{
	uint8_t b = end[-1], c = scrub_class[b], p = avail >= 2 ? end[-2] : 0;
	size_t i;

	if ((c & SCRUB_C_SPECIAL) || p == '\\' ||
	    ((c & SCRUB_C_HEX) && (scrub_class[p] & (SCRUB_C_HEX | SCRUB_C_NUMPRE))))
		return 0;
	for (i = 3; (c & SCRUB_C_LEGACY) && i <= 5 && i <= avail; i++)
		if (end[-(long)i] == '&')
			return 0;
	return 1;
}

/* Where the earliest complete match of P that ends at stream position Q begins; bytes before
 * LO are not looked at. HOLD holds positions from BASE. Returns Q when none does (cannot
 * happen when the forward matcher reported one). */
uint64_t scrub_match_start(struct scrub *s, const struct scrub_pat *p, const uint8_t *hold,
			   uint64_t base, uint64_t lo, uint64_t q);

/* The compiled tables, one block: masks [256][w], starts, finals, sep, rawbits, the ring
 * (SCRUB_RING boundaries x 4 vectors, each after one zero word so that a vector's word -1
 * reads 0), and the start finder's scratch (SCRUB_RING x vw). */
#define SCRUB_TABLE_WORDS(w, vw) ((256 + 4) * (w) + 4 * SCRUB_RING * ((w) + 1) + SCRUB_RING * (vw))

/* Rebuilds the tables from s->pats and sets the lag. */
int scrub_compile(struct scrub *s);
int scrub_rescan(struct scrub *s);

#endif
