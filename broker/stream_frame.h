/* SPDX-License-Identifier: Apache-2.0 */
/* broker/stream_frame.h: where a streamed response's messages end (an SSE event, an NDJSON
 * line), found from the bytes alone, so that the scrubber can release each message whole as
 * soon as it is complete. See docs/THREAT-MODEL.md "Streamed responses". */
#ifndef BULKHEAD_BROKER_STREAM_FRAME_H
#define BULKHEAD_BROKER_STREAM_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum stream_framing {
	STREAM_FRAME_NONE,  /* no messages: the body is one message (the fixed lag applies) */
	STREAM_FRAME_SSE,   /* text/event-stream: an event ends at an empty line */
	STREAM_FRAME_LINES, /* NDJSON, JSON Lines, JSON text sequences: a record ends at LF */
};

struct stream_frame {
	enum stream_framing kind;
	uint8_t line_start; /* the last byte ended a line (or nothing came yet) */
	uint8_t cr;	    /* the last byte was a CR */
	uint8_t cr_empty;   /* ... that ended an empty line, earlier in the same read */
	/* The last byte that is not white space could end a character of a covered form that
	 * goes on past a line end (base64 wrapped, a CSS escape ended by LF, escapes of base64
	 * characters): no message ends at a line end after it. esc: where a braced escape
	 * (\u{..}, \N{..}) stands. */
	uint8_t form_tail, esc;
};

/* The framing of a response with this Content-Type value (N bytes, not NUL-terminated):
 * the media type compared without case, parameters ignored. */
enum stream_framing stream_frame_kind(const char *ctype, size_t n);
/* A media type's name for the log and the audit record ("sse", "lines", "none"). */
const char *stream_frame_name(enum stream_framing k);

void stream_frame_init(struct stream_frame *f, enum stream_framing kind);
/* Reads B[0..N) up to the first message end: returns how many bytes it took (all N when no
 * message ends in them) and sets *END when a message ends after those bytes. */
size_t stream_frame_scan(struct stream_frame *f, const uint8_t *b, size_t n, int *end);

#endif
