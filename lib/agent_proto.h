/* lib/agent_proto.h: host <-> guest exec agent frames over vsock (v1).
 *
 * One vsock stream per exec. The host connects to the agent's port
 * (AGENT_PORT), sends one EXEC frame, then STDIN / SIGNAL / WINSIZE frames; the
 * agent answers with STDOUT / STDERR frames and finally one EXIT frame (or an
 * ERROR frame when the command could not be started), then closes.
 *
 * Every frame: an 8-byte header (version, type, reserved, payload length, all
 * little-endian) followed by the payload. Lengths are checked against
 * AGENT_MAX_PAYLOAD and against each type's own rule before anything is read
 * into a buffer; an unknown type, a bad length or a wrong version closes the
 * stream. Both sides use the same reader (agent_recv) and writer (agent_send).
 */
#ifndef BULKHEAD_LIB_AGENT_PROTO_H
#define BULKHEAD_LIB_AGENT_PROTO_H

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
/* On the broker port, "GET BROKER_CA_PATH" (origin form, not through a tunnel) answers the
 * session CA's certificate in PEM; bulkhead-init installs it as GUEST_CA_BUNDLE, the guest's
 * only trusted CA, so a TLS connection from the guest can only end at the broker. */
#define BROKER_CA_PATH	  "/.well-known/bulkhead/ca.pem"
#define GUEST_CA_BUNDLE	  "/etc/ssl/certs/ca-certificates.crt"
#define AGENT_MAX_PAYLOAD 65536

struct agent_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t reserved; /* zero */
	uint32_t len;	   /* payload bytes that follow */
};

enum agent_type {
	/* host -> guest */
	AGENT_EXEC = 1,	   /* struct agent_exec + strings (see below) */
	AGENT_STDIN = 2,   /* bytes for the command's stdin; len 0 = end of input */
	AGENT_SIGNAL = 3,  /* uint32 signal number, for the command's process group */
	AGENT_WINSIZE = 4, /* uint16 rows, uint16 cols (tty execs) */
	/* guest -> host */
	AGENT_STDOUT = 16, /* bytes of the command's stdout (or its tty) */
	AGENT_STDERR = 17, /* bytes of the command's stderr (never with a tty) */
	AGENT_EXIT = 18,   /* struct agent_exit; the last frame */
	AGENT_ERROR = 19,  /* one line of text: the exec failed before the command ran */
	AGENT_READY = 20,  /* on the ready connection: the agent listens; no payload */
};

#define AGENT_EXEC_TTY	 (1u << 0) /* run under a pseudo-terminal */
#define AGENT_EXEC_STDIN (1u << 1) /* stdin comes from STDIN frames (else /dev/null) */

/* EXEC payload: this fixed part, then argc + envc + 1 NUL-terminated strings:
 * cwd, argv[0..argc), env[0..envc) ("KEY=VALUE"), filling the payload exactly. */
struct agent_exec {
	uint32_t flags; /* AGENT_EXEC_* */
	uint16_t rows, cols;
	uint32_t argc, envc;
};
#define AGENT_MAX_ARGS 4096

struct agent_exit {
	int32_t code;	/* 0..255, or -1 when killed by a signal */
	int32_t signal; /* 1..64, or 0 */
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

/* Writes one frame (header + payload) to a blocking fd. Returns 0 or -errno. */
int agent_send(int fd, int type, const void *payload, size_t len);

/* Reads one frame from a blocking fd into buf (bufsize bytes). Returns the type
 * (>0), 0 at a clean end of stream (EOF before a header), or -errno: -EPROTO for
 * a wrong version, unknown type or a length the type does not allow, -EMSGSIZE
 * for a payload larger than bufsize, -EIO for EOF inside a frame. *len gets the
 * payload length. */
int agent_recv(int fd, void *buf, size_t bufsize, size_t *len);

/* Checks a payload's length for its type; 0 or -EPROTO. Used by agent_recv. */
int agent_check_len(int type, size_t len);

/* Encodes an EXEC payload into buf; returns its length or -E2BIG. */
long agent_exec_encode(void *buf, size_t buflen, uint32_t flags, uint16_t rows, uint16_t cols,
		       const char *cwd, char *const argv[], char *const env[]);

/* Decodes and validates an EXEC payload (counts, NULs, argc >= 1, no bytes left
 * over). Allocates req->argv and req->env (free with agent_exec_free). 0 or -EPROTO. */
int agent_exec_decode(const void *payload, size_t len, struct agent_exec_req *req);
void agent_exec_free(struct agent_exec_req *req);

#endif
