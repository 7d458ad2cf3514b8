/* cli/run.h: `bulkhead run` — options, launching a guest, and watching it. */
#ifndef BULKHEAD_CLI_RUN_H
#define BULKHEAD_CLI_RUN_H

#include "cli/engine.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit codes of `bulkhead run` besides the command's own (docs/CLI.md). */
#define EXIT_TIMEOUT  124 /* --timeout expired; the VM was killed */
#define EXIT_BULKHEAD 125 /* bulkhead itself failed; one line on stderr says why */

#define RUN_MAX_ENV 64

struct run_opts {
	enum engine_kind engine;
	unsigned mem_mib;
	unsigned cpus;
	double timeout_s; /* 0: none */
	const char *kernel, *initrd;
	const char *console_path; /* --console FILE: the whole serial console */
	const char *work;	  /* --work DIR[:ro|:rw], NULL for none */
	bool verbose;		  /* -v: the serial console on stderr too */
	char **argv;		  /* the guest command, NULL-terminated */
	size_t argc;
	char *env[RUN_MAX_ENV]; /* -e KEY=VALUE */
	size_t nenv;
};

/* Everything an engine needs to start the guest, resolved by run.c. */
struct launch {
	const char *kernel, *initrd, *cmdline;
	unsigned mem_mib, cpus;
	bool verbose;
	const char *fs_sock; /* vhost-user-fs socket for tag "work", NULL if no share */
	int diag_w;	     /* write end for the engine's stderr */
};

#define GUEST_MAX_BACKENDS 4

/* A running guest as seen by the session loop. */
struct guest {
	pid_t pid;
	int console_fd; /* the guest's serial console, read side */
	int diag_fd;	/* stderr of the engine and back ends, read side (-1 if none) */
	const char *engine_label;
	/* Device back ends whose death ends the session (e.g. virtiofsd). */
	struct {
		const char *name;
		int pidfd;
	} backends[GUEST_MAX_BACKENDS];
	unsigned nbackends;
};

/* engine_qemu.c: starts QEMU microvm for the session. Returns 0, or -1 with a
 * one-line reason in err. */
int qemu_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	       size_t errlen);

/* session.c: relays the guest's frames until it ends; returns our exit code. */
int session_watch(const struct run_opts *o, struct guest *g);

/* run.c */
int cmd_run(int argc, char **argv);

#endif
