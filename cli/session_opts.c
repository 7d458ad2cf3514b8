/* SPDX-License-Identifier: Apache-2.0 */
/* cli/session_opts.c: the options of `bulkhead run` and `bulkhead start`, parsed once into a
 * session request (cli/plan.h). Usage errors are one line on stderr and EXIT_BULKHEAD. */
#include "cli/plan.h"
#include "jail/jail.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_MIN_MIB 64
#define MEM_MAX_MIB (64 * 1024)
#define CPUS_MAX    32

static const char usage[] =
	"usage: bulkhead %s [OPTIONS]%s\n"
	"%s\n"
	"\n"
	"%s"
	"  --engine auto|kvm|qemu  which VMM runs the guest (default auto: see 'bulkhead doctor')\n"
	"  --mem MIB               guest memory, %d..%d (default 256)\n"
	"  --cpus N                vCPUs, 1..%d (default 1)\n"
	"  --timeout S             stop the VM after S seconds (exit 124)\n"
	"  --boot-timeout S        the guest must be up within S seconds, else the session\n"
	"                          fails (exit 125; default %d)\n"
	"  --work DIR[:ro]         share DIR with the guest at /work (CMD starts there);\n"
	"                          :ro makes it read-only, enforced on the host\n"
	"  --work-rule PATH:MODE   inside the share, PATH (relative) is rw, ro or hidden;\n"
	"                          the most specific rule wins, the share's mode is the\n"
	"                          default; enforced on the host (repeatable)\n"
	"  --share-secrets refuse|hide\n"
	"                          credential files found in the share (.env, a token in\n"
	"                          .git/config, keys, .npmrc, ...): refuse to start, naming\n"
	"                          them (default), or hide them from the guest\n"
	"  --share-allow PATH      share PATH as it is, credential or not (repeatable)\n"
	"  --image NAME            run on image NAME ('bulkhead image ls') as the root: "
	"read-only,\n"
	"                          with a private write layer; its PATH, HOME, user and working\n"
	"                          directory apply, and its command when CMD is not given\n"
	"  --disk MIB              the write layer's size (default %d; it counts against\n"
	"                          --mem-limit)\n"
	"  --keep-changes DIR      the write layer in DIR (new or empty; made 0700: it holds the\n"
	"                          guest's files), left there afterwards\n"
	"  --scope FILE            the session's network scope: broker rules (JSON); without\n"
	"                          it the guest reaches nothing\n"
	"  --vault FILE            secrets for the scope's rules (see 'bulkhead vault')\n"
	"  --ca-file FILE          trust only this CA for the broker's upstream TLS\n"
	"  --audit FILE            the broker's audit log (default: one per session under\n"
	"                          ~/.local/state/bulkhead/audit/; 'bulkhead audit verify')\n"
	"  --policy FILE           the global policy (default /etc/bulkhead/policy.json when it\n"
	"                          exists): what no session may do, limits, approval rules\n"
	"  --broker SOCK           register with a shared broker ('bulkhead broker') at its\n"
	"                          control socket SOCK instead of starting a private one\n"
	"                          (default: $BULKHEAD_BROKER when set)\n"
	"  -e, --env KEY=VALUE     set an environment variable for CMD (not for secrets)\n"
	"  -i, --interactive       forward our stdin to CMD (else CMD reads /dev/null)\n"
	"  -t, --tty               run CMD on a pseudo-terminal (with -i: an interactive shell)\n"
	"  --kernel PATH           guest kernel: ELF vmlinux or bzImage\n"
	"  --initrd PATH           guest initramfs\n"
	"  --console FILE          write the guest's whole serial console to FILE\n"
	"  -v, --verbose           show the guest's serial console on stderr\n"
	"  --mem-limit MIB         host memory the whole session may use: guest RAM, VMM and\n"
	"                          back ends (default: --mem + 512); over it, it ends\n"
	"  --no-jail               start the VM and its back ends unjailed (debugging only; a\n"
	"                          global policy may forbid it)\n"
	"  --jail-uid UID[:GID]    as root: the ids the jailed VM and back ends run as\n"
	"                          (default: a free one of the session's own, from %u)\n"
	"  --ram-file FILE         back guest RAM with FILE (new; qemu engine) and keep it\n"
	"                          after the session: what the guest held, for inspection\n"
	"\n"
	"Exit codes: CMD's own; 128+N if CMD died by signal N; 124 timeout; 125 bulkhead failed.\n";

