/* SPDX-License-Identifier: Apache-2.0 */
/* oci/state.h: a container's state directory, <root>/<id>/ (0700):
 *
 *   state.json   written once by create when the session is ready: the bundle, the
 *                supervisor's pid and start time (so a reused pid is never taken for it), the
 *                session's id and its run directory's path, when it was created, the
 *                annotations, the config's process (exec's environment and user)
 *   start        the start gate (a FIFO the supervisor reads)
 *   started      made by start before it opens the gate
 *   scope.json   an inline io.bulkhead.scope, 0600
 *   lock         flock()ed by every command that changes the container
 *
 * The status is never stored: it is read from the supervisor's life (created until started,
 * running while it lives, stopped after). */
#ifndef BULKHEAD_OCI_STATE_H
#define BULKHEAD_OCI_STATE_H

#include "oci/oci.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

enum oci_status { OCI_CREATING, OCI_CREATED, OCI_RUNNING, OCI_STOPPED };

struct oci_container {
	char id[129];
	char dir[PATH_MAX];
	int lock_fd;
	json_t *state;	     /* state.json, NULL while creating */
	pid_t pid;	     /* the supervisor, 0 when unknown */
	const char *session; /* its run directory's id */
	enum oci_status status;
};

/* Opens (CREATE: makes, failing when it exists) ID's state directory and locks it. 0, or -1
 * with err (errno ENOENT: no such container; EEXIST: it exists). */
int oci_container_open(const struct oci_globals *g, const char *id, bool create,
		       struct oci_container *c, char *err, size_t errlen);
void oci_container_close(struct oci_container *c);
/* Writes state.json (with the config's process: an exec without --process takes its
 * environment, and every exec must be its user). 0 or -1 with err. */
int oci_container_save(struct oci_container *c, const char *bundle, pid_t pid, const char *session,
		       json_t *annotations, json_t *process, char *err, size_t errlen);
/* The session's run directory (where create found it), if it is still there: 0, or -1. */
struct rundir;
int oci_container_rundir(const struct oci_container *c, struct rundir *rd);
/* "DIR/NAME" into buf; -1 if it does not fit. */
int oci_container_file(const struct oci_container *c, const char *name, char *buf, size_t len);
/* Removes the state directory (after the container is gone). */
void oci_container_remove(struct oci_container *c);
const char *oci_status_name(enum oci_status s);

#endif
