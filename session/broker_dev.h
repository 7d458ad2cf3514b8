/* SPDX-License-Identifier: Apache-2.0 */
/* session/broker_dev.h: the session's credential broker — a private bulkhead-broker
 * listening on the session's vsock port BROKER_VSOCK_PORT, started when the
 * session has a scope (rules); without one the guest has no way out at all. */
#ifndef BULKHEAD_SESSION_BROKER_DEV_H
#define BULKHEAD_SESSION_BROKER_DEV_H

#include "jail/jail.h"
#include "session/rundir.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct broker_dev {
	pid_t pid;	/* a private bulkhead-broker, 0 if not running */
	int ctl_fd;	/* registered with a shared broker: its control connection, else -1 */
	char sock[108]; /* vsock.sock_<BROKER_VSOCK_PORT> */
};

struct broker_opts {
	const char *scope;	/* rules JSON, as the caller named it */
	const char *scope_text; /* ... its text, as the plan read it: the one the broker gets */
	const char *vault;	/* NULL: no secrets */
	const char *ca_file;	/* NULL: the system trust store */
	const char *audit;	/* NULL: the default, one log per session (broker_dev.c) */
	const char *shared;	/* a shared broker's control socket: register there instead */
	const char *policy;	/* the global policy file, for a private broker; NULL: none */
	/* A pooled guest's session CA, key and certificate (broker/mitm_ca.h): the broker
	 * presents it, as its guest trusts it already. NULL: the broker makes its own. */
	const char *session_ca;
	bool unbound; /* a pooled guest's broker before its binding: no control socket */
};

/* ${XDG_STATE_HOME:-~/.local/state}/bulkhead/audit, made (0700) if missing. 0 or -errno. */
int broker_audit_dir(char *buf, size_t len);
/* ... its path alone, nothing made. 0 or -errno. */
int broker_audit_dir_path(char *buf, size_t len);
/* A private broker's audit log for session ID unless --audit names one: <audit dir>/ID.log
 * (`bulkhead start --json` shows it). 0 or -errno. */
int broker_audit_path(const char *id, char *buf, size_t len);

/* Returns 0, or -1 with a one-line reason in err. */
int broker_dev_start(struct broker_dev *b, const struct broker_opts *o, const struct rundir *rd,
		     int diag_fd, char *err, size_t errlen);
void broker_dev_stop(struct broker_dev *b);
/* A pooled guest bound to its session: the broker o names starts on a new socket (given to
 * the jail's ids, if any, as the vsock back end connects to it) that then takes the old one's
 * name in one rename, so each guest connection reaches the old broker or
 * the new one, never a mix; the old broker is stopped after (its open connections, all from
 * before the binding, are cut). On failure the old one is kept, unchanged. 0, or -1 with
 * err. */
int broker_dev_rebind(struct broker_dev *b, const struct broker_opts *o, const struct rundir *rd,
		      int diag_fd, const struct jail_ids *jail, char *err, size_t errlen);

#endif