static const char run_what[] =
	"Runs CMD in a fresh microVM; its stdout/stderr become ours, its exit code ours.";
static const char start_what[] =
	"Starts a session in a fresh microVM and prints its id; run commands in it with\n"
	"'bulkhead exec ID -- CMD', stop it with 'bulkhead stop ID'.";

/* start's own options, first in its --help. */
static const char start_only[] =
	"  --log FILE              once the session is ready, its own messages (how it ended:\n"
	"                          a guest that crashed, a timeout, a stop) are appended to\n"
	"                          FILE (made 0600; default: nowhere)\n"
	"  --json                  once the session is ready, print it as one JSON object with\n"
	"                          the API's field names (docs/API.md, \"Sessions\"): id, state\n"
	"                          (\"running\"), pooled (false), image (or null), work (an\n"
	"                          absolute path, or null), work_ro, broker (\"private\",\n"
	"                          \"shared\" or null: no scope), audit_log (the private broker's\n"
	"                          log; null without one: a shared broker keeps its own),\n"
	"                          mem_mib, cpus, timeout_s (0: none), created_at (Unix seconds)\n";

static const char *command = "run"; /* or "start": for messages */

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bulkhead %s: ", command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see 'bulkhead %s --help')\n", command);
	va_end(ap);
	return EXIT_BULKHEAD;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

enum {
	OPT_ENGINE = 256,
	OPT_MEM,
	OPT_CPUS,
	OPT_TIMEOUT,
	OPT_BOOT_TIMEOUT,
	OPT_KERNEL,
	OPT_INITRD,
	OPT_CONSOLE,
	OPT_WORK,
	OPT_SCOPE,
	OPT_VAULT,
	OPT_CA_FILE,
	OPT_AUDIT,
	OPT_BROKER,
	OPT_RAM_FILE,
	OPT_POLICY,
	OPT_NO_JAIL,
	OPT_JAIL_UID,
	OPT_MEM_LIMIT,
	OPT_IMAGE,
	OPT_DISK,
	OPT_KEEP_CHANGES,
	OPT_JSON,
	OPT_LOG,
	OPT_WORK_RULE,
	OPT_SHARE_SECRETS,
	OPT_SHARE_ALLOW,
};

