/* SPDX-License-Identifier: Apache-2.0 */
/* serve/serve_err.h: what went wrong, as the session table and the layers below HTTP say it.
 * Each failing call returns one of these with a one-line why; serve/http.c alone turns a
 * kind into a status (http_status_of(), docs/API.md "Errors"). */
#ifndef BULKHEAD_SERVE_SERVE_ERR_H
#define BULKHEAD_SERVE_SERVE_ERR_H

enum serve_err {
	SERVE_OK = 0,
	SERVE_E_INVALID,   /* malformed, unknown, out of range, or a path leaving the work dir */
	SERVE_E_FORBIDDEN, /* a tenant asking for what is not its own */
	SERVE_E_NOT_FOUND, /* no such session, exec, file or approval */
	SERVE_E_TIMEOUT,   /* a command did not read its stdin in time */
	SERVE_E_CONFLICT,  /* the state does not allow it: ended, read-only, the wrong kind */
	SERVE_E_TOO_LARGE, /* a body, a disk, an archive too big */
	SERVE_E_REFUSED,   /* the session could not start: the supervisor's own reason */
	SERVE_E_INTERNAL,  /* the daemon failed */
	SERVE_E_BUSY,	   /* out of capacity: sessions, or an exec's control pipe */
};

#endif
