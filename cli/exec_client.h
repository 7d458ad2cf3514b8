/* cli/exec_client.h: the host side of one exec in the guest (lib/agent_proto.h):
 * connect through the session's vsock socket, send the request, then relay stdin,
 * signals and window size one way and stdout/stderr/exit the other. Driven by the
 * caller's poll loop, never blocking on a slow peer. */
#ifndef BULKHEAD_CLI_EXEC_CLIENT_H
#define BULKHEAD_CLI_EXEC_CLIENT_H

#include "lib/agent_proto.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct exec_client {
	int sock;
	int in_fd;  /* our stdin when forwarded (-i), else -1; -1 again after its EOF */
	int out_fd; /* where STDOUT frames go (1) */
	int err_fd; /* where STDERR frames go (2) */
	/* One outbound frame in flight (header + payload), sent without blocking. */
	uint8_t obuf[sizeof(struct agent_hdr) + AGENT_MAX_PAYLOAD];
	size_t olen, ooff;
	int pending_signal; /* queued while a frame is in flight; 0 if none */
	bool pending_winsize;
	uint16_t rows, cols;
	bool out_broken, err_broken;
	bool done; /* EXIT or ERROR received */
	struct agent_exit exit;
	char error[256]; /* ERROR text from the agent, or our own failure */
	uint8_t ibuf[AGENT_MAX_PAYLOAD];
};

/* Connects to the session's host-side vsock socket and asks for guest `port`
 * ("CONNECT <port>\n" -> "OK <hostport>\n"), waiting at most timeout_ms.
 * Returns the connected socket, or -1 with a one-line reason in err. */
int exec_client_connect(const char *uds, unsigned port, int timeout_ms, char *err, size_t errlen);

/* Sends the EXEC request on sock (taking ownership of it). flags: AGENT_EXEC_*.
 * Returns 0, or -1 with c->error set. */
int exec_client_start(struct exec_client *c, int sock, uint32_t flags, uint16_t rows, uint16_t cols,
		      const char *cwd, char *const argv[], char *const env[]);

/* Fills up to 2 pollfds (the socket, and stdin when it may be read); returns how many. */
int exec_client_pollfds(struct exec_client *c, struct pollfd *pfd);
/* Handles those pollfds' events. Returns 0 to go on, 1 when the exec is over
 * (c->exit or c->error), -1 on a failure (c->error). */
int exec_client_handle(struct exec_client *c, const struct pollfd *pfd, int n);

void exec_client_signal(struct exec_client *c, int sig);
void exec_client_winsize(struct exec_client *c, uint16_t rows, uint16_t cols);
void exec_client_close(struct exec_client *c);

#endif
