/* SPDX-License-Identifier: Apache-2.0 */
/* cli/session_cmds.h: the commands that start, enter and stop sessions. */
#ifndef BULKHEAD_CLI_SESSION_CMDS_H
#define BULKHEAD_CLI_SESSION_CMDS_H

#include "session/plan.h"

#include <stdbool.h>

/* run.c: `bulkhead run [OPTIONS] -- CMD`: a session for one command; its exit code ours. */
int cmd_run(int argc, char **argv);
/* run.c: `bulkhead start [OPTIONS]`: a detached session; prints its id once it is ready. */
int cmd_start(int argc, char **argv);
/* session_cmds.c: `bulkhead exec ID -- CMD`, `bulkhead stop ID`. */
int cmd_exec(int argc, char **argv);
int cmd_stop(int argc, char **argv);
/* `pause ID` and `resume ID` (session/session_pause.c). */
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_template(int argc, char **argv); /* cli/template_cmd.c */

/* session_opts.c: `run` and `start` options into a request. Returns -1 when parsed (go on),
 * else the exit code (0 after --help, EXIT_BULKHEAD after a usage error, said on stderr). */
int session_opts_parse(int argc, char **argv, bool detached, struct session_request *req);

#endif
