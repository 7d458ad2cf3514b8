/* SPDX-License-Identifier: Apache-2.0 */
/* session/rundir.h: a session's private run directory — sockets for its back ends live
 * here, nowhere else; created 0700 at start, removed when the session ends. */
#ifndef BULKHEAD_SESSION_RUNDIR_H
#define BULKHEAD_SESSION_RUNDIR_H

#include <limits.h>
#include <stddef.h>

struct rundir {
	char path[PATH_MAX - 64]; /* room for "/<socket name>" below it */
	char id[17];		  /* 16 hex digits, random */
};

/* Creates <base>/<id> with mode 0700, where base is $BULKHEAD_RUNDIR, else
 * /run/bulkhead for root, else $XDG_RUNTIME_DIR/bulkhead, else /tmp/bulkhead-<uid>.
 * Writes its pid file and removes session directories whose owner process is
 * gone. Returns 0, or -1 with a one-line reason in err. */
/* Where run directories live: $BULKHEAD_RUNDIR, /run/bulkhead (root), $XDG_RUNTIME_DIR/bulkhead
 * or /tmp/bulkhead-UID. Returns 0, or -1 if it does not fit. */
int rundir_base(char *buf, size_t len);
/* The subdirectory that holds every socket the guest can reach (vsock.sock_<port>) and the
 * host's way to the guest (vsock.sock): all the jailed bulkhead-vsock sees of the host. */
#define RUNDIR_VSOCK "vsock"
int rundir_create(struct rundir *rd, char *err, size_t errlen);

/* Writes "<dir>/<name>" into buf; -1 if it does not fit (or is too long for a
 * Unix socket address when sock is non-zero). */
int rundir_file(const struct rundir *rd, const char *name, int sock, char *buf, size_t len);

/* Finds the directory of a running session by id (16 hex digits) in this
 * user's base: a directory, not a link, ours and 0700, in a base that is too. Returns 0, or
 * -1 with a one-line reason. */
int rundir_open(struct rundir *rd, const char *id, char *err, size_t errlen);

/* The session's supervisor, as a pidfd: the process its pid file names, if it is still the
 * one that wrote it (its start time). For stop, pause, resume: a signal through it reaches
 * that process or none. The descriptor, or -1 with err. */
int rundir_supervisor(const struct rundir *rd, char *err, size_t errlen);

/* Writes a small text file into the directory (atomically). 0 or -1 (errno). */
int rundir_put(const struct rundir *rd, const char *name, const char *text);
/* Reads one into buf (NUL-terminated, trailing newline kept). 0 or -1 (errno). */
int rundir_get(const struct rundir *rd, const char *name, char *buf, size_t len);

/* Removes the directory and everything in it (one level: sockets, pid file). */
void rundir_remove(struct rundir *rd);

#endif
