/* SPDX-License-Identifier: Apache-2.0 */
/* lib/agent_proto.h: host <-> guest exec agent frames over vsock (v1).
 *
 * One vsock stream per exec. The host connects to the agent's port
 * (AGENT_PORT), sends one EXEC frame, then STDIN / SIGNAL / WINSIZE frames; the
 * agent answers with STDOUT / STDERR frames and finally one EXIT frame (or an
 * ERROR frame when the command could not be started), then closes.
 *
 * Every frame: an 8-byte header (version, type, reserved, payload length; all
 * multi-byte fields little-endian) followed by the payload. Lengths are checked
 * against AGENT_MAX_PAYLOAD and against each type's own rule before anything is
 * read into a buffer; an unknown type, a bad length or a wrong version closes
 * the stream. Every payload with fields has its encoder and decoder here.
 *
 * Reading is incremental and never blocks: bytes go into a push parser
 * (agent_parse) as they arrive, and whole frames come out. A peer that sends half
 * a frame and stops, or trickles it, costs the reader nothing but the bytes: the
 * reader's loop keeps serving its timers and signals. Every reader, on the host
 * and in the guest, uses it (through agent_reader for a descriptor).
 */
#ifndef BULKHEAD_LIB_AGENT_PROTO_H
#define BULKHEAD_LIB_AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_VERSION	 1
#define AGENT_PORT	 1024 /* guest port the exec agent listens on */
#define AGENT_READY_PORT 1025 /* host port (vsock.sock_1025) init connects to when ready */
/* Host port (vsock.sock_1026) of the session's credential broker: the guest's proxy shim on
 * 127.0.0.1:3128 relays every connection there. Not part of the exec protocol, but one of
 * the session's fixed vsock ports, so it is listed with them. */
#define BROKER_VSOCK_PORT 1026
#define GUEST_PROXY_PORT  3128
/* Guest port a template's init (bulkhead.template=1) listens on: the host that restored it
 * connects and sends one SESSION frame, what makes the template this session's guest. */
#define TEMPLATE_PORT 1027
/* On the broker port, "GET BROKER_CA_PATH" (origin form, not through a tunnel) answers the
 * session CA's certificate in PEM; bulkhead-init installs it as GUEST_CA_BUNDLE, the guest's
 * only trusted CA, so a TLS connection from the guest can only end at the broker. */
#define BROKER_CA_PATH	  "/.well-known/bulkhead/ca.pem"
#define GUEST_CA_BUNDLE	  "/etc/ssl/certs/ca-certificates.crt"
#define AGENT_MAX_PAYLOAD 65536
#define AGENT_HDR_LEN	  8

/* The header on the wire: byte 0 version, 1 type, 2-3 reserved (zero), 4-7 payload length
 * (little-endian). agent_hdr_encode writes it; agent_parse reads it. */
enum agent_type {
	/* host -> guest */
	AGENT_EXEC = 1,	   /* struct agent_exec + strings (see below) */
	AGENT_STDIN = 2,   /* bytes for the command's stdin; len 0 = end of input */
	AGENT_SIGNAL = 3,  /* le32 signal number (1..64), for the command's process group; with
			    * AGENT_SIGNAL_PROCESS, for the command's process alone (as an OCI
			    * runtime's kill reaches a container's first process only) */
	AGENT_WINSIZE = 4, /* le16 rows, le16 cols (tty execs) */
	AGENT_SESSION = 5, /* on TEMPLATE_PORT: struct agent_session (see below) */
	AGENT_CLOCK = 6,   /* on the ready connection, the host's answer to READY: le64
			    * seconds, le32 nanoseconds of its wall clock (a resumed guest's is
			    * as old as its pause) */
	/* guest -> host */
	AGENT_STDOUT = 16, /* bytes of the command's stdout (or its tty) */
	AGENT_STDERR = 17, /* bytes of the command's stderr (never with a tty) */
	AGENT_EXIT = 18,   /* le32 code, le32 signal (struct agent_exit); the last frame */
	AGENT_ERROR = 19,  /* one line of text: the exec failed before the command ran */
	AGENT_READY = 20,  /* on the ready connection: the agent listens; no payload */
	AGENT_TEMPLATE_READY = 21, /* on the ready connection: a template's init waits on
				    * TEMPLATE_PORT for its session; no payload */
};

