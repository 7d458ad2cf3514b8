/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub.c: the scrubber's stream. Every byte runs the same bit-parallel step over all
 * patterns (no early exit on a partial match), and each feed releases everything but the
 * last L-1 bytes of the message, so what the guest sees after a read, and when, depends on
 * how many bytes came, not on whether they begin a secret. Only a complete match changes the
 * output: its bytes (and those of any match overlapping it) become one replacement. */
#include "broker/scrub_internal.h"
#include "broker/secbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void scrub_init(struct scrub *s)
{
	memset(s, 0, sizeof(*s));
}

/* State at stream boundary Q (bytes before Q consumed), bit OFF+i of a pattern: its first
 * i+1 characters end exactly at Q. d0: the last token was a character; d1, d2: then one or
 * two whitespace tokens (base64 only); any = d0 | d1 | d2. Tokens are at most
 * SCRUB_TOKEN_MAX bytes, so SCRUB_RING boundaries are kept. */
#define RING(s, q, k) ((s)->ring + ((((q) & (SCRUB_RING - 1)) * 4) + (k)) * ((s)->words + 1) + 1)
#define WS(s, q)      ((s)->ring_ws[(q) & (SCRUB_RING - 1)])

static void ring_clear(struct scrub *s)
{
	memset(s->ring, 0, 4 * SCRUB_RING * (s->words + 1) * sizeof(uint64_t));
	memset(s->ring_ws, 0, sizeof(s->ring_ws));
}

