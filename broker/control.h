/* broker/control.h: the shared broker's control socket. `bulkhead run` connects, sends one
 * registration — the session id, its scope, and (as SCM_RIGHTS) the listening socket of the
 * session's broker vsock port — and keeps the connection open for the session's life. When it
 * closes, whatever the reason (exit, crash, kill -9), the session is revoked.
 *
 * Registration, one JSON line:  {"op":"register","session":ID,"scope":{...rules...}}
 * Answer, one JSON line:        {"ok":true} or {"ok":false,"error":"..."}
 *
 * The same socket answers `bulkhead approvals` (one request, one answer each):
 *   {"op":"approvals.list"}                        -> {"ok":true,"approvals":[...]}
 *   {"op":"approvals.decide","id":ID,"approve":B,"reason":R} -> {"ok":true} or an error
 * A private (one-session) broker serves these too, and refuses registrations.
 *
 * Only the broker's own user (or root) may connect: the peer's credentials are checked on
 * every connection, and the socket is made mode 0600. No vsock port leads here. */
#ifndef BULKHEAD_BROKER_CONTROL_H
#define BULKHEAD_BROKER_CONTROL_H

#include "broker/session.h"

#define CONTROL_MAX_MSG (1 << 20) /* a registration, scope included */

/* Serves the control socket at PATH forever; audit logs go to AUDIT_DIR/<session>.log (NULL:
 * none). Returns only on a set-up failure, with one line in err. */
int control_serve(const char *path, const struct broker_common *common, const char *audit_dir,
		  int registrations, char *err, size_t errlen);

#endif