#define AGENT_SIGNAL_LEN  4
#define AGENT_WINSIZE_LEN 4
#define AGENT_EXIT_LEN	  8
#define AGENT_CLOCK_LEN	  12
#define AGENT_SIG_MAX	  64

#define AGENT_EXEC_TTY	 (1u << 0) /* run under a pseudo-terminal */
#define AGENT_EXEC_STDIN (1u << 1) /* stdin comes from STDIN frames (else /dev/null) */

/* EXEC payload: this fixed part (little-endian), then argc + envc + 1 NUL-terminated
 * strings: cwd, argv[0..argc), env[0..envc) ("KEY=VALUE"), filling the payload exactly. */
struct agent_exec {
	uint32_t flags; /* AGENT_EXEC_* */
	uint16_t rows, cols;
	uint32_t argc, envc;
};
#define AGENT_MAX_ARGS 4096

/* A decoded EXIT frame: either 0 <= code <= 255 and signal 0, or code -1 and
 * 1 <= signal <= AGENT_SIG_MAX (killed by that signal). */
struct agent_exit {
	int32_t code;
	int32_t signal;
};

/* Decoded EXEC request; strings point into the payload buffer. */
struct agent_exec_req {
	uint32_t flags;
	uint16_t rows, cols;
	const char *cwd;
	const char **argv; /* argc entries + NULL */
	const char **env;  /* envc entries + NULL */
	uint32_t argc, envc;
};

/* --- writing ------------------------------------------------------------------------- */

/* The one header writer. len must already satisfy agent_check_len(type, len). */
void agent_hdr_encode(uint8_t out[AGENT_HDR_LEN], int type, uint32_t len);

/* Writes one frame (header + payload) to a blocking fd: for the guest's agent, whose
 * reader (the host) sets the pace. The host never writes this way to the guest.
 * Returns 0, -EINVAL for a length the type does not allow, or -errno. */
int agent_send(int fd, int type, const void *payload, size_t len);

/* Checks a payload's length for its type; 0 or -EPROTO (also for an unknown type). */
int agent_check_len(int type, size_t len);

/* Fixed payloads. Encoders write little-endian; decoders check the length and every
 * field's range and return 0 or -EPROTO. */
#define AGENT_SIGNAL_PROCESS 0x100
/* SIG: a signal number, or'ed with AGENT_SIGNAL_PROCESS; decode gives it back the same way and
 * refuses any other bit. */
void agent_signal_encode(uint8_t out[AGENT_SIGNAL_LEN], int sig);
int agent_signal_decode(const uint8_t *p, size_t len, int *sig);
void agent_winsize_encode(uint8_t out[AGENT_WINSIZE_LEN], uint16_t rows, uint16_t cols);
int agent_winsize_decode(const uint8_t *p, size_t len, uint16_t *rows, uint16_t *cols);
/* wait-style result: code 0..255 with sig 0, or sig 1..64 (code is then -1). */
void agent_exit_encode(uint8_t out[AGENT_EXIT_LEN], int code, int sig);
int agent_exit_decode(const uint8_t *p, size_t len, struct agent_exit *e);

/* Encodes an EXEC payload into buf; returns its length or -E2BIG. */
long agent_exec_encode(void *buf, size_t buflen, uint32_t flags, uint16_t rows, uint16_t cols,
		       const char *cwd, char *const argv[], char *const env[]);

/* Decodes and validates an EXEC payload (counts, NULs, argc >= 1, no bytes left
 * over). Allocates req->argv and req->env (free with agent_exec_free). 0 or -EPROTO. */
int agent_exec_decode(const void *payload, size_t len, struct agent_exec_req *req);
void agent_exec_free(struct agent_exec_req *req);

/* SESSION payload: fresh entropy for the guest's kernel generator, the host's wall clock, and
 * the session's boot arguments (lib/boot_args.h words, as the kernel command line would have
 * them): AGENT_SESSION_ENTROPY bytes, le64 seconds, le32 nanoseconds, then the arguments,
 * printable ASCII, NUL-terminated, filling the payload exactly. */
