/* broker/scrub.h: a streaming replacer that removes secret values (raw, base64 at any byte
 * alignment, percent-encoded, and the rendered credential) from upstream responses, also when
 * a value is split across reads. */
#ifndef BULKHEAD_BROKER_SCRUB_H
#define BULKHEAD_BROKER_SCRUB_H

#include <stddef.h>
#include <stdint.h>

#define SCRUB_REPLACEMENT "[bulkhead:redacted]"
/* Shorter patterns would redact ordinary text; base64 fragments shorter than this are not
 * added (the raw value always is, whatever its length). */
#define SCRUB_MIN_FRAGMENT 6

struct scrub_pat {
	uint8_t *b;
	size_t n;
};

struct scrub {
	struct scrub_pat *pats;
	size_t n_pats, cap_pats;
	size_t max_len;
	uint8_t first[256 / 8]; /* bit set: bytes a pattern starts with */
	uint8_t *work;		/* held-back tail + new input */
	size_t held, work_cap;
	size_t replaced; /* how many values were replaced, for the log */
};

/* Receives scrubbed output; returns 0 or a negative errno (which scrub_feed returns). */
typedef int (*scrub_out_fn)(void *arg, const uint8_t *b, size_t n);

void scrub_init(struct scrub *s);
/* Adds one literal pattern (copied; wiped on scrub_free). Empty patterns are ignored. */
int scrub_add(struct scrub *s, const uint8_t *b, size_t n);
/* Adds VALUE and the forms a response may carry it in: base64 at all three alignments
 * (the part of each encoding fixed by VALUE alone), base64url, and percent-encoded. */
int scrub_add_secret(struct scrub *s, const uint8_t *val, size_t n);
int scrub_feed(struct scrub *s, const uint8_t *in, size_t n, scrub_out_fn out, void *arg);
/* Emits what is still held back (it matched no pattern completely). */
int scrub_flush(struct scrub *s, scrub_out_fn out, void *arg);
/* Drops held-back bytes and the match counter, keeping the patterns (a new message). */
void scrub_reset(struct scrub *s);
void scrub_free(struct scrub *s);

#endif
