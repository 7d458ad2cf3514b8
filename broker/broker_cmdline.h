/* SPDX-License-Identifier: Apache-2.0 */
/* broker/broker_cmdline.h: bulkhead-broker's command line — one session's broker (a socket and
 * its scope) or the shared broker (a control socket), and the sources both read. */
#ifndef BULKHEAD_BROKER_BROKER_CMDLINE_H
#define BULKHEAD_BROKER_BROKER_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

struct broker_cmdline {
	/* One session: its socket (a path, or a descriptor the launcher listens on), scope,
	 * audit log and name. */
	const char *listen_path, *listen_fd, *rules_path, *audit_path, *session;
	/* The control socket: the shared broker's, or (with --listen) a private one's. */
	const char *control, *audit_dir;
	const char *vault_path, *key_file, *secrets_path, *ca, *policy_path;
	/* --session-ca-fd: a late-bound session's CA (broker/session.h), read from it */
	const char *session_ca_fd;
	long io_timeout_s, head_timeout_s, stream_idle_s, max_conns;
	/* The connection loop (loop.h): its backend and bounds. */
	long max_conns_total, idle_timeout_s, max_active;
	const char *event_loop; /* "auto", "uring" or "epoll" */
	/* Budgets for requests held for approval (hold_budget.h). */
	size_t hold_session_bytes, hold_session_reqs, hold_total_bytes, hold_total_reqs;
	/* Budgets for bodies buffered whole, in bytes. */
	size_t buf_session_bytes, buf_total_bytes;
	unsigned long long audit_quota; /* --audit-max-bytes */
	bool quiet;
	bool selftest; /* --harden-selftest: lock down, then try to start a process */
};

/* Parses and checks argv into c. Returns -1 to go on, or the status to exit with at once: 0
 * after --help, 2 after a usage error (with its line on stderr). */
int broker_cmdline_parse(int argc, char **argv, struct broker_cmdline *c);

#endif