static const struct option longopts[] = {
	{ "engine", required_argument, NULL, OPT_ENGINE },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "boot-timeout", required_argument, NULL, OPT_BOOT_TIMEOUT },
	{ "kernel", required_argument, NULL, OPT_KERNEL },
	{ "initrd", required_argument, NULL, OPT_INITRD },
	{ "console", required_argument, NULL, OPT_CONSOLE },
	{ "work", required_argument, NULL, OPT_WORK },
	{ "scope", required_argument, NULL, OPT_SCOPE },
	{ "vault", required_argument, NULL, OPT_VAULT },
	{ "ca-file", required_argument, NULL, OPT_CA_FILE },
	{ "audit", required_argument, NULL, OPT_AUDIT },
	{ "broker", required_argument, NULL, OPT_BROKER },
	{ "ram-file", required_argument, NULL, OPT_RAM_FILE },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "no-jail", no_argument, NULL, OPT_NO_JAIL },
	{ "jail-uid", required_argument, NULL, OPT_JAIL_UID },
	{ "mem-limit", required_argument, NULL, OPT_MEM_LIMIT },
	{ "image", required_argument, NULL, OPT_IMAGE },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "keep-changes", required_argument, NULL, OPT_KEEP_CHANGES },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "work-rule", required_argument, NULL, OPT_WORK_RULE },
	{ "share-secrets", required_argument, NULL, OPT_SHARE_SECRETS },
	{ "share-allow", required_argument, NULL, OPT_SHARE_ALLOW },
	{ "env", required_argument, NULL, 'e' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "interactive", no_argument, NULL, 'i' },
	{ "tty", no_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* Options whose value is kept as it is: where in the request it goes. */
static const char **text_option(int c, struct session_request *o)
{
	switch (c) {
	case OPT_KERNEL:
		return &o->kernel;
	case OPT_INITRD:
		return &o->initrd;
	case OPT_CONSOLE:
		return &o->console_path;
	case OPT_WORK:
		return &o->work;
	case OPT_SCOPE:
		return &o->broker.scope;
	case OPT_VAULT:
		return &o->broker.vault;
	case OPT_CA_FILE:
		return &o->broker.ca_file;
	case OPT_AUDIT:
		return &o->broker.audit;
	case OPT_BROKER:
		return &o->broker.shared;
	case OPT_POLICY:
		return &o->policy;
	case OPT_JAIL_UID:
		return &o->jail_uid;
	case OPT_IMAGE:
		return &o->image;
	case OPT_KEEP_CHANGES:
		return &o->keep_changes;
	}
	return NULL;
}

/* Options with a value to check. -1 when taken, else the exit code (a usage error). */
static int value_option(int c, char *arg, struct session_request *o)
{
	char *end;
	switch (c) {
	case OPT_ENGINE:
		if (engine_parse(arg, &o->engine) < 0)
			return bad("--engine '%s': expected auto, kvm or qemu", arg);
		return -1;
	case OPT_MEM:
		if (parse_uint(arg, MEM_MIN_MIB, MEM_MAX_MIB, &o->mem_mib) < 0)
			return bad("--mem '%s': expected MiB between %d and %d", arg, MEM_MIN_MIB,
				   MEM_MAX_MIB);
		return -1;
	case OPT_CPUS:
		if (parse_uint(arg, 1, CPUS_MAX, &o->cpus) < 0)
			return bad("--cpus '%s': expected 1 to %d", arg, CPUS_MAX);
		return -1;
	case OPT_TIMEOUT:
		errno = 0;
		o->timeout_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->timeout_s > 0) || o->timeout_s > 1e7)
			return bad("--timeout '%s': expected seconds > 0", arg);
		return -1;
	case OPT_BOOT_TIMEOUT:
		if (parse_uint(arg, 1, 86400, &o->boot_timeout_s) < 0)
			return bad("--boot-timeout '%s': expected seconds, 1 to 86400", arg);
		return -1;
	case OPT_MEM_LIMIT:
		if (parse_uint(arg, 64, 1 << 22, &o->mem_limit_mib) < 0)
			return bad("--mem-limit '%s': expected MiB, 64 or more", arg);
		return -1;
	case OPT_DISK:
		if (parse_uint(arg, 16, 1 << 20, &o->disk_mib) < 0)
			return bad("--disk '%s': expected MiB, 16 to %d", arg, 1 << 20);
		return -1;
	case OPT_RAM_FILE:
		if (!*arg || strchr(arg, ','))
			return bad("--ram-file '%s': expected a path without commas", arg);
		o->ram_file = arg;
		return -1;
	case OPT_WORK_RULE:
		if (o->nwork_rules == SHARE_RULES_MAX)
			return bad("--work-rule: more than %d", SHARE_RULES_MAX);
		o->work_rules[o->nwork_rules++] = arg;
		return -1;
	case OPT_SHARE_SECRETS:
		if (strcmp(arg, "refuse") && strcmp(arg, "hide"))
			return bad("--share-secrets '%s': expected refuse or hide", arg);
		o->share_secrets = arg;
		return -1;
	case OPT_SHARE_ALLOW:
		if (o->nshare_allow == SHARE_RULES_MAX)
			return bad("--share-allow: more than %d", SHARE_RULES_MAX);
		o->share_allow[o->nshare_allow++] = arg;
		return -1;
	case 'e':
		if (!strchr(arg, '=') || arg[0] == '=')
			return bad("--env '%s': expected KEY=VALUE", arg);
		if (o->nenv == RUN_MAX_ENV)
			return bad("--env: more than %d variables", RUN_MAX_ENV);
		o->env[o->nenv++] = arg;
		return -1;
	}
	return bad("unknown option");
}

