/* SPDX-License-Identifier: Apache-2.0 */
/* broker/scrub.h: removes secret values from upstream responses as they stream. One matcher
 * knows every form a response may carry a secret in (raw, percent/JSON/HTML/\x escapes, hex,
 * base64 at any alignment and line-wrapped), and a fixed lag makes what goes out after each
 * read depend only on how many bytes came in, never on what they are: only a complete match
 * (the replacement) changes the output. See docs/THREAT-MODEL.md "The response scrubber". */
#ifndef BULKHEAD_BROKER_SCRUB_H
#define BULKHEAD_BROKER_SCRUB_H

#include <stddef.h>
#include <stdint.h>

#define SCRUB_REPLACEMENT "[bulkhead:redacted]"
/* Base64 fragments shorter than this are not matched (they would redact ordinary text); the
 * value itself always is, whatever its length. */
#define SCRUB_MIN_FRAGMENT 6
/* Whitespace characters (raw or escaped) allowed between two base64 characters: CRLF. */
#define SCRUB_WS_MAX 2
/* The lag is a power of two, at least this: all secrets up to 48 bytes give the same one. */
#define SCRUB_LAG_MIN 2048

/* One pattern: M characters, each accepted as either of two values (base64's standard and
 * URL alphabets), at bits OFF..OFF+M-1 of the matcher's state. */
struct scrub_pat {
	uint8_t (*acc)[2];
	size_t m, off;
	int b64; /* base64: whitespace may separate characters; hex pairs do not apply */
};

struct scrub_range {
	uint64_t s, e; /* stream positions [s, e) of a complete match, not yet released */
};

struct scrub {
	/* Patterns and their compiled tables (compiled again when a secret is added). */
	struct scrub_pat *pats;
	size_t n_pats;
	size_t words;			 /* state words */
	uint64_t *mask;			 /* [256][words]: bits whose character accepts a byte */
	uint64_t *starts, *finals, *sep; /* first bits, last bits, base64 interior bits */
	uint64_t *rawbits;		 /* bits of the raw patterns (where hex pairs apply) */
	uint64_t *ring;			 /* 8 boundaries x 4 state vectors (see scrub.c) */
	uint8_t ring_ws[32];		 /* SCRUB_RING */
	uint64_t *vbits;		 /* scratch for finding a match's start */
	size_t vwords;
	size_t lag;
	/* The current message. */
	uint8_t *hold; /* stream positions [base, total) not yet released */
	size_t hold_cap;
	uint64_t base, total;
	struct scrub_range *ranges;
	size_t n_ranges, cap_ranges;
	size_t replaced; /* how many replacements, for the log */
	int line_end;	 /* a loaded secret holds a CR or LF (stream_frame.h cannot apply) */
	uint8_t hexrun;	 /* hex digits ending here, for the decoder's fast test (scrub.c) */
};

/* Receives scrubbed output; returns 0 or a negative errno (which scrub_feed returns). */
typedef int (*scrub_out_fn)(void *arg, const uint8_t *b, size_t n);

void scrub_init(struct scrub *s);
/* Adds VALUE (copied; wiped on scrub_free) in every form the matcher knows: the value, and
 * its base64 at each alignment (the part fixed by VALUE alone); a value known already adds
 * nothing. Within a message (a secret that changed while a stream was open), the bytes held
 * are matched again with the new patterns; the lag grows from the next feed when it must. */
int scrub_add_secret(struct scrub *s, const uint8_t *val, size_t n);
/* The fixed lag L: the last L-1 bytes of a message are held until more arrive or it ends.
 * 0 without secrets (then bytes pass through at once: there is nothing to find). */
size_t scrub_lag(const struct scrub *s);
/* Whether messages of a streamed response may be released as each ends: no loaded secret
 * holds a CR or LF, the bytes that end them (else a message end could fall inside one). */
int scrub_frames_ok(const struct scrub *s);
int scrub_feed(struct scrub *s, const uint8_t *in, size_t n, scrub_out_fn out, void *arg);
/* The message (or header field) ended: releases everything held, after matching. */
int scrub_flush(struct scrub *s, scrub_out_fn out, void *arg);
/* A new message: drops held bytes and the replacement count, keeping the patterns. */
void scrub_reset(struct scrub *s);
void scrub_free(struct scrub *s);

#endif
