/* cli/run.h: `bulkhead run` — options, launching a guest, and watching it. */
#ifndef BULKHEAD_CLI_RUN_H
#define BULKHEAD_CLI_RUN_H

#include "cli/broker_dev.h"
#include "cli/engine.h"
#include "cli/exec_client.h"

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit codes of `bulkhead run` besides the command's own (docs/CLI.md). */
#define EXIT_TIMEOUT  124 /* --timeout expired; the VM was killed */
#define EXIT_BULKHEAD 125 /* bulkhead itself failed; one line on stderr says why */

#define RUN_MAX_ENV 64
/* Time from the engine's start to the guest's call home (--boot-timeout). Under TCG a
 * session is up in about a second; this is for loaded or slow hosts, and ends a guest that
 * never calls. */
#define BOOT_TIMEOUT_DEFAULT_S 60

struct run_opts {
	enum engine_kind engine;
	unsigned mem_mib;
	unsigned cpus;
	double timeout_s;	 /* 0: none */
	unsigned boot_timeout_s; /* --boot-timeout: the guest must be ready by then */
	const char *kernel, *initrd;
	const char *console_path; /* --console FILE: the whole serial console */
	const char *ram_file;	  /* --ram-file FILE: guest RAM kept in FILE (qemu engine) */
	const char *policy;	  /* --policy FILE, or the default when it exists (policy_gate) */
	bool no_jail;		  /* --no-jail: back ends without the jail (jail/jail.h) */
	const char *jail_uid;	  /* --jail-uid UID[:GID]; NULL: a free one (jail/jail.h) */
	unsigned mem_limit_mib;	  /* --mem-limit: the session's host memory (jail/cgroup.h) */
	const char *work;	  /* --work DIR[:ro|:rw] or the scope's, NULL for none */
	char scope_work[PATH_MAX + 4]; /* the work share as the scope grants it (scope_grant.c) */
	long long scope_expires_at;    /* the scope's expiry, Unix seconds; 0: none */
	char scope_expiry[32];	       /* ... as UTC text */
	bool timeout_is_expiry;	       /* the timeout is the scope's expiry (its message says so) */
	struct broker_opts broker;     /* --scope, --vault, --ca-file */
	bool verbose;		       /* -v: the serial console on stderr too */
	bool interactive;	       /* -i: forward our stdin */
	bool tty;		       /* -t: a pseudo-terminal in the guest */
	char **argv;		       /* the guest command, NULL-terminated */
	size_t argc;
	char *env[RUN_MAX_ENV]; /* -e KEY=VALUE */
	size_t nenv;
};

/* Everything an engine needs to start the guest, resolved by run.c. */
struct launch {
	const char *kernel, *initrd, *cmdline;
	unsigned mem_mib, cpus;
	const char *ram_file;  /* guest RAM in this (new) file, kept afterwards; NULL: a memfd */
	struct jail_ids *jail; /* the session's jail (jail/jail.h); NULL: --no-jail */
	bool verbose;
	const char *fs_sock;	/* vhost-user-fs socket for tag "work", NULL if no share */
	int diag_w;		/* write end for the engine's stderr */
	const char *vsock_sock; /* vhost-user-vsock socket, NULL if no vsock */
	unsigned guest_cid;
};

#define GUEST_MAX_BACKENDS 4

/* A running guest as seen by the session loop. */
struct guest {
	pid_t pid;
	int console_fd; /* the guest's serial console, read side */
	int diag_fd;	/* stderr of the engine and back ends, read side (-1 if none) */
	int signal_fd;	/* INT, TERM, HUP, WINCH: proc_signalfd() */
	const char *engine_label;
	/* Device back ends whose death ends the session (e.g. virtiofsd). */
	struct {
		const char *name;
		int pidfd;
	} backends[GUEST_MAX_BACKENDS];
	unsigned nbackends;
	struct agent_link *agent; /* NULL: the command runs from the kernel command line */
};

