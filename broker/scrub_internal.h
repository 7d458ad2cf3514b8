/* broker/scrub_internal.h: the scrubber's pieces, shared by its files — scrub.c runs the
 * stream and the fixed lag, scrub_pattern.c turns secrets into compiled patterns,
 * scrub_token.c decodes escapes and finds where a complete match began. */
#ifndef BULKHEAD_BROKER_SCRUB_INTERNAL_H
#define BULKHEAD_BROKER_SCRUB_INTERNAL_H

#include "broker/scrub.h"

/* Longest escape (\u00HH, &#255;, &quot;) and longest whitespace escape (%0A). */
#define SCRUB_TOKEN_MAX	   6
#define SCRUB_WS_TOKEN_MAX 3

/* One way the bytes just before a position decode to one character. */
struct scrub_tok {
	uint8_t len; /* bytes */
	uint8_t val; /* the character */
	uint8_t ws;  /* may separate base64 characters */
	uint8_t raw; /* a hex pair: only for the raw value's patterns */
};

/* Every token that ends at END, using at most AVAIL bytes before it (AVAIL >= 1). Writes at
 * most SCRUB_TOKENS_MAX tokens; the first is always the raw byte. */
#define SCRUB_TOKENS_MAX 4
size_t scrub_tokens(const uint8_t *end, size_t avail, struct scrub_tok *t);

/* Byte classes for the decoder's fast test. */
enum { SCRUB_C_HEX = 1, SCRUB_C_SHORT = 2, SCRUB_C_SPECIAL = 4 /* '+', ';', whitespace */ };
extern const uint8_t scrub_class[256];

/* Whether the only token ending at END is its raw byte, not whitespace: what scrub_tokens
 * would say, cheaply. */
static inline int scrub_only_raw(const uint8_t *end, size_t avail)
{
	uint8_t c = scrub_class[end[-1]], p = avail >= 2 ? end[-2] : 0;

	return !(c & SCRUB_C_SPECIAL) && !((c & SCRUB_C_HEX) && (scrub_class[p] & SCRUB_C_HEX)) &&
	       !((c & SCRUB_C_SHORT) && p == '\\');
}

/* Whether the tokens ending at END are exactly the raw byte and a hex pair (nothing before
 * the pair could make it an escape). */
static inline int scrub_only_pair(const uint8_t *end, size_t avail)
{
	return avail >= 3 && (scrub_class[end[-1]] & scrub_class[end[-2]] & SCRUB_C_HEX) &&
	       end[-3] != '%' && end[-3] != 'x' && end[-3] != '0' && end[-2] != '\\';
}

static inline uint8_t scrub_hex_pair(const uint8_t *end)
{
	uint8_t h = end[-2], l = end[-1];

	h = h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10;
	l = l <= '9' ? l - '0' : (l | 0x20) - 'a' + 10;
	return (uint8_t)(h << 4 | l);
}

/* Where the earliest complete match of P that ends at stream position Q begins; bytes before
 * LO are not looked at. HOLD holds positions from BASE. Returns Q when none does (cannot
 * happen when the forward matcher reported one). */
uint64_t scrub_match_start(struct scrub *s, const struct scrub_pat *p, const uint8_t *hold,
			   uint64_t base, uint64_t lo, uint64_t q);

/* The compiled tables, one block: masks [256][w], starts, finals, sep, rawbits, the ring
 * (8 boundaries x 4 vectors, each after one zero word so that a vector's word -1 reads 0),
 * and the start finder's scratch (8 x vw). */
#define SCRUB_TABLE_WORDS(w, vw) ((256 + 4) * (w) + 32 * ((w) + 1) + 8 * (vw))

/* Rebuilds the tables from s->pats and sets the lag. */
int scrub_compile(struct scrub *s);

#endif
