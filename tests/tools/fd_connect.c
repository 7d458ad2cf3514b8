/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/fd_connect.c: connects Unix sockets onto chosen descriptors, then runs a
 * command with them open (how a launcher hands bulkhead-vmm its back ends' sockets).
 *
 *   fd-connect FD=PATH [FD=PATH...] -- CMD [ARG...]
 *
 * Each PATH is a listening stream socket; FD is the descriptor the connection gets in CMD
 * (3 to 1023, each once). Exits 2 with one line on a bad argument, 1 if a connection fails,
 * 127 if CMD cannot run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(int rc, const char *what, const char *arg)
{
	fprintf(stderr, "fd-connect: %s %s%s%s\n", what, arg, errno ? ": " : "",
		errno ? strerror(errno) : "");
	return rc;
}

/* Connects to path and puts the connection on descriptor fd (open across exec). */
static int connect_onto(int fd, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (s != fd && dup2(s, fd) < 0)) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	if (s != fd)
		close(s);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;
	char used[1024] = { 0 };
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		char *end;
		errno = 0;
		long fd = strtol(argv[i], &end, 10);
		if (end == argv[i] || *end != '=' || fd < 3 || fd > 1023 || used[fd] || !end[1])
			return fail(2, "bad argument (FD=PATH, FD 3..1023, each once):", argv[i]);
		used[fd] = 1;
		if (connect_onto((int)fd, end + 1) < 0)
			return fail(1, "cannot connect to", end + 1);
	}
	if (i + 1 >= argc) {
		errno = 0;
		return fail(2, "usage:", "fd-connect FD=PATH... -- CMD [ARG...]");
	}
	execvp(argv[i + 1], argv + i + 1);
	return fail(127, "cannot run", argv[i + 1]);
}
