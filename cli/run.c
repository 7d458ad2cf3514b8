/* SPDX-License-Identifier: Apache-2.0 */
/* cli/run.c: `bulkhead run` and `bulkhead start` — a request from the options, a plan from
 * the request, and a session from the plan (session/session.c); `start` runs it detached and
 * prints its id once the guest is ready (with --json: the session as the API shows one). */
#include "session/plan.h"
#include "jail/proc.h"
#include "session/session.h"
#include "cli/session_cmds.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int cmd_run(int argc, char **argv)
{
	struct session_request req = SESSION_REQUEST_INIT;
	int rc = session_opts_parse(argc, argv, false, &req);
	if (rc >= 0)
		return rc;
	static struct session_plan plan;
	char err[512];
	if (plan_resolve(&req, &plan, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	rc = session_run(&plan, -1);
	plan_release(&plan);
	return rc;
}

/* A descriptor above stdio named by an environment variable (then removed, so that nothing
 * the session starts sees it); -1 when unset or not open. */
static int env_fd(const char *name)
{
	const char *v = getenv(name);
	char *end = NULL;
	long fd = v ? strtol(v, &end, 10) : -1;
	bool ok = v && *v && !*end && fd > 2 && fd < 1024 && fcntl((int)fd, F_GETFD) >= 0;
	unsetenv(name);
	return ok ? (int)fd : -1;
}

/* PATH made absolute, as the broker (started from our working directory) resolved it. */
static const char *absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return path;
	int n = snprintf(buf, len, "%s/%s", cwd, path);
	return n < 0 || (size_t)n >= len ? path : buf;
}

/* `start --json`: the fields of the API's session object (docs/API.md) that start knows. One
 * JSON document on stdout; 0, or EXIT_BULKHEAD (said on stderr) if it could not be made. */
static int start_print_json(const struct session_plan *p, const char *id, double created_at)
{
	const struct session_request *r = &p->req;
	const bool shared = r->broker.shared != NULL, share = p->share_origin != SHARE_NONE;
	char audit[PATH_MAX];
	const char *audit_log = NULL; /* a shared broker keeps its logs where it was told */
	if (r->broker.scope && !shared)
		audit_log = r->broker.audit ? absolute(r->broker.audit, audit, sizeof(audit))
			    : broker_audit_path(id, audit, sizeof(audit)) == 0 ? audit
									       : NULL;
	const char *broker = !r->broker.scope ? NULL : shared ? "shared" : "private";
	const char *work = share ? p->share.dir : NULL;
	/* A whole number unless --timeout or a scope's expiry made it not. */
	double t = p->timeout_s;
	json_t *timeout = t == (double)(json_int_t)t ? json_integer((json_int_t)t) : json_real(t);
	json_t *s = json_pack("{s:s, s:s, s:b, s:s?, s:s?, s:b, s:s?, s:s?, s:I, s:I, s:o, s:f}",
			      "id", id, "state", "running", "pooled", 0, "image", r->image, "work",
			      work, "work_ro", share && p->share.ro, "broker", broker, "audit_log",
			      audit_log, "mem_mib", (json_int_t)r->mem_mib, "cpus",
			      (json_int_t)r->cpus, "timeout_s", timeout, "created_at", created_at);
	/* Milliseconds are the last digits of a Unix time worth printing. */
	char *text = s ? json_dumps(s, JSON_INDENT(2) | JSON_REAL_PRECISION(13)) : NULL;
	json_decref(s);
	if (!text) {
		fprintf(stderr, "bulkhead start: out of memory writing the session %s as JSON\n",
			id);
		return EXIT_BULKHEAD;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

int cmd_start(int argc, char **argv)
{
	struct session_request req = SESSION_REQUEST_INIT;
	int rc = session_opts_parse(argc, argv, true, &req);
	if (rc >= 0)
		return rc;
	if (req.interactive || req.tty) {
		fprintf(stderr, "bulkhead start: -i and -t belong to 'bulkhead exec'\n");
		return EXIT_BULKHEAD;
	}
	/* `bulkhead serve` (serve/spawn.c) runs the supervisor itself: this process is it. */
	int notify_fd = env_fd("BULKHEAD_NOTIFY_FD");
	req.lifeline_fd = env_fd("BULKHEAD_LIFELINE_FD");
	if (notify_fd > 2) /* our stderr is the daemon's log of us: it says how we end */
		req.ready_stderr_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	else if (req.log_path) {
		int fd = open(req.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY,
			      0600);
		if (fd < 0) {
			fprintf(stderr, "bulkhead start: --log %s: %s\n", req.log_path,
				strerror(errno));
			return EXIT_BULKHEAD;
		}
		req.ready_stderr_fd = fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
	}
	/* Everything is decided before the supervisor detaches: a refusal is said here. */
	static struct session_plan plan;
	char err[512];
	if (plan_resolve(&req, &plan, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	if (notify_fd > 2)
		return session_run(&plan, notify_fd);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "bulkhead: pipe: %s\n", strerror(errno));
		return EXIT_BULKHEAD;
	}
	/* Until the guest is ready, interrupting us stops the session: nothing may be left
	 * running that nobody has the id of. */
	int sfd = proc_signalfd();
	struct timespec created;
	clock_gettime(CLOCK_REALTIME, &created);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bulkhead: fork: %s\n", strerror(errno));
		return EXIT_BULKHEAD;
	}
	if (pid == 0) {
		/* The session's supervisor: detached from our terminal and session, and stopped
		 * if we die before it is ready (notify_started clears that). */
		close(p[0]);
		close(sfd);
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(EXIT_BULKHEAD);
		_exit(session_run(&plan, p[1]));
	}
	close(p[1]);
	char id[64];
	ssize_t n = -1;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = p[0], .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;
			int sig = read(sfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo
									   : SIGTERM;
			if (sig == SIGWINCH)
				continue;
			kill(pid, SIGTERM);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			fprintf(stderr,
				"bulkhead: %s; the session was stopped before it was ready\n",
				strsignal(sig));
			return 128 + sig;
		}
		if (pfd[0].revents) {
			n = read(p[0], id, sizeof(id) - 1);
			break;
		}
	}
	close(p[0]);
	close(sfd);
	if (n <= 0) {
		/* It failed before the guest was ready and said why on stderr. */
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : EXIT_BULKHEAD;
	}
	id[n] = '\0';
	if (!plan.req.json) {
		fputs(id, stdout);
		return 0;
	}
	id[strcspn(id, "\n")] = '\0';
	rc = start_print_json(&plan, id, (double)created.tv_sec + created.tv_nsec / 1e9);
	if (rc != 0) /* nobody would know the id of a session left running */
		kill(pid, SIGTERM);
	return rc;
}
