/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/options.c: bulkhead-vsock's command line (see options.h). */
#include "vsock/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *f)
{
	fputs("usage: bulkhead-vsock --socket PATH|--listen-fd N --guest-cid N --uds-path PREFIX "
	      "[-v]\n"
	      "  --socket PATH     vhost-user socket to listen on for the VMM (front end)\n"
	      "  --listen-fd N     or: a listening socket the launcher passes as descriptor N\n"
	      "  --guest-cid N     the guest's context ID (3 .. 2^32-2)\n"
	      "  --uds-path PREFIX host programs connect to PREFIX (\"CONNECT <port>\\n\");\n"
	      "                    guest connections to port P go to PREFIX_P\n"
	      "  -v                print counters on exit\n"
	      "  --no-seccomp      do not install the system-call allow-list (debugging only)\n"
	      "  --jail-selftest   test hook: report what the jail allows, then make a\n"
	      "                    forbidden call (the process must die of SIGSYS)\n",
	      f);
}

/* 0-2 are reserved (hypervisor, local, host); -1 is VMADDR_CID_ANY. */
static int parse_cid(const char *arg, uint64_t *cid)
{
	char *end;

	errno = 0;
	*cid = strtoull(arg, &end, 10);
	if (errno || *end || arg[0] < '0' || arg[0] > '9' || *cid < 3 || *cid >= UINT32_MAX) {
		fprintf(stderr, "bulkhead-vsock: bad --guest-cid '%s': want 3 .. 4294967294\n",
			arg);
		return -1;
	}
	return 0;
}

int vsock_options_parse(int argc, char **argv, struct vsock_opts *o)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen-fd", required_argument, NULL, 'f' },
		{ "guest-cid", required_argument, NULL, 'c' },
		{ "uds-path", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ "no-seccomp", no_argument, NULL, 'n' },
		{ "jail-selftest", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct vsock_opts){ 0 };
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->sock_path = optarg;
			break;
		case 'f':
			/* A socket the launcher already listens on: no window in which the
			 * front end could try to connect before we exist. Checked when adopted. */
			o->given_fd = optarg;
			break;
		case 'u':
			o->uds = optarg;
			break;
		case 'c':
			if (parse_cid(optarg, &o->cid))
				return 2;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'n':
			o->no_seccomp = true;
			break;
		case 'J':
			o->selftest = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((!o->sock_path) == (!o->given_fd) || !o->uds || !o->cid || optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}
