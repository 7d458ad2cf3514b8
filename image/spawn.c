/* SPDX-License-Identifier: Apache-2.0 */
/* image/spawn.c: the external tools (mmdebstrap, tar, skopeo, umoci), run by fork and exec with
 * an argument vector — never through a shell — their stderr passed through so that the user sees
 * their progress, their stdout on our stderr (or read by us), stdin on /dev/null. */
#include "image/image_int.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t caught;

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

static pid_t tool_start(const struct image_tool *t, int out, char *err, size_t errlen)
{
	char **env = tool_env(t);
	if (!env)
		return errbuf_fail(err, errlen, -1, "out of memory");
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out >= 0 ? out : 2, 1) < 0)
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

/* Waits for PID, passing on a signal we get meanwhile. 0 when it exited 0, else -1 with err. */
static int tool_wait(const struct image_tool *t, pid_t pid, char *err, size_t errlen)
{
	int status, passed = 0;

	for (;;) {
		if (waitpid(pid, &status, 0) == pid)
			break;
		if (errno != EINTR)
			return errbuf_fail(err, errlen, -1, "waiting for %s: %s", t->argv[0],
					   strerror(errno));
		if (caught && !passed) {
			kill(pid, caught);
			passed = 1;
		}
	}
	if (caught)
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d) while %s ran", caught,
				   t->argv[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return errbuf_fail(err, errlen, -1, "%s could not be run (is it installed?)",
				   t->argv[0]);
	if (WIFEXITED(status))
		return errbuf_fail(err, errlen, -1, "%s failed (exit status %d)", t->argv[0],
				   WEXITSTATUS(status));
	return errbuf_fail(err, errlen, -1, "%s was killed by signal %d", t->argv[0],
			   WTERMSIG(status));
}

int image_tool_run(const struct image_tool *t, char *err, size_t errlen)
{
	if (caught)
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d)", caught);
	pid_t pid = tool_start(t, t->out_fd, err, errlen);
	return pid < 0 ? -1 : tool_wait(t, pid, err, errlen);
}

int image_tool_lines(const struct image_tool *t, void (*line)(const char *s, void *arg), void *arg,
		     char *err, size_t errlen)
{
	int p[2];
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (caught)
		return errbuf_fail(err, errlen, -1, "interrupted (signal %d)", caught);
	if (pipe2(p, O_CLOEXEC) < 0)
		return errbuf_fail(err, errlen, -1, "pipe: %s", strerror(errno));
	pid_t pid = tool_start(t, p[1], err, errlen);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	FILE *f = fdopen(p[0], "r");
	while (f && (n = getline(&buf, &cap, f)) >= 0) {
		if (n > 0 && buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		line(buf, arg);
	}
	free(buf);
	if (f)
		fclose(f);
	else
		close(p[0]);
	return tool_wait(t, pid, err, errlen);
}
