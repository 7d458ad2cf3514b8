/* SPDX-License-Identifier: Apache-2.0 */
/* broker/secbuf.h: growing buffers for bytes that may hold a secret — a rewritten request head,
 * a body with its placeholders replaced, a decoded response, the scrubber's held bytes. When
 * one grows, the old storage is wiped before it is freed, and freeing wipes it too, so no copy
 * of a secret is left behind in freed heap memory. (The vault's locked pages, vault_mem.c,
 * are for values at rest in the broker; these are for the bytes of one request.) */
#ifndef BULKHEAD_BROKER_SECBUF_H
#define BULKHEAD_BROKER_SECBUF_H

#include <stddef.h>

/* A byte string, always NUL-terminated once it holds anything. After a failed allocation it
 * takes nothing more and says so in oom; its user checks oom once, at the end. */
struct secbuf {
	char *b;
	size_t n, cap;
	int oom;
};

void secbuf_add(struct secbuf *s, const void *p, size_t n);
void secbuf_str(struct secbuf *s, const char *str);
/* Wipes and frees the storage; S is empty again. */
void secbuf_wipe(struct secbuf *s);

/* The move underneath: a new block of NEW_CAP bytes that starts with the first KEEP bytes of
 * OLD (OLD_CAP bytes, or NULL), which is wiped and freed. NULL, with OLD untouched, when out of
 * memory. */
void *secbuf_regrow(void *old, size_t old_cap, size_t keep, size_t new_cap);

#endif