/* The exec agent side of a session (vsock): run.c fills the first part;
 * session_agent.c drives the rest from the session loop. */
struct agent_link {
	int ready_lfd;	 /* listening on vsock.sock_<AGENT_READY_PORT> */
	const char *uds; /* vsock.sock: host -> guest connections */
	uint32_t flags;	 /* AGENT_EXEC_* for the main command */
	uint16_t rows, cols;
	const char *cwd;
	char *const *argv, *const *env;
	int in_fd; /* our stdin when forwarded, else -1 */
	/* A detached session (no main command): write the id here when ready. */
	int notify_fd;
	const char *session_id;
	/* state */
	long boot_deadline;	  /* CLOCK_MONOTONIC ms by which the guest must call home */
	int ready_fd;		  /* the guest's ready connection: the session's lifeline */
	bool ready;		  /* ... and it said READY */
	long ready_deadline;	  /* CLOCK_MONOTONIC ms by which READY must have arrived */
	struct agent_reader *rd;  /* reads READY on ready_fd */
	struct exec_client *exec; /* the main command, once started */
	bool failed;
	char error[320];
};

/* session_agent.c */
#define AGENT_LINK_POLLFDS (1 + EXEC_CLIENT_POLLFDS)
int agent_link_pollfds(struct agent_link *a, struct pollfd *pfd);
/* The engine has started: the guest must call home within boot_s seconds. */
void agent_link_arm(struct agent_link *a, unsigned boot_s);
/* Milliseconds until agent_link_handle must run even without an event, or -1. */
int agent_link_timeout_ms(const struct agent_link *a);
/* 0: go on; 1: the main command is over (see a->exec); -1: failed (a->error). */
int agent_link_handle(struct agent_link *a, const struct pollfd *pfd, int n);
void agent_link_close(struct agent_link *a);

/* engine_qemu.c: starts QEMU microvm for the session. Returns 0, or -1 with a
 * one-line reason in err. */
int qemu_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	       size_t errlen);

/* engine_kvm.c: starts bulkhead-vmm for the session (same contract as qemu_start). */
int kvm_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	      size_t errlen);
/* Path of bulkhead-vmm next to this executable; 0 or -1 when too long. */
int kvm_vmm_path(char *buf, size_t len);

/* session.c: relays the guest's frames until it ends; returns our exit code. */
int session_watch(const struct run_opts *o, struct guest *g);

/* scope_grant.c: the scope's work share and expiry, before anything starts (0, or -1 with
 * err): scope_grant_apply before the share is parsed, scope_grant_lifetime after the global
 * policy set the session's lifetime (the earlier end wins). */
struct rules;
int scope_grant_apply(struct run_opts *o, struct rules *scope, char *err, size_t errlen);
int scope_grant_lifetime(struct run_opts *o, char *err, size_t errlen);

/* run.c */
/* The kernel parameters every session starts with, for engine c: console,
 * reboot/panic handling, quirks for emulating hosts, and the work share's mode
 * ("rw", "ro" or NULL). Returns 0, or -1 if it does not fit. */
int run_kernel_cmdline(const struct engine_choice *c, bool quiet, const char *work_mode, char *buf,
		       size_t len);
int cmd_run(int argc, char **argv);
/* policy_gate.c: applies the global policy to the options before anything starts (share,
 * limits, scope); may set the timeout from the policy's session lifetime. 0 or -1 + err. */
struct share_fs;
int policy_gate(struct run_opts *o, const struct share_fs *fs, const struct rules *scope, char *err,
		size_t errlen);
/* `bulkhead start`: a detached session; prints its id once the guest is ready. */
int cmd_start(int argc, char **argv);
/* session_cmds.c: `bulkhead exec ID -- CMD`, `bulkhead stop ID`. */
int cmd_exec(int argc, char **argv);
int cmd_stop(int argc, char **argv);

#endif
