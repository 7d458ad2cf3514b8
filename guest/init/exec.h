/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/exec.h: starting a guest command with pipes or a pseudo-terminal. */
#ifndef BULKHEAD_GUEST_EXEC_H
#define BULKHEAD_GUEST_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct exec_spec {
	const char *const *argv; /* NULL-terminated, argv[0] searched in the command's PATH */
	const char *const *env;	 /* the whole environment (exec_build_env) */
	const char *cwd;
	bool tty;	     /* a pseudo-terminal for stdin/stdout/stderr */
	uint16_t rows, cols; /* its size (0: 24x80) */
	bool stdin_pipe;     /* stdin from the caller (else /dev/null; tty: ignored) */
};

struct exec_proc {
	pid_t pid;  /* also its process group and session (setsid) */
	int out_fd; /* stdout, or the pty master */
	int err_fd; /* stderr; -1 with a tty */
	int in_fd;  /* stdin's write end (the pty master again with a tty); -1 if none */
};

/* The base environment (PATH, HOME, HOSTNAME; TERM with a tty) overlaid with
 * `extra` KEY=VALUE strings. The strings are not copied. NULL when out of memory. */
char **exec_build_env(char *const *extra, bool tty);

/* Starts the command with child_mask as its signal mask. Returns 0; a positive
 * errno when it could not be executed (descriptors closed; the child exits at
 * once, reap p->pid), or a negative errno when nothing was started. */
int exec_spawn(const struct exec_spec *s, const sigset_t *child_mask, struct exec_proc *p);

/* Closes the descriptors exec_spawn returned (not the process). */
void exec_close(struct exec_proc *p);

/* The shell's exit code for a command that could not be executed. */
int exec_failure_code(int err);

#endif
