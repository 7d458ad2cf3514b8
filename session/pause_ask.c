/* SPDX-License-Identifier: Apache-2.0 */
/* session/pause_ask.c: a signal to a session's supervisor, then its answer in "state"; and
 * the pause files a killed supervisor left. */
#include "session/pause_ask.h"

#include "lib/cache_dir.h"
#include "lib/errbuf.h"
#include "session/rundir.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAUSE_ASK_POLLS 3000 /* of 50 ms: saving or loading RAM takes what copying it takes */

int session_pause_ask(const char *id, bool pause, char *err, size_t errlen)
{
	struct rundir rd;
	char state[600], path[PATH_MAX];
	int pidfd = -1, rc = -1;
	if (rundir_open(&rd, id, err, errlen) < 0 ||
	    (pidfd = rundir_supervisor(&rd, err, errlen)) < 0)
		return -1;
	/* The old answer goes first: only one written after this signal counts. */
	if (rundir_file(&rd, "state", 0, path, sizeof(path)) < 0 ||
	    (unlink(path) < 0 && errno != ENOENT) ||
	    syscall(SYS_pidfd_send_signal, pidfd, pause ? SIGUSR1 : SIGUSR2, NULL, 0) < 0) {
		errbuf_fail(err, errlen, -1, "session %s: no running supervisor", id);
		goto out;
	}
	for (int i = 0; i < PAUSE_ASK_POLLS; i++) {
		if (rundir_get(&rd, "state", state, sizeof(state)) == 0) {
			state[strcspn(state, "\n")] = '\0';
			if (!strcmp(state, pause ? "paused" : "running")) {
				rc = 0;
				goto out;
			}
			if (!strncmp(state, "error: ", 7)) {
				errbuf_fail(err, errlen, -1, "session %s: %s", id, state + 7);
				goto out;
			}
		}
		/* The supervisor ended (its pidfd turns readable): no answer will come. */
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		if (poll(&p, 1, 50) > 0) {
			errbuf_fail(err, errlen, -1, "session %s ended", id);
			goto out;
		}
	}
	errbuf_fail(err, errlen, -1, "session %s did not %s within %d s", id,
		    pause ? "pause" : "resume", PAUSE_ASK_POLLS / 20);
out:
	close(pidfd);
	return rc;
}

void session_pause_files_remove(const char *id)
{
	char dir[PATH_MAX - 32], path[PATH_MAX], err[320];
	if (cache_dir(dir, sizeof(dir), "sessions", "the paused sessions' directory", false, err,
		      sizeof(err)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/%s.snap", dir, id);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.snap.saved", dir, id);
	unlink(path);
}
