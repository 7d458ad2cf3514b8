/* SPDX-License-Identifier: Apache-2.0 */
/* session/session.h: a session's life, from its plan (session/plan.h) to its exit code.
 *
 *   session_run          acquire the helpers in order (session_helpers.c: one table), watch
 *                        the guest (session_watch.c), release in reverse.
 *   session_watch        the loop: console, signals, deadlines, helper deaths, and the exec
 *                        agent's link (session_agent.c) with the main command
 *                        (exec_client.c); it never blocks on anything the guest controls.
 */
#ifndef BULKHEAD_SESSION_SESSION_H
#define BULKHEAD_SESSION_SESSION_H

#include "session/broker_dev.h"
#include "jail/cgroup.h"
#include "session/engine.h"
#include "session/exec_client.h"
#include "jail/jail.h"
#include "session/plan.h"
#include "session/rundir.h"
#include "session/share_fs.h"
#include "session/share_image.h"
#include "session/vsock_dev.h"

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <termios.h>

/* The exec agent side of a session (vsock): wait for the guest's "ready", then start the
 * main command (or, detached, tell `bulkhead start` the session's id). */
struct agent_link {
	int ready_lfd;	 /* listening on vsock.sock_<AGENT_READY_PORT> */
	const char *uds; /* vsock.sock: host -> guest connections */
	uint32_t flags;	 /* AGENT_EXEC_* for the main command */
	uint16_t rows, cols;
	const char *cwd;
	char *const *argv, *const *env; /* NULL argv: detached */
	int in_fd;			/* our stdin when forwarded, else -1 */
	int notify_fd;			/* where the id goes once ready (detached, or OCI) */
	int start_fd;			/* >= 0: the main command waits until it is readable */
	int ready_stderr_fd;		/* >= 0: becomes stderr once the guest is ready */
	bool no_escapes;		/* -t without "~.": the caller is a program (OCI) */
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
/* The engine has started: the guest must call home within boot_s seconds. */
void agent_link_arm(struct agent_link *a, unsigned boot_s);
int agent_link_pollfds(struct agent_link *a, struct pollfd *pfd);
/* Milliseconds until agent_link_handle must run even without an event, or -1. */
int agent_link_timeout_ms(const struct agent_link *a);
/* 0: go on; 1: the main command is over (see a->exec); 2: our user typed "~."; -1: failed
 * (a->error). */
int agent_link_handle(struct agent_link *a, const struct pollfd *pfd, int n);
void agent_link_close(struct agent_link *a);

#define SESSION_MAX_WATCHED 8

/* A session while it runs: what each helper acquired, for its release. */
struct session {
	const struct session_plan *plan;
	int notify_fd; /* detached: where the id goes once the guest is ready; else -1 */
	int signal_fd; /* INT, TERM, HUP, WINCH (proc_signalfd) */
	struct rundir rd;
	char vsock_dir[PATH_MAX];
	struct jail_ids ids;
	bool jailed; /* ids were leased (not --no-jail) */
	struct session_cgroup cg;
	int diag[2]; /* the engine's and the back ends' stderr: read, write */
	struct share_fs fs;
	struct share_fs binds[SESSION_BINDS_MAX];
	struct share_image img;
	struct vsock_dev vs;
	struct broker_dev br;
	struct vm_proc vm;
	/* Helpers whose end ends the session: a pidfd, or a shared broker's connection. */
	struct {
		const char *name;
		int fd;
	} watched[SESSION_MAX_WATCHED];
	unsigned nwatched;
	struct agent_link link;
	/* --bind-later (session_bind.c): the session CA until the binding hands it on, the
	 * socket the binding comes on, and the bound scope's expiry (0: none). */
	char *ca_pem;
	int bind_lfd;
	struct proc_spawner bind_spawner; /* the bound broker's process, forked at boot */
	struct broker_dev br_unbound; /* the broker that allowed nothing, once bound: it keeps
				       * the connections made before, until the session ends */
	double bound_timeout_s;
	char bound_expiry[32];
	struct termios saved_tty;
	bool raw_tty;
	/* --template (session/template.c): the template, restored (or, making it, written). */
	int template_fd;
	bool template_make;
	/* `bulkhead pause` (session_pause.c): the file the VMM saves into, and the saved one. */
	int pause_fd;
	char pause_path[PATH_MAX];
	bool paused;
	/* Our own copy of each virtio-fs back end's connection (a pausable session's, else -1):
	 * while we hold it, virtiofsd outlives a paused VMM with its FUSE state, and the resumed
	 * VMM is handed the same connection (session_pause.c). */
	int fs_keep[LAUNCH_FS_MAX];
	char err[512];
};

/* Runs a planned session to its end; returns our exit code. notify_fd as in struct
 * session (-1 for `bulkhead run`). */
int session_run(const struct session_plan *p, int notify_fd);
/* A session not started yet (its signals blocked), and its release: for session_run and
 * for session/template.c, which runs one to make a template. NULL when out of memory. */
struct session *session_new(const struct session_plan *p, int notify_fd);
void session_free(struct session *s);

/* session_helpers.c: acquires every helper the plan needs, in order. Returns 0, or -1 with
 * s->err set; either way *ran says how many rows of the table to pass to session_stop. */
int session_start(struct session *s, int *ran);
/* Releases the first n rows, in reverse. */
void session_stop(struct session *s, int n);

/* session_bind.c: a pooled guest (--bind-later). session_bind_start, as its broker: the
 * session CA, the broker that allows nothing, the binding's socket. session_bind_serve, when
 * that socket is readable: one binding, answered, and the socket closed (0; -1: the answer
 * could not be given). session_bind_stop releases what is left. */
int session_bind_start(struct session *s);
int session_bind_serve(struct session *s);
void session_bind_stop(struct session *s);
/* session_helpers.c: what a helper that did not start said last on the diagnostics pipe,
 * appended to err (": LINE"), as a session's end names it. */
void session_diag_last(struct session *s, char *err, size_t errlen);
/* session_helpers.c: a helper whose end ends the session (a pidfd, or a shared broker's
 * connection, taken); the entry named old, if any, is replaced (fd < 0: removed). */
void session_watch_set(struct session *s, const char *old, const char *name, int fd);
/* session_helpers.c: the VM's start, from an image or (restore_fd >= 0) a snapshot, saved into
 * snapshot_fd when asked (or -1); bulkhead-vsock's start; the guest's sockets given to the
 * jail. For session_start's rows, and again for a resume. 0, or -1 with s->err. */
int session_engine_launch(struct session *s, int restore_fd, int snapshot_fd);
int session_vsock_start(struct session *s);
int session_sockets_start(struct session *s);

/* session_pause.c: `bulkhead pause ID` and `resume ID` (SIGUSR1 and SIGUSR2 to the session's
 * supervisor; its answer in the run directory's "state" file). A session can pause when
 * session_pausable says so; its VMM is then started with a snapshot file of its own
 * (session_pause_prepare, from the engine's row: never a reason not to start, a pause says
 * why when there is none), removed with the session (session_pause_forget). */
bool session_pausable(const struct session *s, char *why, size_t len);
int session_pause_prepare(struct session *s, int *snapshot_fd);
void session_pause_forget(struct session *s);
/* Asks the VMM to save the guest (SIGUSR1) and waits up to timeout_s for its end: 0 when it
 * ended saved (VMM_EXIT_SNAPSHOT), -2 when it ended otherwise (*wstatus: how), -1 with s->err
 * when it is still running. For pause and for making a template. */
int session_vm_save(struct session *s, int timeout_s, int *wstatus);
/* The guest saved and its VMM and bulkhead-vsock gone: 0. -1 with s->err when it could not
 * (the guest runs on), -2 when the VMM ended otherwise (*wstatus: how; the session is over). */
int session_pause(struct session *s, int *wstatus);
/* A new bulkhead-vsock and VMM from the saved file: 0, or -1 with s->err (still paused). */
int session_resume(struct session *s);

/* session_watch.c: relays the guest until the session ends; returns our exit code. The VM
 * process is stopped and reaped when it returns. */
int session_watch(struct session *s);

#endif
