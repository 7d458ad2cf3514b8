/* SPDX-License-Identifier: Apache-2.0 */
/* broker/control.h: the shared broker's control socket. `bulkhead run` connects, sends one
 * registration — the session id, its scope, and (as SCM_RIGHTS) the listening socket of the
 * session's broker vsock port — and keeps the connection open for the session's life. When it
 * closes, whatever the reason (exit, crash, kill -9), the session is revoked.
 *
 * The messages, versioned, are in lib/control_proto.h. The same socket answers `bulkhead
 * approvals` (one request, one answer each). A private (one-session) broker serves those
 * too, and refuses registrations.
 *
 * Only the broker's own user (or root) may connect: the peer's credentials are checked on
 * every connection, and the socket is made mode 0600. No vsock port leads here. */
#ifndef BULKHEAD_BROKER_CONTROL_H
#define BULKHEAD_BROKER_CONTROL_H

#include "broker/session.h"

/* Serves the control socket at PATH forever; audit logs go to AUDIT_DIR/<session>.log (NULL:
 * none). Returns only on a set-up failure, with one line in err. */
int control_serve(const char *path, const struct broker_common *common, const char *audit_dir,
		  int registrations, char *err, size_t errlen);

#endif
