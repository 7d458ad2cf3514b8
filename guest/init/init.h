/* guest/init/init.h: bulkhead-init, the guest's PID 1 — shared internal declarations. */
#ifndef BULKHEAD_GUEST_INIT_H
#define BULKHEAD_GUEST_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* console.c: frames to the host over the serial console (lib/console_frame.h). */
int console_open(const char *dev);
int console_send(int type, const void *buf, size_t len);
/* printf-style one-line error from init itself, as a CFRAME_ERROR frame. */
void console_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* setup.c: mounts, hostname, console log level. Returns 0 or -errno. */
int setup_system(void);

/* session.c: the command the host asked for. */
struct session {
	char **argv;
	char **env;	 /* extra "KEY=VALUE" strings from the host, NULL-terminated */
	const char *cwd; /* "/work" when the host shares a work directory, else "/" */
	bool agent;	 /* bulkhead.agent=1: serve execs over vsock instead of argv */
	char work_mode;	 /* 0: no share; 'w': read-write; 'o': read-only */
};
int session_from_cmdline(struct session *s);
/* Mounts the work share if the host asked for one (bulkhead.work=). Returns 0 or -errno. */
int session_mount_work(struct session *s);
/* Runs the command with its stdout/stderr framed to the console; returns the
 * wait status, or -1 when it could not be started (an error frame was sent and
 * *exit_code set to 126/127 as a shell would). */
int session_run(const struct session *s, int *exit_code);

/* agent.c: serves exec requests over vsock until the host ends the session;
 * returns then (or at once, with an error frame sent, if it cannot start). */
void agent_run(void);

/* Stops everything and turns the machine off; never returns. */
void init_poweroff(void) __attribute__((noreturn));

#endif
