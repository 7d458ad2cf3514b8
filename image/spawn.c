/* SPDX-License-Identifier: Apache-2.0 */
/* image/spawn.c: the external tools (mmdebstrap, tar, skopeo, umoci), run by fork and exec with
 * an argument vector — never through a shell — their stderr relayed to ours so that the user sees
 * their progress (and our one line can quote their error), their stdout on our stderr (or read by
 * us), stdin on /dev/null. */
#include "image/image_internal.h"
#include "lib/errbuf.h"
#include "lib/io.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t caught;

/* The disk a tool may take (image_disk_budget): the store's file system, how much of it the
 * whole command may fill, and what it always leaves free. */
static struct {
	char dir[PATH_MAX];
	uint64_t max, start_free;
	bool over;
} budget;
#define BUDGET_RESERVE (512ull << 20)

static uint64_t free_bytes(const char *dir)
{
	struct statvfs v;
	return statvfs(dir, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : 0;
}

void image_disk_budget(const char *dir, uint64_t max)
{
	const char *env = getenv("BULKHEAD_IMAGE_MAX_MIB");
	char *end;
	unsigned long long mib = env ? strtoull(env, &end, 10) : 0;
	if (env && *env && !*end && mib > 0 && mib < (1ull << 40))
		max = mib << 20;
	snprintf(budget.dir, sizeof(budget.dir), "%s", dir);
	budget.max = max;
	budget.start_free = free_bytes(dir);
}

/* Whether the tools have taken more than their budget, or nearly all the file system. */
static bool budget_spent(void)
{
	if (!budget.dir[0])
		return false;
	uint64_t now = free_bytes(budget.dir);
	return now < BUDGET_RESERVE ||
	       (budget.start_free > now && budget.start_free - now > budget.max);
}

static void on_signal(int sig)
{
	caught = sig;
}

void image_signals_catch(void)
{
	/* No SA_RESTART: a blocking wait returns, so that the signal can be passed on. A handler
	 * (not SIG_IGN) so that the tools we exec start with the default actions. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int image_signal(void)
{
	return caught;
}

/* environ with T's additions (replacing the same keys), or NULL when out of memory. */
static char **tool_env(const struct image_tool *t)
{
	size_t n = 0, k = 0, add = 0;
	while (environ[n])
		n++;
	while (t->env && t->env[add])
		add++;
	char **env = calloc(n + add + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int replaced = 0;
		for (size_t j = 0; j < add; j++) {
			size_t kl = strcspn(t->env[j], "=") + 1;
			if (strncmp(environ[i], t->env[j], kl) == 0)
				replaced = 1;
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < add; j++)
		env[k++] = (char *)t->env[j];
	return env;
}

/* What a tool said on stderr that states its error (or else its last line), for our one
 * line: "skopeo failed (exit status 1): ... no space left on device". */
struct relay {
	char line[512], said[512];
	size_t n;
	bool found;
};

/* A line that states an error: apt's and mmdebstrap's "E:", skopeo's fatal, umoci's, tar's. */
static int errorish(const char *s)
{
	return strncmp(s, "E: ", 3) == 0 || strncmp(s, "tar: ", 5) == 0 ||
	       strncmp(s, "panic: ", 7) == 0 || strstr(s, "level=fatal") ||
	       strstr(s, "level=error") || strstr(s, "\xe2\xa8\xaf") /* umoci's cross */ ||
	       strcasestr(s, "no space left on device");
}

/* The first error-like line is the cause (later ones report that the tool failed); with none,
 * the last line. */
static void relay_line(struct relay *r)
{
	r->line[r->n] = '\0';
	while (r->n && (r->line[0] == ' ' || r->line[0] == '\t'))
		memmove(r->line, r->line + 1, r->n--);
	if (r->n && !r->found) {
		memcpy(r->said, r->line, r->n + 1);
		r->found = errorish(r->line);
	}
	r->n = 0;
}

static void relay_bytes(struct relay *r, const char *buf, size_t n)
{
	io_write_full(2, buf, n);
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n' || buf[i] == '\r')
			relay_line(r);
		else if (r->n < sizeof(r->line) - 1)
			r->line[r->n++] = buf[i];
	}
}

static pid_t tool_start(const struct image_tool *t, int out, int errfd, char *err, size_t errlen)
{
	char **env = tool_env(t);
	if (!env)
		return errbuf_fail(err, errlen, -1, "out of memory");
	pid_t pid = fork();
	if (pid > 0)
		setpgid(pid, pid); /* both sides, so that no signal finds it in ours */
	if (pid == 0) {
		/* Its own process group, so that a signal reaches all of a tool's processes
		 * (mmdebstrap waits for its workers before it looks at one); and it is told when we
		 * are gone. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* No one file past the budget: a sparse entry of a terabyte stops at once. */
		if (budget.dir[0]) {
			struct rlimit fsize = { budget.max, budget.max };
			setrlimit(RLIMIT_FSIZE, &fsize);
		}
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out >= 0 ? out : 2, 1) < 0 ||
		    dup2(errfd, 2) < 0)
			_exit(127);
		execvpe(t->argv[0], (char *const *)t->argv, env);
		fprintf(stderr, "bulkhead image: cannot run %s: %s\n", t->argv[0], strerror(errno));
		_exit(127);
	}
	free(env);
	if (pid < 0)
		return errbuf_fail(err, errlen, -1, "cannot start %s: %s", t->argv[0],
				   strerror(errno));
	return pid;
}

