/* cli/main.c: the `bulkhead` command — dispatch to subcommands. */
#include "cli/bench.h"
#include "cli/doctor.h"
#include "cli/run.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: bulkhead COMMAND [ARGS]\n"
	"\n"
	"  run [OPTIONS] -- CMD [ARG...]   run CMD in a fresh microVM\n"
	"  start [OPTIONS]                 start a session and print its id\n"
	"  exec [-i] [-t] ID -- CMD        run CMD in session ID\n"
	"  stop ID                         end session ID\n"
	"  doctor                          what this host can run, and which engine 'auto' picks\n"
	"  bench boot [-n N] [--json]      boot latency of the engine, phase by phase\n"
	"  help                            this text\n"
	"\n"
	"'bulkhead COMMAND --help' describes each command.\n";

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_BULKHEAD : 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench") == 0)
		return cmd_bench(argc - 1, argv + 1);
	if (strcmp(argv[1], "start") == 0)
		return cmd_start(argc - 1, argv + 1);
	if (strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	if (strcmp(argv[1], "stop") == 0)
		return cmd_stop(argc - 1, argv + 1);
	if (strcmp(argv[1], "doctor") == 0)
		return cmd_doctor(argc - 1, argv + 1);
	fprintf(stderr, "bulkhead: unknown command '%s' (see 'bulkhead help')\n", argv[1]);
	return EXIT_BULKHEAD;
}
