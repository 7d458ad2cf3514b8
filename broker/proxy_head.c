/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_head.c: one message head, request's or response's, collected from http_parser's
 * callbacks into a bounded arena (struct head, proxy_internal.h), and looked up by field name. */
#include "broker/proxy_internal.h"

#include <string.h>
#include <strings.h>

int proxy_head_is(const struct head *h, size_t i, const char *name)
{
	return h->h[i].name_len == strlen(name) &&
	       !strncasecmp(h->arena + h->h[i].name_off, name, h->h[i].name_len);
}

const char *proxy_head_val(const struct head *h, size_t i)
{
	return h->arena + h->h[i].val_off;
}

int proxy_head_append(struct head *h, const char *at, size_t len, size_t *field_len)
{
	/* One byte stays free after every piece for the terminating NUL. */
	if (len >= sizeof(h->arena) - h->used)
		return -1;
	memcpy(h->arena + h->used, at, len);
	h->used += len;
	*field_len += len;
	h->arena[h->used] = 0;
	return 0;
}

void proxy_head_reset(struct head *h)
{
	h->arena[0] = 0;
	h->used = h->url_off = h->url_len = h->n = 0;
	h->in_value = 0;
}

int proxy_head_field(struct head *h, const char *at, size_t len)
{
	if (h->in_value || !h->n) {
		if (h->n == PROXY_MAX_HEADERS)
			return -2;
		if (h->n)
			h->used++; /* keep the previous value's NUL */
		h->h[h->n].name_off = h->used;
		h->h[h->n].name_len = h->h[h->n].val_len = 0;
		h->h[h->n].val_off = 0;
		h->n++;
		h->in_value = 0;
	}
	return proxy_head_append(h, at, len, &h->h[h->n - 1].name_len);
}

int proxy_head_value(struct head *h, const char *at, size_t len)
{
	if (!h->n)
		return -1;
	if (!h->in_value) {
		h->used++; /* the name's NUL */
		if (h->used >= sizeof(h->arena))
			return -1;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
		h->in_value = 1;
	}
	return proxy_head_append(h, at, len, &h->h[h->n - 1].val_len);
}

int proxy_head_done(struct head *h)
{
	if (h->n && !h->in_value) { /* a name without value: give it an empty one */
		if (h->used + 1 >= sizeof(h->arena))
			return -1;
		h->used++;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
	}
	return 0;
}
