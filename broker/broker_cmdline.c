/* SPDX-License-Identifier: Apache-2.0 */
/* broker/broker_cmdline.c: bulkhead-broker's command line (see broker_cmdline.h). */
#include "broker/broker_cmdline.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/session.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-broker --listen PATH|--listen-fd N --rules FILE [options]\n"
		"       bulkhead-broker --control PATH [--audit-dir DIR] [options]\n"
		"One session (the first form, as `bulkhead run` starts a private broker):\n"
		"  --listen PATH        Unix socket the guest's connections arrive on\n"
		"  --listen-fd N        or: a socket the launcher already listens on\n"
		"  --rules FILE         the session's scope: injection rules and allow-list "
		"(JSON)\n"
		"  --audit FILE         append one hash-chained JSON line per request\n"
		"  --session ID         the session named in audit records\n"
		"  --session-ca-fd N    a pooled guest's session CA (key and certificate, PEM)\n"
		"                       on descriptor N, which its guest already trusts; the\n"
		"                       audit log begins with the binding's record\n"
		"  --control PATH       (optional) where `bulkhead approvals` reaches it\n"
		"A shared broker (sessions register over the control socket, "
		"lib/control_proto.h):\n"
		"  --control PATH       the control socket (mode 0600; your user and root only)\n"
		"  --audit-dir DIR      one audit log per session: DIR/<session>.log\n"
		"Both:\n"
		"  --vault FILE         secrets from this vault (bulkhead vault)\n"
		"  --key-file FILE      its key file (default: the vault's path + \".key\")\n"
		"  --secrets-file FILE  development/test secrets: JSON {name: value}, mode 0600\n"
		"  --ca-file FILE       trust only this CA for upstreams (default: system)\n"
		"  --policy FILE        the global policy (JSON; policy.h): denials that no scope\n"
		"                       can lift, rules that hold requests for approval\n"
		"  --io-timeout S       seconds either side of a connection may stay silent "
		"(default 30)\n"
		"  --head-timeout S     seconds a request's whole head may take (default 20)\n"
		"  --stream-idle-timeout S\n"
		"                       seconds a streamed answer (SSE, NDJSON) may stay silent\n"
		"                       between messages, in place of --io-timeout (default 3600)\n"
		"  --max-conns N        open guest connections per session (default and most "
		"1024)\n"
		"  --max-conns-total N  open guest connections in all (default: what the file\n"
		"                       descriptor limit allows, at most 32768); when full, a\n"
		"                       session under its fair share takes a connection (idle\n"
		"                       first) of the session furthest over its own\n"
		"  --idle-timeout S     seconds a connection may wait between requests (default "
		"60)\n"
		"  --max-active N       a session's connections served at once, each with a\n"
		"                       thread; its others wait their turn (default 64)\n"
		"  --event-loop KIND    auto (io_uring, else epoll), uring or epoll\n"
		"  --audit-max-bytes N  the most one session's audit log may grow to; past it,\n"
		"                       or with no room on its disk, the session's requests are\n"
		"                       refused (default 1073741824)\n"
		"  --buffer-limit-session BYTES\n"
		"                       what one session's bodies buffered whole (a request's\n"
		"                       body re-measured, a decoded answer) may take at once\n"
		"                       (default 67108864)\n"
		"  --buffer-limit-total BYTES\n"
		"                       what all sessions' may (default 536870912)\n"
		"  --hold-limit-session BYTES,COUNT\n"
		"                       what one session may hold for approval (default "
		"67108864,64)\n"
		"  --hold-limit-total BYTES,COUNT\n"
		"                       what all sessions may (default 268435456,1024)\n"
		"  --quiet              no per-request log lines\n");
}

