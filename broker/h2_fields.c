/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_fields.c: buffers and fields for both HTTP/2 sides (h2_fields.h). */
#include "broker/h2_fields.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int h2_buf_add(struct h2_buf *b, const void *p, size_t n)
{
	if (!n)
		return 0;
	if (b->off && b->len + n > b->cap) { /* take back what was taken from the front */
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + n > b->max)
		return -1;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *q;

		while (cap < b->len + n)
			cap *= 2;
		if (cap > b->max)
			cap = b->max;
		q = realloc(b->p, cap);
		if (!q)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int h2_buf_str(struct h2_buf *b, const char *s)
{
	return h2_buf_add(b, s, strlen(s));
}

size_t h2_buf_take(struct h2_buf *b, void *out, size_t n)
{
	size_t k = h2_buf_left(b) < n ? h2_buf_left(b) : n;

	if (k)
		memcpy(out, b->p + b->off, k);
	b->off += k;
	if (b->off == b->len)
		b->off = b->len = 0;
	return k;
}

ssize_t h2_buf_provide(struct h2_buf *b, int done, int *deferred, uint8_t *out, size_t len,
		       uint32_t *flags)
{
	size_t n = h2_buf_take(b, out, len);

	if (!n && !done) {
		*deferred = 1;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (done && !h2_buf_left(b))
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

void h2_buf_free(struct h2_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->off = b->cap = 0;
}

int h2_fields_part(struct h2_fields *h, const char *at, size_t len, int value)
{
	if (h->used + len > sizeof(h->a) || (value && !h->n))
		return -1;
	if (value != h->in_value || !h->n) {
		if (!value) {
			if (h->n == H2_FIELDS_MAX)
				return -1;
			h->f[h->n].name_off = h->used;
			h->f[h->n].name_len = 0;
			h->f[h->n].val_off = h->used;
			h->f[h->n].val_len = 0;
			h->n++;
		} else {
			h->f[h->n - 1].val_off = h->used;
		}
		h->in_value = value;
	}
	memcpy(h->a + h->used, at, len);
	h->used += len;
	if (value)
		h->f[h->n - 1].val_len += len;
	else
		h->f[h->n - 1].name_len += len;
	return 0;
}

void h2_fields_reset(struct h2_fields *h)
{
	h->n = h->used = 0;
	h->in_value = 0;
}

static int dropped(const char *name, size_t len)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
		"te",	      "host"
	};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (len == strlen(hop[i]) && !strncasecmp(name, hop[i], len))
			return 1;
	return 0;
}

size_t h2_fields_nv(struct h2_fields *h, size_t from, size_t to, nghttp2_nv *nv)
{
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		char *name = h->a + h->f[i].name_off;

		if (dropped(name, h->f[i].name_len))
			continue;
		for (size_t k = 0; k < h->f[i].name_len; k++)
			name[k] = (char)tolower((unsigned char)name[k]);
		nv[n++] = (nghttp2_nv){ (uint8_t *)name, (uint8_t *)h->a + h->f[i].val_off,
					h->f[i].name_len, h->f[i].val_len, NGHTTP2_NV_FLAG_NONE };
	}
	return n;
}

const char *h2_fields_get(const struct h2_fields *h, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < h->n; i++)
		if (h->f[i].name_len == nl && !strncasecmp(h->a + h->f[i].name_off, name, nl)) {
			*len = h->f[i].val_len;
			return h->a + h->f[i].val_off;
		}
	return NULL;
}
