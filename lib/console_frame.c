/* SPDX-License-Identifier: Apache-2.0 */
/* lib/console_frame.c: encoder and strict push parser for console frames (see header). */
#include "lib/console_frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

static uint32_t frame_crc(const char *fields, size_t flen, const void *payload, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, (const Bytef *)fields, (uInt)flen);
	if (len)
		crc = crc32(crc, (const Bytef *)payload, (uInt)len);
	return (uint32_t)crc;
}

size_t cframe_encode(char *hdr, char *trailer, int type, uint64_t seq, const void *payload,
		     size_t len)
{
	char fields[CFRAME_MAX_HEADER];
	int flen = snprintf(fields, sizeof(fields), "%c %" PRIu64 " %zu", type, seq, len);
	int hlen = snprintf(hdr, CFRAME_MAX_HEADER, CFRAME_MAGIC "%s\n", fields);
	snprintf(trailer, CFRAME_TRAILER_LEN + 1, "%08x\n",
		 frame_crc(fields, (size_t)flen, payload, len));
	return (size_t)hlen;
}

void cframe_parser_init(struct cframe_parser *p, const struct cframe_sink *sink)
{
	memset(p, 0, sizeof(*p));
	p->sink = *sink;
	p->state = CF_NOISE;
}

int cframe_idle(const struct cframe_parser *p)
{
	return p->state == CF_NOISE && p->magic_matched == 0;
}

static int fail(struct cframe_parser *p, const char *why)
{
	if (!p->error[0])
		snprintf(p->error, sizeof(p->error), "console frame %" PRIu64 ": %s", p->next_seq,
			 why);
	return -1;
}

/* Strict unsigned decimal: digits only, no sign, no leading zero, no overflow. */
static int parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int known_type(int t)
{
	return t == CFRAME_ERROR;
}

static int parse_header(struct cframe_parser *p)
{
	const char *h = p->hdr;
	size_t n = p->hdr_len;
	if (n < 5 || h[1] != ' ')
		return fail(p, "malformed header");
	if (!known_type((unsigned char)h[0]))
		return fail(p, "unknown frame type");
	const char *seq = h + 2;
	const char *sp = memchr(seq, ' ', n - 2);
	if (!sp)
		return fail(p, "malformed header");
	const char *len = sp + 1;
	uint64_t seqv, lenv;
	if (parse_u64(seq, (size_t)(sp - seq), UINT64_MAX, &seqv) ||
	    parse_u64(len, n - (size_t)(len - h), CFRAME_MAX_PAYLOAD, &lenv))
		return fail(p, "bad sequence number or length");
	if (seqv != p->next_seq)
		return fail(p, "out of sequence (lost or injected frame)");
	p->type = (unsigned char)h[0];
	p->seq = seqv;
	p->len = (size_t)lenv;
	p->got = 0;
	return 0;
}

static int check_trailer(struct cframe_parser *p)
{
	char want[CFRAME_TRAILER_LEN + 1];
	snprintf(want, sizeof(want), "%08x\n", frame_crc(p->hdr, p->hdr_len, p->payload, p->len));
	if (memcmp(want, p->trailer, CFRAME_TRAILER_LEN) != 0)
		return fail(p, "checksum mismatch (corrupted frame)");
	p->next_seq++;
	p->state = CF_NOISE;
	if (p->sink.frame && p->sink.frame(p->sink.ctx, p->type, p->payload, p->len) < 0)
		return fail(p, "rejected by the receiver");
	return 0;
}

static void emit_noise(struct cframe_parser *p, const uint8_t *buf, size_t len)
{
	if (len && p->sink.noise)
		p->sink.noise(p->sink.ctx, buf, len);
}

/* Consumes noise up to and including a complete magic; returns bytes consumed.
 * Bytes that might start a magic are held back (they always equal a prefix of
 * the magic, so a false start is re-emitted from CFRAME_MAGIC itself). */
static size_t feed_noise(struct cframe_parser *p, const uint8_t *buf, size_t len)
{
	const uint8_t *magic = (const uint8_t *)CFRAME_MAGIC;
	size_t run = 0; /* start of the pending noise run in buf */
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != magic[p->magic_matched] && p->magic_matched) {
			emit_noise(p, magic, p->magic_matched);
			p->magic_matched = 0;
		}
		if (buf[i] != magic[p->magic_matched])
			continue;
		if (p->magic_matched == 0)
			emit_noise(p, buf + run, i - run);
		run = i + 1;
		if (++p->magic_matched == CFRAME_MAGIC_LEN) {
			p->magic_matched = 0;
			p->state = CF_HEADER;
			p->hdr_len = 0;
			return i + 1;
		}
	}
	emit_noise(p, buf + run, len - run);
	return len;
}

int cframe_feed(struct cframe_parser *p, const uint8_t *buf, size_t len)
{
	if (p->error[0])
		return -1;
	size_t i = 0;
	while (i < len) {
		switch (p->state) {
		case CF_NOISE:
			i += feed_noise(p, buf + i, len - i);
			break;
		case CF_HEADER: {
			uint8_t c = buf[i++];
			if (c == '\n') {
				if (parse_header(p))
					return -1;
				p->state = p->len ? CF_PAYLOAD : CF_TRAILER;
				p->trailer_len = 0;
			} else if (p->hdr_len == sizeof(p->hdr)) {
				return fail(p, "header too long");
			} else {
				p->hdr[p->hdr_len++] = (char)c;
			}
			break;
		}
		case CF_PAYLOAD: {
			size_t n = p->len - p->got;
			if (n > len - i)
				n = len - i;
			memcpy(p->payload + p->got, buf + i, n);
			p->got += n;
			i += n;
			if (p->got == p->len) {
				p->state = CF_TRAILER;
				p->trailer_len = 0;
			}
			break;
		}
		case CF_TRAILER:
			p->trailer[p->trailer_len++] = (char)buf[i++];
			if (p->trailer_len == CFRAME_TRAILER_LEN && check_trailer(p))
				return -1;
			break;
		}
	}
	return 0;
}
