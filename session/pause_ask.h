/* SPDX-License-Identifier: Apache-2.0 */
/* session/pause_ask.h: asking a running session's supervisor to pause or resume it — the
 * client's side of session/session_pause.c, for `bulkhead pause|resume` and the API. */
#ifndef BULKHEAD_SESSION_PAUSE_ASK_H
#define BULKHEAD_SESSION_PAUSE_ASK_H

#include <stdbool.h>
#include <stddef.h>

/* Signals session ID's supervisor (through a pidfd checked against its start time: SIGUSR1
 * to pause, SIGUSR2 to resume) and waits for its answer in the run directory's "state".
 * Returns 0 when it is done, or -1 with a line in err: the supervisor's own reason ("cannot
 * pause: ..."), or that it ended, never answered, or is not there. */
int session_pause_ask(const char *id, bool pause, char *err, size_t errlen);

/* Removes session ID's pause files (a paused guest's memory), for whoever outlives a
 * supervisor killed before it could (`bulkhead serve`). */
void session_pause_files_remove(const char *id);

#endif
