/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/reap_check.c: runs a command as the reaper of everything it leaves behind
 * (PR_SET_CHILD_SUBREAPER), and reports what is left the moment it returns: any process
 * it started that still runs, or died and was never reaped, becomes our child then.
 *
 *   reap-check CMD [ARG...]
 *
 * Prints "left: PID STATE NAME" for each such process (then kills and reaps it) and exits
 * 99 if there was any; otherwise exits with CMD's own status (128+N for signal N). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* "STATE NAME" of pid from /proc/PID/stat, or "? ?". */
static void describe(long pid, char *out, size_t len)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	char *open_ = n > 0 ? (buf[n] = '\0', strchr(buf, '(')) : NULL;
	char *close_ = open_ ? strrchr(open_, ')') : NULL;
	if (!close_ || close_[1] != ' ') {
		snprintf(out, len, "? ?");
		return;
	}
	*close_ = '\0';
	snprintf(out, len, "%c %s", close_[2], open_ + 1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: reap-check CMD [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("reap-check: PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror("reap-check: exec");
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 2;
	/* Everything still ours now was left behind by CMD. */
	char path[64], list[4096];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, list, sizeof(list) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		perror("reap-check: children list");
		return 2;
	}
	list[n] = '\0';
	int left = 0;
	for (char *p = list, *end; *p; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		char what[300];
		describe(child, what, sizeof(what));
		printf("left: %ld %s\n", child, what);
		kill((pid_t)child, SIGKILL);
		left++;
	}
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	if (left)
		return 99;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
