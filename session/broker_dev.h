/* SPDX-License-Identifier: Apache-2.0 */
/* session/broker_dev.h: the session's credential broker — a private bulkhead-broker
 * listening on the session's vsock port BROKER_VSOCK_PORT, started when the
 * session has a scope (rules); without one the guest has no way out at all. */
#ifndef BULKHEAD_SESSION_BROKER_DEV_H
#define BULKHEAD_SESSION_BROKER_DEV_H

#include "jail/jail.h"
#include "jail/proc.h"
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
	/* A private broker's process, forked ahead (jail/proc.h), or NULL: forked now. */
	struct proc_spawner *spawner;
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
/* How long a private broker may take to load its session (broker_dev_rebind waits). */
#define BROKER_START_MS 10000
/* A pooled guest bound to its session: the broker o names starts on a new socket (given to
 * the jail's ids, if any, as the vsock back end connects to it), and once it has started its
 * session (a shared one answered the registration; a private one made its control socket)
 * that socket takes b's name in one rename. So each guest connection reaches the old broker or
 * the new one, never a mix. The old one goes to *old: it keeps the connections made before
 * (refusing each, and recording it) until the caller stops it. On failure b is unchanged.
 * 0, or -1 with err. */
int broker_dev_rebind(struct broker_dev *b, struct broker_dev *old, const struct broker_opts *o,
		      const struct rundir *rd, int diag_fd, const struct jail_ids *jail, char *err,
		      size_t errlen);

#endif