/* One option's value into c. Returns -1 to go on, or the status to exit with. */
static int take(int o, struct broker_cmdline *c)
{
	char *end;

	switch (o) {
	case 'l':
		c->listen_path = optarg;
		break;
	case 'r':
		c->rules_path = optarg;
		break;
	case 's':
		c->secrets_path = optarg;
		break;
	case 'f':
		c->listen_fd = optarg; /* checked when adopted */
		break;
	case 'v':
		c->vault_path = optarg;
		break;
	case 'a':
		c->audit_path = optarg;
		break;
	case 'A':
		c->audit_dir = optarg;
		break;
	case 'C':
		c->control = optarg;
		break;
	case 'S':
		c->session = optarg;
		break;
	case 'k':
		c->key_file = optarg;
		break;
	case 'c':
		c->ca = optarg;
		break;
	case 'K':
		c->session_ca_fd = optarg;
		break;
	case 'q':
		c->quiet = true;
		break;
	case 't':
		c->io_timeout_s = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->io_timeout_s < 1 || c->io_timeout_s > 3600) {
			fprintf(stderr, "bulkhead-broker: --io-timeout: 1 to 3600 seconds\n");
			return 2;
		}
		break;
	case 'P':
		c->policy_path = optarg;
		break;
	case 'Y':
		c->stream_idle_s = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->stream_idle_s < 1 || c->stream_idle_s > 86400) {
			fprintf(stderr,
				"bulkhead-broker: --stream-idle-timeout: 1 to 86400 seconds\n");
			return 2;
		}
		break;
	case 'H':
		c->head_timeout_s = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->head_timeout_s < 1 || c->head_timeout_s > 3600) {
			fprintf(stderr, "bulkhead-broker: --head-timeout: 1 to 3600 seconds\n");
			return 2;
		}
		break;
	case 'M':
		c->max_conns = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->max_conns < 1 ||
		    c->max_conns > BROKER_SESSION_MAX_CONNS) {
			fprintf(stderr, "bulkhead-broker: --max-conns: 1 to %d\n",
				BROKER_SESSION_MAX_CONNS);
			return 2;
		}
		break;
	case 'N':
		c->max_conns_total = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->max_conns_total < 1 ||
		    c->max_conns_total > 1000000) {
			fprintf(stderr, "bulkhead-broker: --max-conns-total: 1 to 1000000\n");
			return 2;
		}
		break;
	case 'W':
		c->max_active = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->max_active < 1 || c->max_active > 1024) {
			fprintf(stderr, "bulkhead-broker: --max-active: 1 to 1024\n");
			return 2;
		}
		break;
	case 'I':
		c->idle_timeout_s = strtol(optarg, &end, 10);
		if (*end || end == optarg || c->idle_timeout_s < 1 || c->idle_timeout_s > 86400) {
			fprintf(stderr, "bulkhead-broker: --idle-timeout: 1 to 86400 seconds\n");
			return 2;
		}
		break;
	case 'E':
		if (strcmp(optarg, "auto") && strcmp(optarg, "uring") && strcmp(optarg, "epoll")) {
			fprintf(stderr, "bulkhead-broker: --event-loop: auto, uring or epoll\n");
			return 2;
		}
		c->event_loop = optarg;
		break;
	case 'b':
	case 'B':
		if (hold_budget_parse(optarg,
				      o == 'b' ? &c->hold_session_bytes : &c->hold_total_bytes,
				      o == 'b' ? &c->hold_session_reqs : &c->hold_total_reqs)) {
			fprintf(stderr,
				"bulkhead-broker: --hold-limit-%s: BYTES,COUNT, both above 0\n",
				o == 'b' ? "session" : "total");
			return 2;
		}
		break;
	case 'Q': {
		unsigned long long v = strtoull(optarg, &end, 10);
		if (*end || end == optarg || *optarg == '-' || v < 65536) {
			fprintf(stderr, "bulkhead-broker: --audit-max-bytes: at least 65536\n");
			return 2;
		}
		c->audit_quota = v;
		break;
	}
	case 'u':
	case 'U': {
		unsigned long long v = strtoull(optarg, &end, 10);
		if (*end || end == optarg || *optarg == '-' || v < 65536 || v > (1ULL << 40)) {
			fprintf(stderr, "bulkhead-broker: --buffer-limit-%s: 65536 to 2^40 bytes\n",
				o == 'u' ? "session" : "total");
			return 2;
		}
		*(o == 'u' ? &c->buf_session_bytes : &c->buf_total_bytes) = (size_t)v;
		break;
	}
	case 'h':
		usage(stdout);
		return 0;
	case 'T':
		c->selftest = true; /* test hook: lock down, then try to start a process */
		break;
	default:
		usage(stderr);
		return 2;
	}
	return -1;
}

