/* cli/session_agent.c: the agent side of a session — wait for the guest's
 * "ready", start the main command through the exec agent, relay it. */
#include "cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AGENT_HANDSHAKE_MS 10000

int agent_link_pollfds(struct agent_link *a, struct pollfd *pfd)
{
	int n = 0;
	if (a->ready_fd < 0)
		pfd[n++] = (struct pollfd){ .fd = a->ready_lfd, .events = POLLIN };
	else
		pfd[n++] = (struct pollfd){ .fd = a->ready_fd, .events = POLLIN };
	if (a->exec)
		n += exec_client_pollfds(a->exec, pfd + n);
	return n;
}

static int fail(struct agent_link *a, const char *what, const char *why)
{
	snprintf(a->error, sizeof(a->error), "%s: %s", what, why);
	a->failed = true;
	return -1;
}

/* The guest said it is ready: open the main command's exec stream. */
static int start_exec(struct agent_link *a)
{
	a->exec = calloc(1, sizeof(*a->exec));
	if (!a->exec)
		return fail(a, "exec", "out of memory");
	a->exec->sock = -1;
	a->exec->in_fd = a->in_fd;
	a->exec->out_fd = 1;
	a->exec->err_fd = 2;
	char err[256];
	int sock = exec_client_connect(a->uds, AGENT_PORT, AGENT_HANDSHAKE_MS, err, sizeof(err));
	if (sock < 0)
		return fail(a, "cannot reach the guest's exec agent", err);
	if (exec_client_start(a->exec, sock, a->flags, a->rows, a->cols, a->cwd, a->argv, a->env) <
	    0)
		return fail(a, "exec", a->exec->error);
	return 0;
}

int agent_link_handle(struct agent_link *a, const struct pollfd *pfd, int n)
{
	if (a->ready_fd < 0) {
		if (!pfd[0].revents)
			return 0;
		int fd = accept4(a->ready_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return 0;
		/* READY is a bare header, sent right after connecting. */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t len;
		uint8_t none[1];
		if (poll(&p, 1, AGENT_HANDSHAKE_MS) <= 0 ||
		    agent_recv(fd, none, sizeof(none), &len) != AGENT_READY) {
			close(fd);
			return fail(a, "guest agent", "no valid ready message");
		}
		a->ready_fd = fd;
		if (a->argv)
			return start_exec(a) < 0 ? -1 : 0;
		/* Detached: tell `bulkhead start` our id, then leave its terminal. */
		dprintf(a->notify_fd, "%s\n", a->session_id);
		close(a->notify_fd);
		a->notify_fd = -1;
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
			close(devnull);
		}
		return 0;
	}
	if (pfd[0].revents) {
		/* Nothing may arrive on the lifeline; EOF means the guest's agent is gone. */
		return fail(a, "guest agent", "the session's control connection closed");
	}
	if (!a->exec)
		return 0;
	int rc = exec_client_handle(a->exec, pfd + 1, n - 1);
	if (rc < 0)
		return fail(a, "exec", a->exec->error);
	return rc;
}

void agent_link_close(struct agent_link *a)
{
	if (a->exec) {
		exec_client_close(a->exec);
		free(a->exec);
		a->exec = NULL;
	}
	if (a->ready_fd >= 0)
		close(a->ready_fd);
	a->ready_fd = -1;
}
