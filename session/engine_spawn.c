/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine_spawn.c: argument vectors and the VM process's start, for both engines. */
#include "session/engine_spawn.h"
#include "jail/jail.h"
#include "jail/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void engine_arg(struct engine_argv *a, const char *s)
{
	if (a->n < ENGINE_MAX_ARGS)
		a->v[a->n++] = s;
	else
		a->overflow = 1;
}

void engine_argf(struct engine_argv *a, const char *fmt, ...)
{
	if (a->nstrs == sizeof(a->strs) / sizeof(a->strs[0])) {
		a->overflow = 1;
		return;
	}
	char *s = a->strs[a->nstrs++];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s, sizeof(a->strs[0]), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(a->strs[0]))
		a->overflow = 1;
	engine_arg(a, s);
}

static void print_command(const char *const args[])
{
	fputs("bulkhead: engine command:", stderr);
	for (size_t i = 0; args[i]; i++) {
		fputs(" '", stderr);
		for (const char *c = args[i]; *c; c++)
			if (*c == '\'')
				fputs("'\\''", stderr);
			else
				fputc(*c, stderr);
		fputc('\'', stderr);
	}
	fputc('\n', stderr);
}

static void child_exec(char *const args[], int out, int diag)
{
	if (proc_child_setup(out, diag) < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	execv(args[0], args);
	dprintf(2, "exec %s: %s\n", args[0], strerror(errno));
	_exit(127);
}

int engine_spawn(struct engine_argv *a, const char *label, int diag_w, bool verbose,
		 const struct jail_spec *jail, struct vm_proc *vm, char *err, size_t errlen)
{
	if (a->overflow) {
		snprintf(err, errlen, "internal error: %s arguments do not fit", label);
		return -1;
	}
	a->v[a->n] = NULL;
	if (verbose)
		print_command(a->v);
	int con[2];
	if (pipe2(con, O_CLOEXEC) < 0)
		goto fail_errno;
	pid_t pid;
	if (jail) {
		struct jail_spec spec = *jail;
		spec.out_fd = con[1];
		spec.diag_fd = diag_w;
		pid = jail_spawn((char *const *)a->v, &spec);
		if (pid < 0) {
			errno = -pid;
			pid = -1;
		}
	} else {
		pid = fork();
		if (pid == 0)
			child_exec((char *const *)a->v, con[1], diag_w);
	}
	close(con[1]);
	if (pid < 0) {
		close(con[0]);
		goto fail_errno;
	}
	vm->pid = pid;
	vm->console_fd = con[0];
	vm->label = label;
	return 0;
fail_errno:
	snprintf(err, errlen, "cannot start %s: %s", label, strerror(errno));
	return -1;
}