static int add_range(struct scrub *s, uint64_t start, uint64_t end)
{
	/* Overlapping matches merge: none of their bytes goes out. */
	while (s->n_ranges && s->ranges[s->n_ranges - 1].e > start) {
		if (s->ranges[s->n_ranges - 1].s < start)
			start = s->ranges[s->n_ranges - 1].s;
		s->n_ranges--;
	}
	if (s->n_ranges == s->cap_ranges) {
		size_t cap = s->cap_ranges ? s->cap_ranges * 2 : 8;
		struct scrub_range *r = realloc(s->ranges, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		s->ranges = r;
		s->cap_ranges = cap;
	}
	s->ranges[s->n_ranges++] = (struct scrub_range){ start, end };
	return 0;
}

/* A pattern's last bit is set at Q: find each complete match's start, record the span. */
static int on_match(struct scrub *s, const uint64_t *d0, uint64_t q)
{
	uint64_t lo = q > s->lag ? q - s->lag : 0, start = q;
	size_t i;

	if (lo < s->base)
		lo = s->base;
	for (i = 0; i < s->n_pats; i++) {
		const struct scrub_pat *p = &s->pats[i];
		size_t bit = p->off + p->m - 1;

		if (d0[bit / 64] & (1ull << (bit % 64))) {
			uint64_t at = scrub_match_start(s, p, s->hold, s->base, lo, q);

			if (at < start)
				start = at;
		}
	}
	return start < q ? add_range(s, start, q) : 0;
}

/* The only token at Q is the raw byte, not whitespace (most bytes of most bodies): the
 * general step below, written for that case. */
static inline int step_plain(struct scrub *s, uint64_t q, uint8_t b)
{
	const size_t w = s->words;
	const int src_ws = WS(s, q - 1);
	const uint64_t *src = RING(s, q - 1, src_ws ? 3 : 0), *m = s->mask + (size_t)b * w;
	const uint64_t *st = s->starts, *fi = s->finals;
	const uint64_t *below = src - 1; /* the word below; below[0] is the zero word */
	uint64_t *d0 = RING(s, q, 0), fin = 0;
	size_t j;

	/* No carried variable: the word below is read again. */
	for (j = 0; j < w; j++) {
		uint64_t x = ((src[j] << 1) | (below[j] >> 63) | st[j]) & m[j];

		d0[j] = x;
		fin |= x & fi[j];
	}
	WS(s, q) = 0;
	return fin ? on_match(s, d0, q) : 0;
}

/* The raw byte and a hex pair (two hex digits in a row, not escaped otherwise): the other
 * common case, in hex text and in about one position in ten of base64 or random text. */
static inline int step_pair(struct scrub *s, uint64_t q, uint8_t b, uint8_t v)
{
	const size_t w = s->words;
	const int ws1 = WS(s, q - 1), ws2 = WS(s, q - 2);
	const uint64_t *s1 = RING(s, q - 1, ws1 ? 3 : 0), *s2 = RING(s, q - 2, ws2 ? 3 : 0);
	const uint64_t *m1 = s->mask + (size_t)b * w, *m2 = s->mask + (size_t)v * w;
	const uint64_t *st = s->starts, *fi = s->finals, *rb = s->rawbits;
	const uint64_t *b1 = s1 - 1, *b2 = s2 - 1;
	uint64_t *d0 = RING(s, q, 0), fin = 0;
	size_t j;

	for (j = 0; j < w; j++) {
		uint64_t x = (((s1[j] << 1) | (b1[j] >> 63) | st[j]) & m1[j]) |
			     (((s2[j] << 1) | (b2[j] >> 63) | st[j]) & m2[j] & rb[j]);

		d0[j] = x;
		fin |= x & fi[j];
	}
	WS(s, q) = 0;
	return fin ? on_match(s, d0, q) : 0;
}

/* One byte more: boundary Q = s->total. The same work for every byte of the same tokens. */
static int step(struct scrub *s, uint64_t q)
{
	const size_t w = s->words;
	uint64_t *d0 = RING(s, q, 0), *d1 = RING(s, q, 1), *d2 = RING(s, q, 2),
		 *any = RING(s, q, 3);
	struct scrub_tok t[SCRUB_TOKENS_MAX];
	size_t avail = q - s->base, nt, k, j;
	uint64_t fin = 0;
	int ws = 0;

	nt = scrub_tokens(s->hold + avail, avail < SCRUB_TOKEN_MAX ? avail : SCRUB_TOKEN_MAX, t);
	if (nt == 1 && !t[0].ws)
		return step_plain(s, q, t[0].val);
	if (nt == 2 && t[1].raw)
		return step_pair(s, q, t[0].val, t[1].val);
	for (k = 0; k < nt; k++) {
		uint64_t src_q = q - t[k].len;
		int src_ws = WS(s, src_q);
		const uint64_t *src = RING(s, src_q, src_ws ? 3 : 0), *below = src - 1;
		const uint64_t *m = s->mask + (size_t)t[k].val * w;

		for (j = 0; j < w; j++) {
			uint64_t x = ((src[j] << 1) | (below[j] >> 63) | s->starts[j]) & m[j];

			if (t[k].raw)
				x &= s->rawbits[j];
			d0[j] = k ? d0[j] | x : x;
			fin |= x & s->finals[j];
		}
		if (!t[k].ws)
			continue;
		if (!ws) {
			memset(d1, 0, 2 * w * sizeof(uint64_t));
			ws = 1;
		}
		for (j = 0; j < w; j++) {
			d1[j] |= RING(s, src_q, 0)[j] & s->sep[j];
			if (src_ws)
				d2[j] |= RING(s, src_q, 1)[j] & s->sep[j];
		}
	}
	for (j = 0; ws && j < w; j++)
		any[j] = d0[j] | d1[j] | d2[j];
	WS(s, q) = (uint8_t)ws;
	return fin ? on_match(s, d0, q) : 0;
}

/* Sends positions [base, upto) out, matches replaced; a match that runs past UPTO waits
 * whole. Then forgets what went out. */
static int release(struct scrub *s, uint64_t upto, scrub_out_fn out, void *arg)
{
	uint64_t pos = s->base;
	size_t done = 0, keep;
	int rc = 0;

	if (s->total == s->base) /* nothing held (maybe nothing fed yet) */
		return 0;

	while (done < s->n_ranges && s->ranges[done].s < upto) {
		const struct scrub_range *r = &s->ranges[done];

		if (r->s > pos && (rc = out(arg, s->hold + (pos - s->base), r->s - pos)))
			return rc;
		pos = r->s;
		if (r->e > upto)
			break;
		if ((rc = out(arg, (const uint8_t *)SCRUB_REPLACEMENT,
			      sizeof(SCRUB_REPLACEMENT) - 1)))
			return rc;
		s->replaced++;
		pos = r->e;
		done++;
	}
	if ((done == s->n_ranges || s->ranges[done].s >= upto) && upto > pos) {
		if ((rc = out(arg, s->hold + (pos - s->base), upto - pos)))
			return rc;
		pos = upto;
	}
	if (done) {
		memmove(s->ranges, s->ranges + done, (s->n_ranges - done) * sizeof(*s->ranges));
		s->n_ranges -= done;
	}
	keep = s->total - pos;
	memmove(s->hold, s->hold + (pos - s->base), keep);
	OPENSSL_cleanse(s->hold + keep, s->total - s->base - keep);
	s->base = pos;
	return 0;
}

/* Whether the tokens ending at END are exactly the raw byte and a hex pair: inside a run of
 * hex digits that no escape's prefix ('\\', '#', 'x', 'u', '%') begins, or longer than any
 * escape's digits. s->hexrun counts the run's digits, its top bit set when the run began
 * the message (nothing before it). */
static int only_pair(const struct scrub *s, const uint8_t *end)
{
	size_t n = s->hexrun & 0x7f;

	if (n < 2)
		return 0;
	return n > 9 || (s->hexrun & 0x80) || !(scrub_class[end[-1 - (long)n]] & SCRUB_C_RUNPRE);
}

static uint8_t hex_pair(const uint8_t *end)
{
	uint8_t h = end[-2], l = end[-1];

	h = h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10;
	l = l <= '9' ? l - '0' : (l | 0x20) - 'a' + 10;
	return (uint8_t)(h << 4 | l);
}

/* Runs the matcher over the N bytes held after s->total, which it then counts as fed. */
static int scan(struct scrub *s, size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		uint64_t q = ++s->total;
		const uint8_t *end = s->hold + (q - s->base);

		/* Bytes that can only be themselves, or a hex pair, skip the escape decoder (a
		 * choice made on the bytes alone, which the guest may know; never on the
		 * matcher's state). */
		if (scrub_class[end[-1]] & SCRUB_C_HEX)
			s->hexrun = !s->hexrun			? (q - s->base >= 2 ? 1 : 0x81)
				    : (s->hexrun & 0x7f) < 0x7f ? s->hexrun + 1
								: s->hexrun;
		else
			s->hexrun = 0;
		if (scrub_only_raw(end, q - s->base))
			rc = step_plain(s, q, end[-1]);
		else if (only_pair(s, end))
			rc = step_pair(s, q, end[-1], hex_pair(end));
		else
			rc = step(s, q);
		if (rc)
			return rc;
	}
	return 0;
}