#define AGENT_SESSION_ENTROPY 64
#define AGENT_SESSION_FIXED   (AGENT_SESSION_ENTROPY + 8 + 4)
#define AGENT_SESSION_ARGS_MAX 2047 /* BOOT_ARGS_CMDLINE_MAX less its NUL */
struct agent_session {
	uint8_t entropy[AGENT_SESSION_ENTROPY];
	int64_t sec;   /* CLOCK_REALTIME, >= 0 */
	uint32_t nsec; /* < 1e9 */
	const char *args; /* decoded: points into the payload */
};
/* The wall clock both frames carry: from 0 to AGENT_CLOCK_MAX seconds (the year 2242). */
#define AGENT_CLOCK_MAX (1ll << 33)
void agent_clock_encode(uint8_t out[AGENT_CLOCK_LEN], int64_t sec, uint32_t nsec);
int agent_clock_decode(const uint8_t *p, size_t len, int64_t *sec, uint32_t *nsec);
/* Encodes into buf; returns the length or -E2BIG (arguments too long or not printable). */
long agent_session_encode(void *buf, size_t buflen, const struct agent_session *s);
/* Checks every field (time in range, arguments printable and terminated at the payload's
 * end, no bulkhead.template word among them); 0 or -EPROTO. */
int agent_session_decode(const void *payload, size_t len, struct agent_session *s);

/* --- reading ------------------------------------------------------------------------- */

/* The push parser: bytes in, whole frames out, never a read of its own. */
struct agent_parser {
	size_t max; /* largest payload this reader accepts (<= AGENT_MAX_PAYLOAD) */
	uint8_t hdr[AGENT_HDR_LEN];
	size_t hdr_got;
	int type;     /* of the frame being read */
	uint32_t len; /* its payload length */
	uint32_t got; /* payload bytes so far */
	int error;    /* sticky: once a frame is bad, the stream is over */
	uint8_t payload[AGENT_MAX_PAYLOAD];
};

void agent_parser_init(struct agent_parser *p, size_t max);
/* Takes bytes from buf[0..n) until one frame is whole or the bytes run out; *used says
 * how many it took. Returns the frame's type (> 0; payload in p->payload, length p->len,
 * valid until the next call) when one is whole, 0 when it needs more bytes, or -EPROTO
 * (wrong version, reserved bits, unknown type, a length the type does not allow) or
 * -EMSGSIZE (a payload larger than max). Errors are sticky. */
int agent_parse(struct agent_parser *p, const uint8_t *buf, size_t n, size_t *used);
/* True between frames: an end of stream here is a clean one. */
bool agent_parser_idle(const struct agent_parser *p);

/* A descriptor's reader: a receive buffer in front of the parser. One read(2) per
 * agent_reader_fill (call it when poll says the descriptor is readable, or on a
 * non-blocking one), then agent_reader_next until it says -EAGAIN: so a peer that floods
 * whole frames cannot keep the caller in a loop, and one that withholds bytes cannot
 * block it. */
#define AGENT_READER_BUF 65536
struct agent_reader {
	struct agent_parser p;
	uint8_t in[AGENT_READER_BUF];
	size_t off, len; /* unparsed bytes: in[off..len) */
	bool eof;
};

void agent_reader_init(struct agent_reader *r, size_t max);
/* One read(2) into the free part of the buffer. Returns the bytes read (> 0), 0 at the
 * end of the stream (recorded for agent_reader_next), -EAGAIN when nothing was there, or
 * -errno. Never reads while whole frames may still be parsed from the buffer (returns
 * -EAGAIN then: call agent_reader_next first). */
long agent_reader_fill(struct agent_reader *r, int fd);
/* The next whole frame from bytes already read: its type (> 0, payload in r->p.payload,
 * length r->p.len), -EAGAIN when more bytes are needed, 0 at a clean end of stream, -EIO
 * at an end of stream inside a frame, or the parser's -EPROTO / -EMSGSIZE. */
int agent_reader_next(struct agent_reader *r);
/* True while bytes wait in the buffer to be parsed (poll only once this is false, or
 * after agent_reader_next said -EAGAIN). */
bool agent_reader_buffered(const struct agent_reader *r);

#endif
