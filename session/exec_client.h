/* SPDX-License-Identifier: Apache-2.0 */
/* session/exec_client.h: the host side of one exec in the guest (lib/agent_proto.h):
 * connect through the session's vsock socket, send the request, then relay stdin,
 * signals and window size one way and stdout/stderr/exit the other.
 *
 * Driven by the caller's poll loop and never blocking on anything the guest or a
 * back end controls: the vsock handshake, every frame in and out and every write to
 * our stdout/stderr wait for poll. A guest that sends half a frame, trickles one, or
 * floods whole ones leaves the caller's loop free to serve its timers and signals. */
#ifndef BULKHEAD_SESSION_EXEC_CLIENT_H
#define BULKHEAD_SESSION_EXEC_CLIENT_H

#include "lib/agent_proto.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum exec_state {
	EXEC_HANDSHAKE, /* "CONNECT <port>\n" out, waiting for "OK <hostport>\n" */
	EXEC_RUNNING,	/* the EXEC frame queued or sent: relaying */
	EXEC_OVER,	/* EXIT or ERROR received, or failed */
};

#define EXEC_CLIENT_POLLFDS 3

struct exec_client {
	int sock;
	int in_fd;  /* our stdin when forwarded (-i), else -1; -1 again after its EOF */
	int out_fd; /* where STDOUT frames go (1) */
	int err_fd; /* where STDERR frames go (2) */
	enum exec_state state;
	long deadline_ms; /* CLOCK_MONOTONIC ms by which the handshake must end */
	unsigned port;
	char hs[32]; /* the handshake line, sent without blocking */
	size_t hs_len, hs_off;
	char reply[64]; /* the handshake's reply line so far */
	size_t reply_len;
	/* One outbound frame in flight, sent without blocking once the handshake is over
	 * (the EXEC frame waits here from the start). */
	uint8_t obuf[AGENT_HDR_LEN + AGENT_MAX_PAYLOAD];
	size_t olen, ooff;
	int pending_signal;  /* queued while a frame is in flight; 0 if none */
	bool signal_process; /* signals for the command's process alone, not its group (OCI) */
	bool pending_winsize;
	uint16_t rows, cols;
	/* Inbound: frames parsed from the socket; a STDOUT/STDERR payload waits in the
	 * parser until our descriptor takes it, and no more is read meanwhile. */
	struct agent_reader rd;
	size_t wout_off; /* bytes of the current output frame already written */
	int wout_fd;	 /* -1: none pending */
	bool out_broken, err_broken;
	/* -it: "~." at the start of a line stops the session (as in ssh; "~~" sends one "~"),
	 * since every other key, Ctrl-C included, belongs to the guest's terminal. */
	bool escapes;
	int esc_state; /* ESC_* in exec_client.c */
	bool escaped;  /* "~." was typed */
	bool done;     /* EXIT or ERROR received */
	struct agent_exit exit;
	char error[256];		 /* ERROR text from the agent, or our own failure */
	uint8_t ibuf[AGENT_MAX_PAYLOAD]; /* a read from our stdin */
	int pi_sock, pi_out, pi_in;	 /* where exec_client_pollfds put each descriptor */
};

/* Starts an exec of argv in the guest on guest port `port` through the session's
 * host-side vsock socket uds (flags: AGENT_EXEC_*). The handshake must end within
 * handshake_ms. Returns 0, or -1 with c->error set (nothing to close then). The caller
 * fills in_fd, out_fd and err_fd before. argv, env and cwd are copied. */
int exec_client_open(struct exec_client *c, const char *uds, unsigned port, int handshake_ms,
		     uint32_t flags, uint16_t rows, uint16_t cols, const char *cwd,
		     char *const argv[], char *const env[]);

/* Fills up to EXEC_CLIENT_POLLFDS pollfds; returns how many. */
int exec_client_pollfds(struct exec_client *c, struct pollfd *pfd);
/* Milliseconds until the client must be called even without an event (its handshake
 * deadline), or -1 for none. */
int exec_client_timeout_ms(const struct exec_client *c);
/* Handles those pollfds' events (and the deadline). Returns 0 to go on, 1 when the
 * exec is over (c->exit or c->error), 2 when our user typed the escape ("~."), -1 on a
 * failure (c->error). */
int exec_client_handle(struct exec_client *c, const struct pollfd *pfd, int n);

/* The command's status as a shell reports it: its exit code, or 128+N for signal N. */
int exec_client_status(const struct exec_client *c);

void exec_client_signal(struct exec_client *c, int sig);
void exec_client_winsize(struct exec_client *c, uint16_t rows, uint16_t cols);
void exec_client_close(struct exec_client *c);

#endif
