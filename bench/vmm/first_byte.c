/* SPDX-License-Identifier: Apache-2.0 */
/* bench/vmm/first_byte.c: times a program from just before fork+exec to the first byte on
 * its stdout — for a VMM running a guest whose first instruction writes the serial port,
 * that is "exec to the guest's first instruction", the same yardstick for every VMM.
 * Usage: first-byte CMD [ARG...]; prints the nanoseconds, exits 0, or 1 on failure. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FIRST_BYTE_LIMIT_MS 30000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int p[2];
	if (argc < 2 || pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "usage: first-byte CMD [ARG...]\n");
		return 1;
	}
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0)
		return 1;
	struct pollfd pf = { p[0], POLLIN, 0 };
	char c;
	int rc = 1;
	if (poll(&pf, 1, FIRST_BYTE_LIMIT_MS) == 1 && read(p[0], &c, 1) == 1) {
		printf("%llu\n", (unsigned long long)(now_ns() - t0));
		rc = 0;
	} else {
		fprintf(stderr, "first-byte: %s wrote nothing\n", argv[1]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}
