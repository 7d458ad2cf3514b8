/* SPDX-License-Identifier: Apache-2.0 */
/* broker/secbuf.c: growing buffers that wipe what they leave behind (see secbuf.h). */
#include "broker/secbuf.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void *secbuf_regrow(void *old, size_t old_cap, size_t keep, size_t new_cap)
{
	void *b = malloc(new_cap);

	if (!b)
		return NULL;
	if (old) {
		memcpy(b, old, keep);
		OPENSSL_cleanse(old, old_cap);
		free(old);
	}
	return b;
}

void secbuf_add(struct secbuf *s, const void *p, size_t n)
{
	if (s->oom)
		return;
	if (s->n + n + 1 > s->cap) {
		size_t cap = (s->n + n + 1) * 2;
		char *b = secbuf_regrow(s->b, s->cap, s->n, cap);

		if (!b) {
			s->oom = 1;
			return;
		}
		s->b = b;
		s->cap = cap;
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
	s->b[s->n] = 0;
}

void secbuf_str(struct secbuf *s, const char *str)
{
	secbuf_add(s, str, strlen(str));
}

void secbuf_wipe(struct secbuf *s)
{
	if (s->b)
		OPENSSL_cleanse(s->b, s->cap);
	free(s->b);
	memset(s, 0, sizeof(*s));
}
