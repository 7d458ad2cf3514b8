/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine_spawn.h: what both engines share — building an argument vector and
 * starting the VM process with its console on a pipe to us. */
#ifndef BULKHEAD_SESSION_ENGINE_SPAWN_H
#define BULKHEAD_SESSION_ENGINE_SPAWN_H

#include "session/engine.h"

#include <limits.h>
#include <stddef.h>

#define ENGINE_MAX_ARGS 96

struct engine_argv {
	const char *v[ENGINE_MAX_ARGS + 1];
	unsigned n;
	char strs[16][PATH_MAX + 64]; /* storage for formatted arguments */
	unsigned nstrs;
	int overflow;
};

void engine_arg(struct engine_argv *a, const char *s);
void engine_argf(struct engine_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts a->v (NULL-terminated here) in its own process group, killed with us,
 * with stdin on /dev/null, stdout (the serial console) on a new pipe that
 * becomes vm->console_fd, and stderr on diag_w; in JAIL (its out and diag descriptors are
 * set here) unless it is NULL (--no-jail). With verbose, prints the exact command,
 * shell-quoted (bench/ re-runs it). Returns 0, or -1 with err set. */
struct jail_spec;
int engine_spawn(struct engine_argv *a, const char *label, int diag_w, bool verbose,
		 const struct jail_spec *jail, struct vm_proc *vm, char *err, size_t errlen);

#endif
