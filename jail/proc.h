/* SPDX-License-Identifier: Apache-2.0 */
/* jail/proc.h: process plumbing the CLI's pieces share — the session's signals,
 * starting a helper process, and listening sockets in the run directory. */
#ifndef BULKHEAD_JAIL_PROC_H
#define BULKHEAD_JAIL_PROC_H

#include <sys/types.h>

/* Blocks the signals a session handles itself (INT, TERM, HUP, WINCH) and
 * ignores SIGPIPE; call before starting children so none is lost. Returns a
 * signalfd for them, or -1. */
int proc_signalfd(void);
/* The same, with the n signals of MORE too. */
int proc_signalfd_and(const int *more, size_t n);
/* The same for every signal a process may be sent to pass on (all but KILL, STOP, CHLD, PIPE and
 * the faults a program raises itself). */
int proc_signalfd_all(void);

/* In a freshly forked helper (VM, back end): all signals unblocked, its own
 * process group (a terminal's Ctrl-C reaches us, and we decide), killed if we
 * die, stdin on /dev/null, stdout on out_fd, stderr on diag_fd. 0 or -1. */
int proc_child_setup(int out_fd, int diag_fd);
/* The cgroups every helper joins in proc_child_setup (jail/cgroup.h); NULL: none. */
struct session_cgroup;
void proc_set_cgroup(const struct session_cgroup *cg);

/* Starts a back end: argv[0] with proc_child_setup(diag_fd, diag_fd) and the
 * listening socket lfd as its descriptor 3 (its argv says so, e.g. --listen-fd 3), and
 * extra_fd (if >= 0) as its descriptor 4; nothing else is inherited. Returns the pid, or
 * -errno. lfd and extra_fd stay open here. */
pid_t proc_spawn_listener(char *const argv[], int lfd, int extra_fd, int diag_fd);

/* A helper forked now and started later (a pool guest's broker, once its session is known):
 * proc_spawner_new forks it at once, joined to the session's cgroups and set up as
 * proc_child_setup(diag_fd, diag_fd) does (the join is the slow part of a start: about 10 ms
 * per helper on a cgroup v1 host); it waits on sp->sock. proc_spawner_exec then has it run
 * argv with lfd as its descriptor 3 and extra_fd (if >= 0) as its 4, as proc_spawn_listener
 * would; sp->pid is that program's pid. Closing sp->sock unused ends it (status 0). Each
 * returns 0 or -errno. */
struct proc_spawner {
	pid_t pid;
	int sock;
};
int proc_spawner_new(struct proc_spawner *sp, int diag_fd);
int proc_spawner_exec(struct proc_spawner *sp, char *const argv[], int lfd, int extra_fd);
/* Closes its socket and, if it never ran a program, stops and reaps it. */
void proc_spawner_drop(struct proc_spawner *sp);

/* Makes us the reaper of what our helpers leave behind (PR_SET_CHILD_SUBREAPER): a
 * helper's own children (virtiofsd's sandboxed process, say) become ours when it dies,
 * so that we can wait for them instead of leaving them to init. */
void proc_adopt_orphans(void);

/* Kills *pid and its process group (SIGKILL), reaps it and every orphan of its group
 * (ours by proc_adopt_orphans), and sets *pid to 0; nothing if it is 0. When it returns,
 * nothing of that helper runs or waits to be reaped. */
void proc_stop(pid_t *pid);

/* The last step of a session: kills and reaps every child still ours (adopted orphans
 * included), so that the session's cgroups and ids are free when we return. Returns how
 * many there were. */
int proc_reap_all(void);

/* The process's start time (field 22 of /proc/PID/stat), or 0 when it is gone or a zombie:
 * with the pid, what tells a process from a later one that reused its pid. */
unsigned long long proc_start_time(pid_t pid);

#endif
