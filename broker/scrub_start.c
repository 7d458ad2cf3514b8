/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub_start.c: once the forward matcher reports a complete match, where it began:
 * the same language walked backwards over the held bytes. */
#include "broker/scrub_internal.h"

#include <string.h>

/* Walks back from Q over every way the bytes decode, states (i, w): characters i+1..m of P
 * matched, w whitespace tokens after character i. The same language as the forward matcher
 * in scrub.c; run only when it has reported a complete match, so its cost is no signal. */
uint64_t scrub_match_start(struct scrub *s, const struct scrub_pat *p, const uint8_t *hold,
			   uint64_t base, uint64_t lo, uint64_t q)
{
	const size_t k1 = SCRUB_WS_MAX + 1, vw = ((p->m + 1) * k1 + 63) / 64;
	uint64_t best = q, x;
	size_t idle = 0;

#define VSLOT(pos)     (s->vbits + ((pos) & (SCRUB_RING - 1)) * vw)
#define VSET(pos, idx) (VSLOT(pos)[(idx) / 64] |= 1ull << ((idx) % 64))
	memset(s->vbits, 0, SCRUB_RING * vw * sizeof(uint64_t));
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
