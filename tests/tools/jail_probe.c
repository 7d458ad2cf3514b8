/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/jail_probe.c: runs a program through the launcher's own jail step
 * (jail/jail.c's jail_spawn, exactly as a session starts bulkhead-vsock), with a
 * listening Unix socket as its descriptor 3, and reports how it ended:
 * "exit N" or "signal N (NAME)". With --root DIR, inside an empty root holding only DIR
 * (given to the jail's uid); with --empty-root, in an empty root holding nothing. --uid picks
 * the ids as `bulkhead run --jail-uid` does; each --fd FILE is opened here (read-write for a
 * device) and handed over after the socket, as 4, 5, ... (bulkhead-vmm's way to its files);
 * --file-writes lets files grow, as for a VM process (its memfd).
 * Usage: jail-probe [--uid UID[:GID]] [--root DIR | --empty-root] [--fd FILE]... [--file-writes]
 *                   SOCKET-PATH PROGRAM [ARG...] */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail/jail.h"

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), st;
	struct jail_ids ids = JAIL_IDS_INIT;
	const char *root_dir = NULL, *uid = NULL;
	bool empty_root = false, file_writes = false;
	int fds[8] = { lfd };
	size_t nfds = 1;
	char err[256];
	pid_t pid;

	for (;;) {
		if (argc > 3 &&
		    (!strcmp(argv[1], "--empty-root") || !strcmp(argv[1], "--file-writes"))) {
			empty_root |= !strcmp(argv[1], "--empty-root");
			file_writes |= !strcmp(argv[1], "--file-writes");
			argv++;
			argc--;
			continue;
		}
		if (argc > 3 && !strcmp(argv[1], "--root")) {
			root_dir = argv[2];
		} else if (argc > 3 && !strcmp(argv[1], "--uid")) {
			uid = argv[2];
		} else if (argc > 3 && !strcmp(argv[1], "--fd") && nfds < 8) {
			struct stat sb;
			bool dev = stat(argv[2], &sb) == 0 && S_ISCHR(sb.st_mode);
			if ((fds[nfds++] = open(argv[2], (dev ? O_RDWR : O_RDONLY) | O_CLOEXEC)) <
			    0) {
				perror(argv[2]);
				return 1;
			}
		} else {
			break;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: jail-probe [--uid UID[:GID]] [--root DIR | --empty-root] "
				"[--fd FILE]... [--file-writes] SOCKET-PATH PROGRAM [ARG...]\n");
		return 2;
	}
	if (jail_ids_acquire(&ids, uid, err, sizeof(err)) < 0 ||
	    (root_dir && jail_ids_give_dir(&ids, root_dir) < 0)) {
		fprintf(stderr, "jail-probe: %s\n", err);
		return 1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("jail-probe: socket");
		return 1;
	}
	/* Its output through a pipe, as in a session (the jail forbids growing files). */
	int p[2];
	char buf[4096];
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	const struct jail_mount mount = { .src = root_dir, .flags = JAIL_MOUNT_RW };
	const struct jail_spec spec = {
		.ids = &ids,
		.empty_root = root_dir != NULL || empty_root,
		.file_writes = file_writes,
		.mounts = &mount,
		.nmounts = root_dir != NULL,
		.extra_gid = (gid_t)-1,
		.fds = fds,
		.nfds = nfds,
		.out_fd = p[1],
		.diag_fd = p[1],
	};
	printf("uid %u gid %u\n", (unsigned)ids.uid, (unsigned)ids.gid);
	fflush(stdout);
	pid = jail_spawn(argv + 2, &spec);
	close(p[1]);
	if (pid < 0) {
		fprintf(stderr, "jail-probe: %s\n", strerror((int)-pid));
		return 1;
	}
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	fflush(stdout);
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	if (WIFSIGNALED(st))
		printf("signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		printf("exit %d\n", WEXITSTATUS(st));
	unlink(argv[1]);
	return 0;
}
