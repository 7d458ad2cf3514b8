/* SPDX-License-Identifier: Apache-2.0 */
/* cli/session_cmds.h: the commands that start, enter and stop sessions. */
#ifndef BULKHEAD_CLI_SESSION_CMDS_H
#define BULKHEAD_CLI_SESSION_CMDS_H

/* run.c: `bulkhead run [OPTIONS] -- CMD`: a session for one command; its exit code ours. */
int cmd_run(int argc, char **argv);
/* run.c: `bulkhead start [OPTIONS]`: a detached session; prints its id once it is ready. */
int cmd_start(int argc, char **argv);
/* session_cmds.c: `bulkhead exec ID -- CMD`, `bulkhead stop ID`. */
int cmd_exec(int argc, char **argv);
int cmd_stop(int argc, char **argv);

#endif
