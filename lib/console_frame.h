/* SPDX-License-Identifier: Apache-2.0 */
/* lib/console_frame.h: bulkhead-init -> host frames on the serial console (v2).
 *
 * Before the vsock agent is up, the guest's only way to tell the host why a
 * session cannot start (a failed mount, no vsock) is the UART, which the kernel
 * also prints on. Those messages travel as frames: length-delimited,
 * CRC-checked and sequence-numbered, so kernel noise cannot be mistaken for one
 * and corruption (a printk landing in the middle) is detected, not accepted.
 * Commands never write to the console: their output goes over vsock.
 *
 * Wire format, one frame:
 *   "\x1e" "BHF2 " TYPE " " SEQ " " LEN "\n"      header (TYPE one char; SEQ, LEN decimal)
 *   LEN raw payload bytes                          (0 <= LEN <= CFRAME_MAX_PAYLOAD)
 *   CRC "\n"                                       8 lower-case hex digits: CRC-32 of
 *                                                  "TYPE SEQ LEN" followed by the payload
 * SEQ starts at 0 and increases by one per frame. Bytes outside frames are console
 * noise (kernel messages) and are passed on as such. An unknown TYPE, a SEQ out of
 * order, an oversized LEN or a bad CRC is a protocol error: the session fails.
 */
#ifndef BULKHEAD_LIB_CONSOLE_FRAME_H
#define BULKHEAD_LIB_CONSOLE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define CFRAME_MAGIC                                                                               \
	"\x1e"                                                                                     \
	"BHF2 "
#define CFRAME_MAGIC_LEN   6
#define CFRAME_MAX_PAYLOAD 4096
/* Longest header: magic + "t " + 20-digit seq + " " + 4-digit len + "\n". */
#define CFRAME_MAX_HEADER  48
#define CFRAME_TRAILER_LEN 9

enum cframe_type {
	CFRAME_ERROR = '!', /* bulkhead-init could not run the session: one line of text */
};

/* Writer side: fills hdr (>= CFRAME_MAX_HEADER bytes) and trailer
 * (>= CFRAME_TRAILER_LEN + 1 bytes); returns the header length. */
size_t cframe_encode(char *hdr, char *trailer, int type, uint64_t seq, const void *payload,
		     size_t len);

/* Reader side: a push parser, fed with whatever the console delivers. */
struct cframe_parser;
struct cframe_sink {
	void (*noise)(void *ctx, const uint8_t *buf, size_t len);
	/* A whole, verified frame. Return 0, or negative to stop parsing with an error. */
	int (*frame)(void *ctx, int type, const uint8_t *payload, size_t len);
	void *ctx;
};

enum cframe_state { CF_NOISE, CF_HEADER, CF_PAYLOAD, CF_TRAILER };

struct cframe_parser {
	struct cframe_sink sink;
	enum cframe_state state;
	size_t magic_matched;	     /* bytes of CFRAME_MAGIC matched so far (CF_NOISE) */
	char hdr[CFRAME_MAX_HEADER]; /* header fields after the magic */
	size_t hdr_len;
	int type;
	uint64_t next_seq;
	uint64_t seq;
	size_t len, got;
	uint8_t payload[CFRAME_MAX_PAYLOAD];
	char trailer[CFRAME_TRAILER_LEN];
	size_t trailer_len;
	char error[128]; /* set when cframe_feed fails */
};

void cframe_parser_init(struct cframe_parser *p, const struct cframe_sink *sink);
/* Returns 0, or -1 with p->error set; after an error the parser stays failed. */
int cframe_feed(struct cframe_parser *p, const uint8_t *buf, size_t len);
/* True when the parser is between frames (used to tell "stopped mid-frame"). */
int cframe_idle(const struct cframe_parser *p);

#endif
