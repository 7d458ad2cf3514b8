/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub_pattern.c: a secret becomes patterns (the value; its base64 at the three
 * alignments, standard and URL alphabets in one), compiled into one bit-parallel matcher
 * whose state is a fixed number of words; the lag follows from the longest encoded form. */
#include "broker/scrub_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* Adds a pattern unless the scrubber has it already: 1 added, 0 known, or a negative errno. */
static int add_pat(struct scrub *s, const uint8_t (*acc)[2], size_t m, int b64)
{
	struct scrub_pat *p;
	size_t i;

	for (i = 0; i < s->n_pats; i++)
		if (s->pats[i].m == m && s->pats[i].b64 == b64 &&
		    !memcmp(s->pats[i].acc, acc, m * sizeof(*acc)))
			return 0;
	p = realloc(s->pats, (s->n_pats + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pats = p;
	p = &s->pats[s->n_pats];
	p->acc = malloc(m * sizeof(*acc));
	if (!p->acc)
		return -ENOMEM;
	memcpy(p->acc, acc, m * sizeof(*acc));
	p->m = m;
	p->b64 = b64;
	s->n_pats++;
	return 1;
}

/* The encoding of VALUE preceded by OFF (0..2) unknown bytes: only the characters whose six
 * bits all come from VALUE are kept, so the fragment is found wherever VALUE sits in a larger
 * base64 text. Each character is accepted in both alphabets. */
static int add_b64(struct scrub *s, const uint8_t *val, size_t n, size_t off)
{
	size_t tot = off + n, first = off ? off + 1 : 0, end = tot * 8 / 6, i,
	       elen = 4 * ((tot + 2) / 3) + 1;
	uint8_t *plain = calloc(1, tot), *enc = malloc(elen), (*acc)[2] = NULL;
	int rc = 0;

	if (!plain || !enc) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(plain + off, val, n);
	EVP_EncodeBlock(enc, plain, (int)tot);
	if (end <= first || end - first < SCRUB_MIN_FRAGMENT)
		goto out;
	acc = malloc((end - first) * sizeof(*acc));
	if (!acc) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = first; i < end; i++) {
		acc[i - first][0] = enc[i];
		acc[i - first][1] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	}
	rc = add_pat(s, (const uint8_t(*)[2])acc, end - first, 1);
	OPENSSL_cleanse(acc, (end - first) * sizeof(*acc));
out:
	if (plain)
		OPENSSL_cleanse(plain, tot);
	if (enc)
		OPENSSL_cleanse(enc, elen);
	free(plain);
	free(enc);
	free(acc);
	return rc;
}

int scrub_add_secret(struct scrub *s, const uint8_t *val, size_t n)
{
	uint8_t(*acc)[2];
	size_t i, off;
	int rc, added;

	if (!n)
		return 0;
	if (memchr(val, '\r', n) || memchr(val, '\n', n))
		s->line_end = 1;
	acc = malloc(n * sizeof(*acc));
	if (!acc)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		acc[i][0] = acc[i][1] = val[i];
	rc = add_pat(s, (const uint8_t(*)[2])acc, n, 0);
	OPENSSL_cleanse(acc, n * sizeof(*acc));
	free(acc);
	added = rc > 0;
	for (off = 0; off < 3 && rc >= 0; off++)
		added |= (rc = add_b64(s, val, n, off)) > 0;
	if (rc < 0)
		return rc;
	/* A message in progress (a value that changed while a stream was open) is matched again
	 * from what is held: no held byte goes out unmatched against the new patterns. */
	if (!added)
		return 0;
	rc = scrub_compile(s);
	return rc ? rc : scrub_rescan(s);
}

size_t scrub_lag(const struct scrub *s)
{
	return s->lag;
}

int scrub_frames_ok(const struct scrub *s)
{
	return !s->line_end;
}

static void set_bit(uint64_t *v, size_t bit)
{
	v[bit / 64] |= 1ull << (bit % 64);
}

/* The longest span a complete match of P can cover: every character as the longest escape,
 * and between base64 characters the most whitespace tokens, each the longest. */
static size_t max_span(const struct scrub_pat *p)
{
	return p->m * SCRUB_TOKEN_MAX +
	       (p->b64 ? (p->m - 1) * SCRUB_WS_MAX * SCRUB_WS_TOKEN_MAX : 0);
}

int scrub_compile(struct scrub *s)
{
	size_t bits = 0, i, j, k, span = 0, vw = 0, w;
	uint64_t *v;

	for (i = 0; i < s->n_pats; i++) {
		s->pats[i].off = bits;
		bits += s->pats[i].m;
		if (max_span(&s->pats[i]) > span)
			span = max_span(&s->pats[i]);
		w = ((s->pats[i].m + 1) * (SCRUB_WS_MAX + 1) + 63) / 64;
		if (w > vw)
			vw = w;
	}
	w = (bits + 63) / 64;
	v = calloc(SCRUB_TABLE_WORDS(w, vw), sizeof(uint64_t));
	if (!v)
		return -ENOMEM;
	if (s->mask) {
		OPENSSL_cleanse(s->mask, SCRUB_TABLE_WORDS(s->words, s->vwords) * sizeof(uint64_t));
		free(s->mask);
	}
	s->mask = v;
	s->starts = v + 256 * w;
	s->finals = s->starts + w;
	s->sep = s->finals + w;
	s->rawbits = s->sep + w;
	s->ring = s->rawbits + w;
	s->vbits = s->ring + 4 * SCRUB_RING * (w + 1);
	s->words = w;
	s->vwords = vw;
	for (i = 0; i < s->n_pats; i++) {
		const struct scrub_pat *p = &s->pats[i];

		set_bit(s->starts, p->off);
		set_bit(s->finals, p->off + p->m - 1);
		for (j = 0; j < p->m; j++) {
			for (k = 0; k < 2; k++)
				set_bit(s->mask + p->acc[j][k] * w, p->off + j);
			if (p->b64 && j + 1 < p->m)
				set_bit(s->sep, p->off + j);
			if (!p->b64)
				set_bit(s->rawbits, p->off + j);
		}
	}
	for (s->lag = SCRUB_LAG_MIN; s->lag < span; s->lag *= 2)
		;
	memset(s->ring_ws, 0, sizeof(s->ring_ws));
	return 0;
}
