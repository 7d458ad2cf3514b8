/* broker/scrub.c: streaming secret replacement. Bytes that could still be the start of a
 * pattern are held back until the next read decides, so a value split across reads (or TLS
 * records, or chunks) is still found; everything else goes out at once. */
#include "broker/scrub.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "broker/rules.h"

void scrub_init(struct scrub *s)
{
	memset(s, 0, sizeof(*s));
}

int scrub_add(struct scrub *s, const uint8_t *b, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < s->n_pats; i++)
		if (s->pats[i].n == n && !memcmp(s->pats[i].b, b, n))
			return 0;
	if (s->n_pats == s->cap_pats) {
		size_t cap = s->cap_pats ? s->cap_pats * 2 : 8;
		struct scrub_pat *p = realloc(s->pats, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->pats = p;
		s->cap_pats = cap;
	}
	s->pats[s->n_pats].b = malloc(n);
	if (!s->pats[s->n_pats].b)
		return -ENOMEM;
	memcpy(s->pats[s->n_pats].b, b, n);
	s->pats[s->n_pats++].n = n;
	s->first[b[0] >> 3] |= (uint8_t)(1u << (b[0] & 7));
	if (n > s->max_len)
		s->max_len = n;
	return 0;
}

/* The encoding of VALUE preceded by OFF (0..2) unknown bytes: only the characters whose six
 * bits all come from VALUE are kept, so the fragment is found wherever VALUE sits in a larger
 * base64 text. URL selects the base64url alphabet. */
static int add_b64(struct scrub *s, const uint8_t *val, size_t n, size_t off, int url)
{
	size_t tot = off + n, first = off ? off + 1 : 0, end = tot * 8 / 6, i;
	uint8_t *plain = calloc(1, tot), *enc = malloc(4 * ((tot + 2) / 3) + 1);
	int rc = 0;

	if (!plain || !enc) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(plain + off, val, n);
	EVP_EncodeBlock(enc, plain, (int)tot);
	if (url)
		for (i = 0; i < end; i++)
			enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	if (end > first && end - first >= SCRUB_MIN_FRAGMENT)
		rc = scrub_add(s, enc + first, end - first);
out:
	if (plain)
		OPENSSL_cleanse(plain, tot);
	if (enc)
		OPENSSL_cleanse(enc, 4 * ((tot + 2) / 3) + 1);
	free(plain);
	free(enc);
	return rc;
}

int scrub_add_secret(struct scrub *s, const uint8_t *val, size_t n)
{
	char *pct;
	size_t off;
	int rc = scrub_add(s, val, n), url;

	for (url = 0; url < 2 && !rc; url++)
		for (off = 0; off < 3 && !rc; off++)
			rc = add_b64(s, val, n, off, url);
	if (rc)
		return rc;
	pct = rules_pct_encode(val, n);
	if (!pct)
		return -ENOMEM;
	rc = scrub_add(s, (const uint8_t *)pct, strlen(pct));
	OPENSSL_cleanse(pct, strlen(pct));
	free(pct);
	return rc;
}

/* At B[0..N): the length of the longest complete match, 0 for none; *partial is set when
 * a pattern runs past N with everything so far matching (more input could complete it). */
static size_t match_at(const struct scrub *s, const uint8_t *b, size_t n, int *partial)
{
	size_t i, best = 0;

	*partial = 0;
	for (i = 0; i < s->n_pats; i++) {
		const struct scrub_pat *p = &s->pats[i];

		if (p->n <= n) {
			if (p->n > best && !memcmp(p->b, b, p->n))
				best = p->n;
		} else if (!memcmp(p->b, b, n)) {
			*partial = 1;
		}
	}
	return best;
}

static int process(struct scrub *s, const uint8_t *b, size_t n, int final, scrub_out_fn out,
		   void *arg, size_t *consumed)
{
	size_t i = 0, run = 0;
	int rc;

	while (i < n) {
		size_t m = 0;
		int partial = 0;

		if (s->first[b[i] >> 3] & (1u << (b[i] & 7))) {
			m = match_at(s, b + i, n - i, &partial);
			/* Wait for more input when a longer value may still be completed. */
			if (partial && !final)
				break;
		}
		if (!m) {
			i++;
			continue;
		}
		if (i > run && (rc = out(arg, b + run, i - run)))
			return rc;
		if ((rc = out(arg, (const uint8_t *)SCRUB_REPLACEMENT,
			      sizeof(SCRUB_REPLACEMENT) - 1)))
			return rc;
		s->replaced++;
		i += m;
		run = i;
	}
	if (i > run && (rc = out(arg, b + run, i - run)))
		return rc;
	*consumed = i;
	return 0;
}

int scrub_feed(struct scrub *s, const uint8_t *in, size_t n, scrub_out_fn out, void *arg)
{
	size_t need = s->held + n, used = 0;
	int rc;

	if (!n)
		return 0;
	if (!s->n_pats)
		return out(arg, in, n);
	if (need > s->work_cap) {
		uint8_t *w = malloc(need);

		if (!w)
			return -ENOMEM;
		if (s->work) {
			memcpy(w, s->work, s->held);
			OPENSSL_cleanse(s->work, s->work_cap);
			free(s->work);
		}
		s->work = w;
		s->work_cap = need;
	}
	memcpy(s->work + s->held, in, n);
	rc = process(s, s->work, need, 0, out, arg, &used);
	if (rc)
		return rc;
	/* What is left is shorter than the longest pattern: it is a pattern's prefix. */
	memmove(s->work, s->work + used, need - used);
	s->held = need - used;
	return 0;
}

int scrub_flush(struct scrub *s, scrub_out_fn out, void *arg)
{
	size_t used = 0;
	int rc = 0;

	if (s->held)
		rc = process(s, s->work, s->held, 1, out, arg, &used);
	s->held = 0;
	return rc;
}

void scrub_reset(struct scrub *s)
{
	if (s->work)
		OPENSSL_cleanse(s->work, s->work_cap);
	s->held = 0;
	s->replaced = 0;
}

void scrub_free(struct scrub *s)
{
	size_t i;

	for (i = 0; i < s->n_pats; i++) {
		OPENSSL_cleanse(s->pats[i].b, s->pats[i].n);
		free(s->pats[i].b);
	}
	free(s->pats);
	if (s->work)
		OPENSSL_cleanse(s->work, s->work_cap);
	free(s->work);
	memset(s, 0, sizeof(*s));
}