int broker_cmdline_parse(int argc, char **argv, struct broker_cmdline *c)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "rules", required_argument, NULL, 'r' },
		{ "secrets-file", required_argument, NULL, 's' },
		{ "listen-fd", required_argument, NULL, 'f' },
		{ "vault", required_argument, NULL, 'v' },
		{ "audit", required_argument, NULL, 'a' },
		{ "audit-dir", required_argument, NULL, 'A' },
		{ "control", required_argument, NULL, 'C' },
		{ "session", required_argument, NULL, 'S' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "ca-file", required_argument, NULL, 'c' },
		{ "session-ca-fd", required_argument, NULL, 'K' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "io-timeout", required_argument, NULL, 't' },
		{ "policy", required_argument, NULL, 'P' },
		{ "head-timeout", required_argument, NULL, 'H' },
		{ "stream-idle-timeout", required_argument, NULL, 'Y' },
		{ "max-conns", required_argument, NULL, 'M' },
		{ "max-conns-total", required_argument, NULL, 'N' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "max-active", required_argument, NULL, 'W' },
		{ "event-loop", required_argument, NULL, 'E' },
		{ "audit-max-bytes", required_argument, NULL, 'Q' },
		{ "buffer-limit-session", required_argument, NULL, 'u' },
		{ "buffer-limit-total", required_argument, NULL, 'U' },
		{ "hold-limit-session", required_argument, NULL, 'b' },
		{ "hold-limit-total", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ "harden-selftest", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	int o, rc;

	*c = (struct broker_cmdline){
		.session = "-",
		.io_timeout_s = 30,
		.head_timeout_s = 20,
		.stream_idle_s = 3600,
		.max_conns = BROKER_SESSION_MAX_CONNS,
		.idle_timeout_s = 60,
		.max_active = 64,
		.event_loop = "auto",
		.audit_quota = 1ULL << 30,
		.buf_session_bytes = (size_t)64 << 20,
		.buf_total_bytes = (size_t)512 << 20,
		.hold_session_bytes = HOLD_BUDGET_SESSION_BYTES,
		.hold_session_reqs = HOLD_BUDGET_SESSION_REQS,
		.hold_total_bytes = HOLD_BUDGET_TOTAL_BYTES,
		.hold_total_reqs = HOLD_BUDGET_TOTAL_REQS,
	};
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if ((rc = take(o, c)) >= 0)
			return rc;
	/* Either one session (a socket and its scope, no audit directory) or the shared broker
	 * (a control socket, no scope or single audit log); secrets from one source. */
	if (optind != argc || (c->vault_path && c->secrets_path) ||
	    (!c->listen_path && !c->listen_fd
		     ? !c->control || c->rules_path || c->audit_path
		     : (c->listen_path && c->listen_fd) || !c->rules_path || c->audit_dir) ||
	    (c->session_ca_fd && !c->listen_fd)) {
		usage(stderr);
		return 2;
	}
	if (!c->control && strcmp(c->session, "-") && !broker_session_id_ok(c->session)) {
		fprintf(stderr, "bulkhead-broker: --session: 1 to %d of A-Z a-z 0-9 _ -\n",
			BROKER_SESSION_ID_MAX);
		return 2;
	}
	return -1;
}
