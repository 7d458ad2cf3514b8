/* SPDX-License-Identifier: Apache-2.0 */
/* session/vsock_dev.h: the session's vsock — one bulkhead-vsock back end per session,
 * its host-side sockets in the run directory, and the agent's ready listener. */
#ifndef BULKHEAD_SESSION_VSOCK_DEV_H
#define BULKHEAD_SESSION_VSOCK_DEV_H

#include "session/rundir.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VSOCK_GUEST_CID 3

struct vsock_dev {
	pid_t pid;	      /* bulkhead-vsock, 0 if not running */
	char vhost_sock[108]; /* vhost-user socket the engine connects to */
	char uds[108];	      /* vsock.sock: host programs reach guest ports here */
	char ready_path[108]; /* vsock.sock_<AGENT_READY_PORT>: the agent's ready call */
	int ready_lfd;	      /* listening on ready_path */
};

/* Starts bulkhead-vsock (from our bin directory) and listens for the agent. JAIL: the
 * session's jail ids (jail/jail_ids.h), NULL for none (--no-jail). Returns 0, or -1 with a
 * one-line reason in err. */
struct jail_ids;
int vsock_dev_start(struct vsock_dev *v, const struct rundir *rd, int diag_fd,
		    struct jail_ids *jail, char *err, size_t errlen);
/* Stops the back end and removes its sockets; safe to call twice. */
void vsock_dev_stop(struct vsock_dev *v);

#endif
