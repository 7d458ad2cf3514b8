/* SPDX-License-Identifier: Apache-2.0 */
/* cli/main.c: the `bulkhead` command — one table of subcommands. */
#include "cli/bench.h"
#include "cli/broker_cmds.h"
#include "cli/doctor.h"
#include "session/exit_codes.h"
#include "cli/session_cmds.h"
#include "image/image.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage; /* one line for `bulkhead help` */
};

static const struct command commands[] = {
	{ "run", cmd_run, "run [OPTIONS] -- CMD [ARG...]   run CMD in a fresh microVM" },
	{ "start", cmd_start, "start [OPTIONS]                 start a session and print its id" },
	{ "exec", cmd_exec, "exec [-i] [-t] ID -- CMD        run CMD in session ID" },
	{ "stop", cmd_stop, "stop ID                         end session ID" },
	{ "pause", cmd_pause,
	  "pause ID                        save session ID's guest to disk and stop its VM" },
	{ "resume", cmd_resume,
	  "resume ID                       bring a paused session back in a new VM" },
	{ "serve", cmd_serve,
	  "serve [--socket P] [--pool N]   the session API daemon for platforms (docs/API.md)" },
	{ "doctor", cmd_doctor,
	  "doctor                          what this host can run, and which engine 'auto' picks" },
	{ "bench", cmd_bench,
	  "bench boot [-n N] [--json]      boot latency of the engine, phase by phase" },
	{ "vault", cmd_vault,
	  "vault COMMAND [NAME] [OPTIONS]  the broker's encrypted secrets (init, put, list, rm,\n"
	  "                                  rotate-key); values only from stdin or a file" },
	{ "broker", cmd_broker,
	  "broker [--control PATH] [OPTS]  a shared credential broker sessions register with" },
	{ "policy", cmd_policy,
	  "policy check FILE... | explain  validate policies and scopes; how a request is "
	  "decided" },
	{ "approvals", cmd_approvals,
	  "approvals list|show|approve|deny  requests held for a person's decision" },
	{ "audit", cmd_audit, "audit verify FILE               check the audit log's hash chain" },
	{ "template", cmd_template,
	  "template ls|rm ...              the saved guests --template sessions start from" },
	{ "image", image_cmd,
	  "image build|import|ls|rm ...    root file systems for sessions (mmdebstrap, OCI, docker)" },
};

static void usage(FILE *f)
{
	fputs("usage: bulkhead COMMAND [ARGS]\n\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s\n", commands[i].usage);
	fputs("  help                            this text\n"
	      "\n'bulkhead COMMAND --help' describes each command.\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_BULKHEAD : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "bulkhead: unknown command '%s' (see 'bulkhead help')\n", argv[1]);
	return EXIT_BULKHEAD;
}
