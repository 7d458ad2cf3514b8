/* SPDX-License-Identifier: Apache-2.0 */
/* cli/broker_cmd.c: `bulkhead broker` — the shared credential broker in the foreground. It
 * runs bulkhead-broker with a control socket in bulkhead's run directory and the per-session
 * audit logs where private brokers put them; every other option is bulkhead-broker's own. */
#include "cli/broker_cmds.h"
#include "session/broker_dev.h"
#include "session/paths.h"
#include "session/rundir.h"
#include "session/exit_codes.h"

#include <stdbool.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BROKER_MAX_ARGS 32

int cmd_broker(int argc, char **argv)
{
	char bin[PATH_MAX], base[PATH_MAX], ctl[PATH_MAX], audit[PATH_MAX];
	const char *args[BROKER_MAX_ARGS + 8];
	const char *control = NULL;
	bool has_audit_dir = false;
	int n = 0;

	if (argc > BROKER_MAX_ARGS) {
		fprintf(stderr, "bulkhead broker: too many options\n");
		return EXIT_BULKHEAD;
	}
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-broker") < 0 ||
	    access(bin, X_OK) < 0) {
		fprintf(stderr, "bulkhead broker: bulkhead-broker not found next to bulkhead\n");
		return EXIT_BULKHEAD;
	}
	args[n++] = bin;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: bulkhead broker [--control PATH] [--vault FILE] [--ca-file "
			       "FILE] "
			       "[--audit-dir DIR] [--quiet]\n"
			       "       [--max-conns-total N] [--max-conns N] [--idle-timeout S] "
			       "[--event-loop auto|uring|epoll]\n"
			       "Runs the shared credential broker in the foreground. Sessions "
			       "register with\n'bulkhead run --broker PATH --scope FILE' (or "
			       "BULKHEAD_BROKER=PATH) and are\nrevoked when they end. Default "
			       "control socket: <run directory>/broker.sock;\ndefault audit logs: "
			       "~/.local/state/bulkhead/audit/<session>.log.\nEvery option of "
			       "bulkhead-broker --help applies.\n");
			return 0;
		}
		if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			control = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "--audit-dir"))
			has_audit_dir = true;
		args[n++] = argv[i];
	}
	if (!control) {
		if (rundir_base(base, sizeof(base)) < 0 ||
		    (mkdir(base, 0700) < 0 && errno != EEXIST) ||
		    snprintf(ctl, sizeof(ctl), "%s/broker.sock", base) >= (int)sizeof(ctl)) {
			fprintf(stderr, "bulkhead broker: cannot make the run directory\n");
			return EXIT_BULKHEAD;
		}
		control = ctl;
	}
	args[n++] = "--control";
	args[n++] = control;
	if (!has_audit_dir) {
		int rc = broker_audit_dir(audit, sizeof(audit));
		if (rc < 0) {
			fprintf(stderr, "bulkhead broker: audit log directory: %s\n",
				strerror(-rc));
			return EXIT_BULKHEAD;
		}
		args[n++] = "--audit-dir";
		args[n++] = audit;
	}
	args[n] = NULL;
	fprintf(stderr,
		"bulkhead broker: sessions register with --broker %s (or BULKHEAD_BROKER)\n",
		control);
	execv(bin, (char *const *)args);
	fprintf(stderr, "bulkhead broker: cannot run %s: %s\n", bin, strerror(errno));
	return EXIT_BULKHEAD;
}

/* `bulkhead serve [OPTIONS]`: bulkhead-serve, the session API daemon (docs/API.md); it is a
 * program of its own so that the HTTP server's libraries stay out of every other command. */
int cmd_serve(int argc, char **argv)
{
	char bin[PATH_MAX];
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-serve") < 0 ||
	    access(bin, X_OK) < 0) {
		fprintf(stderr, "bulkhead serve: bulkhead-serve not found next to bulkhead\n");
		return EXIT_BULKHEAD;
	}
	(void)argc; /* argv is NULL-terminated: it goes on as it is */
	argv[0] = bin;
	execv(bin, argv);
	fprintf(stderr, "bulkhead serve: %s: %s\n", bin, strerror(errno));
	return EXIT_BULKHEAD;
}
