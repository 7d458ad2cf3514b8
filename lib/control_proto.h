/* SPDX-License-Identifier: Apache-2.0 */
/* lib/control_proto.h: the control protocol between the host's `bulkhead` commands and
 * bulkhead-broker (its control socket: broker/control.c; clients: session/broker_dev.c,
 * cli/approvals_cmd.c). Host only: no vsock port leads to a control socket.
 *
 * Transport: a Unix stream socket; one request, one JSON object on one line ending in '\n'
 * (at most CONTROL_MAX_MSG bytes), answered by one JSON line. Every request names the
 * protocol version and an operation:
 *
 *   {"v":1,"op":"register","session":ID,"scope":{...}[,"ca":PEM]}
 *        + the session's listening socket (SCM_RIGHTS); answered, then the connection stays
 *        open for the session's life: when it closes, the session is revoked. "ca": a pooled
 *        guest's session CA, key and certificate (broker/mitm_ca.h), which its guest already
 *        trusts; the session's audit log then begins with the binding's record.
 *   {"v":1,"op":"approvals.list"}                        -> {"ok":true,"approvals":[...]}
 *   {"v":1,"op":"approvals.decide","id":ID,"approve":B[,"reason":R]}
 *
 * Answers: {"ok":true[,...]} or {"ok":false,"error":"..."}. That shape is the same in every
 * version, so a client of another version can read why it was refused. A request without
 * "v", with another version, with an unknown "op" or with a key its op does not take is
 * refused, never served in part.
 */
#ifndef BULKHEAD_LIB_CONTROL_PROTO_H
#define BULKHEAD_LIB_CONTROL_PROTO_H

/* Bumped whenever a request or an answer changes meaning. */
#define CONTROL_PROTO_VERSION 1

#define CONTROL_KEY_VERSION "v"
#define CONTROL_KEY_OP	    "op"

#define CONTROL_OP_REGISTER	    "register"
#define CONTROL_OP_APPROVALS_LIST   "approvals.list"
#define CONTROL_OP_APPROVALS_DECIDE "approvals.decide"

#define CONTROL_MAX_MSG (1 << 20) /* one request line, a registration's scope included */

#endif