/* What no single option can say: combinations, the environment, the command. */
static int check_request(int argc, char **argv, bool detached, struct session_request *o)
{
	if (o->no_jail && o->jail_uid)
		return bad("--jail-uid and --no-jail do not go together");
	if (!o->broker.shared && getenv("BULKHEAD_BROKER") && *getenv("BULKHEAD_BROKER"))
		o->broker.shared = getenv("BULKHEAD_BROKER");
	if (o->broker.shared && !o->broker.scope)
		o->broker.shared = NULL; /* no scope: no way out, so nothing to register */
	if (o->broker.shared && (o->broker.vault || o->broker.ca_file || o->broker.audit))
		return bad("--vault, --ca-file and --audit belong to the shared broker "
			   "(bulkhead broker) when --broker or BULKHEAD_BROKER is given");
	if ((o->disk_mib || o->keep_changes) && !o->image)
		return bad("--disk and --keep-changes are for sessions on an --image");
	if (o->disk_mib && o->keep_changes)
		return bad(
			"--disk sizes the tmpfs write layer; with --keep-changes the layer is DIR, "
			"on DIR's file system (give one or the other)");
	if (optind >= argc) /* an image may bring its own command */
		return detached || o->image ? -1 : bad("no command given");
	if (detached)
		return bad(
			"bulkhead start takes no command; run one with 'bulkhead exec ID -- CMD'");
	o->argv = argv + optind;
	return -1; /* parsed; go on */
}

int session_opts_parse(int argc, char **argv, bool detached, struct session_request *o)
{
	int c;
	command = detached ? "start" : "run";
	o->detached = detached;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, which starts the guest command. */
	while ((c = getopt_long(argc, argv, "+e:vhit", longopts, NULL)) != -1) {
		const char **text = text_option(c, o);
		int rc;
		switch (c) {
		case OPT_NO_JAIL:
			o->no_jail = true;
			break;
		case OPT_JSON:
			if (!detached)
				return bad("--json is for 'bulkhead start' (run's output is the "
					   "command's own)");
			o->json = true;
			break;
		case OPT_LOG:
			if (!detached)
				return bad("--log is for 'bulkhead start' (run's messages are on "
					   "its stderr)");
			o->log_path = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'i':
			o->interactive = true;
			break;
		case 't':
			o->tty = true;
			break;
		case 'h':
			printf(usage, detached ? "start" : "run",
			       detached ? "" : " [--] CMD [ARG...]",
			       detached ? start_what : run_what, detached ? start_only : "",
			       MEM_MIN_MIB, MEM_MAX_MIB, CPUS_MAX, BOOT_TIMEOUT_DEFAULT_S,
			       SHARE_IMAGE_DISK_MIB, JAIL_UID_FIRST);
			return 0;
		case ':':
			return bad("option '%s' needs a value", argv[optind - 1]);
		case '?':
			return bad("unknown option '%s'", argv[optind - 1]);
		default:
			if (text) {
				*text = optarg;
				break;
			}
			if ((rc = value_option(c, optarg, o)) >= 0)
				return rc;
		}
	}
	return check_request(argc, argv, detached, o);
}
