/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/options.h: bulkhead-vsock's command line — where the front end and the host's programs
 * reach it and which guest it serves, every value checked before anything is opened. */
#ifndef BULKHEAD_VSOCK_OPTIONS_H
#define BULKHEAD_VSOCK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

struct vsock_opts {
	const char *sock_path; /* --socket: listen here for the front end, or */
	const char *given_fd;  /* --listen-fd: a socket the launcher already listens on */
	const char *uds;       /* --uds-path: the host's side, PREFIX and PREFIX_<port> */
	uint64_t cid;	       /* --guest-cid */
	bool verbose;	       /* -v: counters on exit */
	bool no_seccomp;       /* --no-seccomp: no allow-list (debugging) */
	bool selftest;	       /* --jail-selftest: report, probe, die of SIGSYS */
};

/* Parses and checks argv into o. Returns -1 to go on, or the status to exit with at once: 0
 * after --help, 2 after a usage error (with its line on stderr). */
int vsock_options_parse(int argc, char **argv, struct vsock_opts *o);

#endif