/* Relays the tool's stderr (and hands its stdout to LINE, when OUT >= 0) until both end, passing
 * on a signal we get meanwhile; then reaps it. 0 when it exited 0, else -1 with err. */
static int tool_wait(const struct image_tool *t, pid_t pid, int out, int errfd,
		     void (*line)(const char *s, void *arg), void *arg, char *err, size_t errlen)
{
	struct pollfd p[2] = { { .fd = errfd, .events = POLLIN }, { .fd = out, .events = POLLIN } };
	struct relay r = { .n = 0 };
	char buf[4096], lbuf[4096];
	size_t lpos = 0;
	int status, passed = 0;

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (caught && !passed) {
			kill(-pid, caught);
			passed = 1;
		}
		/* A hostile archive (sparse entries, a layer that inflates a thousandfold) must not
		 * fill the host's disk: the tool is stopped once it has taken its budget. */
		if (!budget.over && budget_spent()) {
			budget.over = true;
			kill(-pid, SIGKILL);
		}
		if (poll(p, 2, budget.dir[0] ? 200 : -1) < 0)
			continue; /* EINTR: the signal is passed on above */
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			ssize_t n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0) {
				p[i].fd = -1;
			} else if (i == 0) {
				relay_bytes(&r, buf, (size_t)n);
			} else {
				for (ssize_t k = 0; k < n; k++) {
					if (buf[k] == '\n') {
						lbuf[lpos] = '\0';
						line(lbuf, arg);
						lpos = 0;
					} else if (lpos < sizeof(lbuf) - 1) { /* longer: cut */
						lbuf[lpos++] = buf[k];
					}
				}
			}
		}
	}
	if (lpos && line) {
		lbuf[lpos] = '\0';
		line(lbuf, arg);
	}
	relay_line(&r);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return errbuf_fail(err, errlen, -1, "waiting for %s: %s", t->argv[0],
					   strerror(errno));
		if (caught && !passed) {
			kill(-pid, caught);
			passed = 1;
		}
	}
	if (caught)
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d) while %s ran", caught,
				   t->argv[0]);
	/* A file that reached the budget: the tool died of SIGXFSZ, or said EFBIG and gave up. */
	if (budget.over || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) ||
	    (budget.dir[0] && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
	     strcasestr(r.said, strerror(EFBIG))))
		return errbuf_fail(
			err, errlen, -1,
			"stopped %s: the image would take more than %llu MiB of disk, or "
			"leave the store's file system under %llu MiB free",
			t->argv[0], (unsigned long long)(budget.max >> 20),
			(unsigned long long)(BUDGET_RESERVE >> 20));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return errbuf_fail(err, errlen, -1, "%s could not be run (is it installed?)",
				   t->argv[0]);
	if (WIFEXITED(status))
		return errbuf_fail(err, errlen, -1, "%s failed (exit status %d)%s%.300s",
				   t->argv[0], WEXITSTATUS(status), r.said[0] ? ": " : "", r.said);
	return errbuf_fail(err, errlen, -1, "%s was killed by signal %d", t->argv[0],
			   WTERMSIG(status));
}

int image_tool_lines(const struct image_tool *t, void (*line)(const char *s, void *arg), void *arg,
		     char *err, size_t errlen)
{
	int o[2] = { -1, -1 }, e[2];

	if (caught)
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d)", caught);
	if ((line && pipe2(o, O_CLOEXEC) < 0) || pipe2(e, O_CLOEXEC) < 0) {
		if (o[0] >= 0) {
			close(o[0]);
			close(o[1]);
		}
		return errbuf_fail(err, errlen, -1, "pipe: %s", strerror(errno));
	}
	pid_t pid = tool_start(t, line ? o[1] : t->out_fd, e[1], err, errlen);
	close(e[1]);
	if (o[1] >= 0)
		close(o[1]);
	int rc = pid < 0 ? -1 : tool_wait(t, pid, o[0], e[0], line, arg, err, errlen);
	close(e[0]);
	if (o[0] >= 0)
		close(o[0]);
	return rc;
}

int image_tool_run(const struct image_tool *t, char *err, size_t errlen)
{
	return image_tool_lines(t, NULL, NULL, err, errlen);
}
