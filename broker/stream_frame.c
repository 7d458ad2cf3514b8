/* SPDX-License-Identifier: Apache-2.0 */
/* broker/stream_frame.c: message ends in streamed responses. The state is a few bits kept
 * from the bytes already read, never from the scrubber: where a message ends depends only on
 * the bytes, which the upstream (and through an echo, the guest) chose, and on no secret. */
#include "broker/stream_frame.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *type;
	enum stream_framing kind;
} types[] = {
	{ "text/event-stream", STREAM_FRAME_SSE },
	{ "application/x-ndjson", STREAM_FRAME_LINES },
	{ "application/ndjson", STREAM_FRAME_LINES },
	{ "application/jsonl", STREAM_FRAME_LINES },
	{ "application/x-jsonlines", STREAM_FRAME_LINES },
	{ "application/jsonlines", STREAM_FRAME_LINES },
	{ "application/json-seq", STREAM_FRAME_LINES },
};

enum stream_framing stream_frame_kind(const char *ctype, size_t n)
{
	size_t i, len;

	while (n && (*ctype == ' ' || *ctype == '\t')) {
		ctype++;
		n--;
	}
	for (len = 0; len < n && ctype[len] != ';'; len++)
		;
	while (len && (ctype[len - 1] == ' ' || ctype[len - 1] == '\t'))
		len--;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].type) == len && !strncasecmp(types[i].type, ctype, len))
			return types[i].kind;
	return STREAM_FRAME_NONE;
}

const char *stream_frame_name(enum stream_framing k)
{
	return k == STREAM_FRAME_SSE ? "sse" : k == STREAM_FRAME_LINES ? "lines" : "none";
}

void stream_frame_init(struct stream_frame *f, enum stream_framing kind)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->line_start = 1;
}

/* Covered forms of a secret that may hold a line end: base64 with white space between its
 * characters (MIME's and PEM's wrapping), where a character may itself be an escape, and a
 * CSS hex escape, which a LF may end. A line end that follows such a character is no message
 * end: a flush there would release the form's first half unmatched (a red-team round
 * recovered a key from NDJSON that way). The bytes that can end such a character: base64's
 * alphabet (hex and octal digits, the letter of "\A", among it), ";" of an HTML reference,
 * "}" of a braced escape. The classes are fixed, the same whatever the secrets. */
static int form_byte(uint8_t x)
{
	return isalnum(x) || x == '+' || x == '/' || x == '=' || x == '-' || x == '_' || x == ';';
}

static void track_form(struct stream_frame *f, uint8_t x)
{
	if (x == ' ' || x == '\t' || x == '\f' || x == '\r' || x == '\n') {
		if (f->esc != 3 || x != ' ') /* a braced name may hold spaces: \N{LATIN ...} */
			f->esc = 0;
		return;
	}
	if (f->esc == 3) {
		if (x == '}' || isalnum(x) || x == '+' || x == '-') {
			f->esc = x == '}' ? 0 : 3;
			f->form_tail = 1;
			return;
		}
		f->esc = 0;
	}
	f->esc = x == '\\'				  ? 1
		 : f->esc == 1 && x && strchr("uxoNU", x) ? 2
		 : f->esc == 2 && x == '{'		  ? 3
							  : 0;
	f->form_tail = form_byte(x);
}

/* SSE (WHATWG HTML, "Parsing an event stream"): lines end with CRLF, LF or CR; an empty line
 * dispatches the event. An empty line ended by LF ends the event after that LF. One ended by a
 * CR ends it after the LF of its CRLF when that LF is in the same read, else at the CR itself:
 * a complete event never waits for a byte the upstream may not send (a LF that then follows
 * is the tail of that line end, and goes out with the next message). Where the event ends
 * depends on the upstream's bytes and reads, never on the scrubber. */
static size_t scan_sse(struct stream_frame *f, const uint8_t *b, size_t n, int *end)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t x = b[i];

		if (f->cr_empty) { /* the CR of an empty line came just before, in this read */
			f->cr_empty = f->cr = 0;
			*end = 1;
			return x == '\n' ? i + 1 : i;
		}
		if (f->cr) { /* the LF of a CRLF: the line ended at the CR */
			f->cr = 0;
			if (x == '\n')
				continue;
		}
		if (x == '\r' || x == '\n') {
			if (f->line_start && !f->form_tail) {
				if (x == '\r') {
					f->cr_empty = 1;
					continue;
				}
				*end = 1;
				return i + 1;
			}
			f->cr = x == '\r';
			f->line_start = 1;
		} else {
			f->line_start = 0;
			track_form(f, x);
		}
	}
	if (f->cr_empty) { /* the read ends at the CR of an empty line: so does the event */
		f->cr_empty = 0;
		f->cr = 1;
		*end = 1;
	}
	return n;
}

size_t stream_frame_scan(struct stream_frame *f, const uint8_t *b, size_t n, int *end)
{
	size_t i;

	*end = 0;
	switch (f->kind) {
	case STREAM_FRAME_SSE:
		return scan_sse(f, b, n, end);
	case STREAM_FRAME_LINES:
		for (i = 0; i < n; i++) {
			if (b[i] == '\n' && !f->form_tail) {
				*end = 1;
				return i + 1;
			}
			track_form(f, b[i]);
		}
		return n;
	default:
		return n;
	}
}