int scrub_feed(struct scrub *s, const uint8_t *in, size_t n, scrub_out_fn out, void *arg)
{
	size_t held = s->total - s->base;
	int rc;

	if (!n)
		return 0;
	if (!s->n_pats)
		return out(arg, in, n);
	if (held + n > s->hold_cap) {
		uint8_t *h = secbuf_regrow(s->hold, s->hold_cap, held, held + n);

		if (!h)
			return -ENOMEM;
		s->hold = h;
		s->hold_cap = held + n;
	}
	memcpy(s->hold + held, in, n);
	if ((rc = scan(s, n)))
		return rc;
	return release(s, s->total >= s->lag - 1 ? s->total - (s->lag - 1) : 0, out, arg);
}

/* After the patterns changed (scrub_compile cleared the state): the bytes held are matched
 * again from the first. A match in progress never began before them (the lag is at least any
 * match's span), so nothing that could still be replaced is missed. */
int scrub_rescan(struct scrub *s)
{
	size_t held = s->total - s->base;

	s->total = s->base;
	s->n_ranges = 0;
	s->hexrun = 0;
	return scan(s, held);
}

static void stream_reset(struct scrub *s)
{
	if (s->hold)
		OPENSSL_cleanse(s->hold, s->hold_cap);
	s->base = s->total = 0;
	s->n_ranges = 0;
	s->hexrun = 0;
	if (s->ring)
		ring_clear(s);
}

int scrub_flush(struct scrub *s, scrub_out_fn out, void *arg)
{
	int rc = s->n_pats ? release(s, s->total, out, arg) : 0;

	/* Nothing matches across a flush: a header field's value is its own text. */
	stream_reset(s);
	return rc;
}

void scrub_reset(struct scrub *s)
{
	stream_reset(s);
	s->replaced = 0;
}

void scrub_free(struct scrub *s)
{
	size_t i;

	for (i = 0; i < s->n_pats; i++) {
		OPENSSL_cleanse(s->pats[i].acc, s->pats[i].m * sizeof(*s->pats[i].acc));
		free(s->pats[i].acc);
	}
	free(s->pats);
	if (s->mask)
		OPENSSL_cleanse(s->mask, SCRUB_TABLE_WORDS(s->words, s->vwords) * sizeof(uint64_t));
	free(s->mask);
	if (s->hold)
		OPENSSL_cleanse(s->hold, s->hold_cap);
	free(s->hold);
	free(s->ranges);
	memset(s, 0, sizeof(*s));
}
