/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_fields.h: what both HTTP/2 sides (h2_stream.c toward the guest, h2_up.c toward an
 * upstream) share when they turn HTTP/1.1 text into HTTP/2 — bounded growing buffers, and an
 * HTTP/1.1 message's fields as http_parser hands them over, made into nghttp2 name/value
 * pairs without the fields HTTP/2 has no place for. */
#ifndef BULKHEAD_BROKER_H2_FIELDS_H
#define BULKHEAD_BROKER_H2_FIELDS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nghttp2/nghttp2.h>

#include "broker/proxy_limits.h"

#define H2_HEAD_MAX   (PROXY_MAX_HEAD + 512)  /* a message's fields, as text */
#define H2_FIELDS_MAX (2 * PROXY_MAX_HEADERS) /* a message's fields and trailers */

struct h2_buf {
	char *p;
	size_t len, off, cap, max; /* off: what has been taken from the front; max: the bound */
};

/* 0, or -1 past the bound (or out of memory). */
int h2_buf_add(struct h2_buf *b, const void *p, size_t n);
int h2_buf_str(struct h2_buf *b, const char *s);
/* At most N bytes from the front into OUT; how many. */
size_t h2_buf_take(struct h2_buf *b, void *out, size_t n);
static inline size_t h2_buf_left(const struct h2_buf *b)
{
	return b->len - b->off;
}
void h2_buf_free(struct h2_buf *b);
/* A data provider's step over B: up to LEN bytes into OUT; NGHTTP2_ERR_DEFERRED (and
 * *DEFERRED set) when B is empty and DONE is not; NGHTTP2_DATA_FLAG_EOF in *FLAGS once B is
 * empty and DONE. */
ssize_t h2_buf_provide(struct h2_buf *b, int done, int *deferred, uint8_t *out, size_t len,
		       uint32_t *flags);

struct h2_fields {
	char a[H2_HEAD_MAX];
	size_t used;
	struct {
		size_t name_off, name_len, val_off, val_len;
	} f[H2_FIELDS_MAX];
	size_t n;
	int in_value;
};

/* A piece of a field's name (VALUE 0) or value, as http_parser's callbacks give them: 0, or
 * -1 past the bounds. */
int h2_fields_part(struct h2_fields *h, const char *at, size_t len, int value);
void h2_fields_reset(struct h2_fields *h);
/* Fields FROM..TO as name/value pairs in NV (room for TO - FROM), names made lower case,
 * hop-by-hop and framing fields left out (RFC 9113 8.2.2), and Host too (it is :authority);
 * returns how many. */
size_t h2_fields_nv(struct h2_fields *h, size_t from, size_t to, nghttp2_nv *nv);
/* The value of the first field named NAME (lower case), or NULL; its length in *LEN. */
const char *h2_fields_get(const struct h2_fields *h, const char *name, size_t *len);

#endif
