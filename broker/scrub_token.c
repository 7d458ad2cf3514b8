/* broker/scrub_token.c: the escaping layers the scrubber sees through — which characters the
 * bytes just before a position may decode to (percent, JSON, \x, HTML, hex pairs, '+' for a
 * space) — and, once a complete match is reported, where it began. */
#include "broker/scrub_internal.h"

#include <string.h>

#define H SCRUB_C_HEX
#define E SCRUB_C_SHORT
#define X SCRUB_C_SPECIAL
const uint8_t scrub_class[256] = {
	['\t'] = X, ['\n'] = X, ['\r'] = X, [' '] = X,	   ['+'] = X,	  [';'] = X, ['"'] = E,
	['\\'] = E, ['/'] = E,	['\''] = E, ['b'] = H | E, ['f'] = H | E, ['n'] = E, ['r'] = E,
	['t'] = E,  ['0'] = H,	['1'] = H,  ['2'] = H,	   ['3'] = H,	  ['4'] = H, ['5'] = H,
	['6'] = H,  ['7'] = H,	['8'] = H,  ['9'] = H,	   ['a'] = H,	  ['c'] = H, ['d'] = H,
	['e'] = H,  ['A'] = H,	['B'] = H,  ['C'] = H,	   ['D'] = H,	  ['E'] = H, ['F'] = H,
};
#undef H
#undef E
#undef X

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* JSON (and JavaScript) two-byte escapes: the character after the backslash, decoded. */
static int short_escape(uint8_t c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
	case '\'':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return -1;
	}
}

/* An HTML character reference of LEN bytes ending at END (with its ';'), or -1. */
static int html_ref(const uint8_t *end, size_t len)
{
	static const struct {
		const char *s;
		uint8_t v;
	} named[] = { { "&amp;", '&' },
		      { "&lt;", '<' },
		      { "&gt;", '>' },
		      { "&quot;", '"' },
		      { "&apos;", '\'' } };
	const uint8_t *p = end - len;
	size_t i;
	int v = 0;

	if (p[0] != '&')
		return -1;
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (strlen(named[i].s) == len && !memcmp(p, named[i].s, len))
			return named[i].v;
	if (p[1] != '#')
		return -1;
	if ((p[2] | 0x20) == 'x') { /* &#xH; or &#xHH; */
		if (len < 5)
			return -1;
		for (i = 3; i < len - 1; i++) {
			if (hexval(p[i]) < 0)
				return -1;
			v = v * 16 + hexval(p[i]);
		}
		return v;
	}
	for (i = 2; i < len - 1; i++) { /* &#D; to &#DDD; */
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v <= 255 ? v : -1;
}

size_t scrub_tokens(const uint8_t *end, size_t avail, struct scrub_tok *t)
{
	uint8_t b = end[-1];
	size_t n = 0, len;
	int v;

	t[n++] = (struct scrub_tok){ 1, b, (uint8_t)is_ws(b), 0 };
	if (b == '+') { /* form encoding */
		t[n++] = (struct scrub_tok){ 1, ' ', 0, 0 };
		return n;
	}
	if (hexval(b) >= 0 && avail >= 2 && hexval(end[-2]) >= 0) {
		v = hexval(end[-2]) * 16 + hexval(b);
		/* A hex pair is a hex dump's character: only the raw value's patterns take it. */
		t[n++] = (struct scrub_tok){ 2, (uint8_t)v, 0, 1 };
		if (avail >= 3 && end[-3] == '%')
			t[n++] = (struct scrub_tok){ 3, (uint8_t)v, (uint8_t)is_ws((uint8_t)v), 0 };
		else if (avail >= 4 && end[-3] == 'x' && end[-4] == '\\')
			t[n++] = (struct scrub_tok){ 4, (uint8_t)v, 0, 0 };
		else if (avail >= 6 && end[-3] == '0' && end[-4] == '0' && end[-5] == 'u' &&
			 end[-6] == '\\')
			t[n++] = (struct scrub_tok){ 6, (uint8_t)v, 0, 0 };
		return n;
	}
	if (avail >= 2 && end[-2] == '\\' && (v = short_escape(b)) >= 0) {
		t[n++] = (struct scrub_tok){ 2, (uint8_t)v, (uint8_t)is_ws((uint8_t)v), 0 };
		return n;
	}
	if (b == ';')
		for (len = 4; len <= SCRUB_TOKEN_MAX && len <= avail; len++)
			if ((v = html_ref(end, len)) >= 0 && n < SCRUB_TOKENS_MAX)
				t[n++] = (struct scrub_tok){ (uint8_t)len, (uint8_t)v, 0, 0 };
	return n;
}

/* --- where a complete match began ------------------------------------------------------- */

/* Walks back from Q over every way the bytes decode, states (i, w): characters i+1..m of P
 * matched, w whitespace tokens after character i. The same language as the forward matcher
 * in scrub.c; run only when it has reported a complete match, so its cost is no signal. */
uint64_t scrub_match_start(struct scrub *s, const struct scrub_pat *p, const uint8_t *hold,
			   uint64_t base, uint64_t lo, uint64_t q)
{
	const size_t k1 = SCRUB_WS_MAX + 1, vw = ((p->m + 1) * k1 + 63) / 64;
	uint64_t best = q, x;
	size_t idle = 0;

#define VSLOT(pos)     (s->vbits + ((pos)&7) * vw)
#define VSET(pos, idx) (VSLOT(pos)[(idx) / 64] |= 1ull << ((idx) % 64))
	memset(s->vbits, 0, 8 * vw * sizeof(uint64_t));
	VSET(q, p->m * k1);
	for (x = q; x > lo && idle < SCRUB_TOKEN_MAX; x--) {
		uint64_t *cur = VSLOT(x);
		struct scrub_tok t[SCRUB_TOKENS_MAX];
		size_t nt = 0, j, k;
		int any = 0;

		for (j = 0; j < vw && !any; j++)
			any = cur[j] != 0;
		if (!any) {
			idle++;
			continue;
		}
		idle = 0;
		nt = scrub_tokens(hold + (x - base),
				  x - lo < SCRUB_TOKEN_MAX ? x - lo : SCRUB_TOKEN_MAX, t);
		for (j = 0; j < vw; j++) {
			uint64_t word = cur[j];

			while (word) {
				size_t idx = j * 64 + (size_t)__builtin_ctzll(word), i = idx / k1,
				       w = idx % k1;

				word &= word - 1;
				for (k = 0; k < nt; k++) {
					uint64_t at = x - t[k].len;

					if (t[k].raw && p->b64)
						continue;
					if (i >= 1 && (t[k].val == p->acc[i - 1][0] ||
						       t[k].val == p->acc[i - 1][1])) {
						VSET(at, (i - 1) * k1);
						if (i == 1 && at < best)
							best = at;
					}
					if (p->b64 && t[k].ws && i >= 1 && i < p->m &&
					    w < SCRUB_WS_MAX)
						VSET(at, i * k1 + w + 1);
				}
			}
		}
		memset(cur, 0, vw * sizeof(uint64_t));
	}
#undef VSET
#undef VSLOT
	return best;
}
