/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guest-tools/agent_attack.c: a hostile guest command (static, run as root in the
 * guest) that takes its exec agent's vsock stream away from it and writes to the host what
 * the agent never would, to show that no such stream can hold a session past its deadline.
 *
 *   agent-attack half           one byte of a frame header, then nothing
 *   agent-attack trickle MS     a STDOUT frame, one byte every MS milliseconds
 *   agent-attack flood          whole 64 KiB STDOUT frames, as fast as the host takes them
 *   agent-attack oversize       a header announcing a 4 GiB payload
 *   agent-attack lifeline       one byte on init's ready connection (the session's lifeline)
 *
 * Once the attack is under way it creates /work/$ATTACK_MARK (when set), so that a test acts
 * on the host only after the stream is in that state (a fresh name each time: the guest's
 * cache may still hold an old file of the same name for a moment). SIGINT, SIGTERM and SIGHUP
 * are ignored, as a hostile command would. The stream is taken
 * with pidfd_getfd() from the agent's exec handler (our parent) or from init (PID 1): the
 * connected vsock stream socket among its descriptors. The frame layout is written out here
 * on purpose (not taken from lib/agent_proto.h): this is what a guest could send. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/io.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* A connected vsock stream socket of process pid, as a descriptor of ours; -1 if none. */
static int steal_vsock(pid_t pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		perror("agent-attack: pidfd_open");
		return -1;
	}
	for (int fd = 0; fd < 256; fd++) {
		int mine = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
		if (mine < 0)
			continue;
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		if (getsockname(mine, (struct sockaddr *)&sa, &len) == 0 &&
		    sa.ss_family == AF_VSOCK &&
		    getpeername(mine, (struct sockaddr *)&sa, &len) == 0)
			return mine;
		close(mine);
	}
	fprintf(stderr, "agent-attack: no connected vsock stream in process %d\n", (int)pid);
	return -1;
}

static void put(int fd, const void *b, size_t n)
{
	if (io_write_full(fd, b, n))
		exit(3); /* the host closed the stream: the session ended */
}

/* version 1, type, reserved 0, little-endian length */
static void header(uint8_t h[8], uint8_t type, uint32_t len)
{
	h[0] = 1;
	h[1] = type;
	h[2] = h[3] = 0;
	for (int i = 0; i < 4; i++)
		h[4 + i] = (uint8_t)(len >> (8 * i));
}

static void mark_attacked(void)
{
	const char *name = getenv("ATTACK_MARK");
	char path[256];
	if (!name || strchr(name, '/') ||
	    snprintf(path, sizeof(path), "/work/%s", name) >= (int)sizeof(path))
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: agent-attack half|trickle MS|flood|oversize|lifeline\n");
		return 2;
	}
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	const char *mode = argv[1];
	int fd = steal_vsock(strcmp(mode, "lifeline") == 0 ? 1 : getppid());
	if (fd < 0)
		return 2;
	uint8_t h[8];
	if (strcmp(mode, "half") == 0 || strcmp(mode, "lifeline") == 0) {
		header(h, 16, 1);
		put(fd, h, 1);
		mark_attacked();
	} else if (strcmp(mode, "trickle") == 0 && argc == 3) {
		long ms = atol(argv[2]);
		uint8_t frame[8 + 64];
		header(frame, 16, 64);
		memset(frame + 8, 'x', 64);
		for (size_t i = 0; i < sizeof(frame); i++) {
			put(fd, frame + i, 1);
			if (i == 0)
				mark_attacked();
			sleep_ms(ms);
		}
	} else if (strcmp(mode, "flood") == 0) {
		static uint8_t frame[8 + 65536];
		header(frame, 16, 65536);
		memset(frame + 8, 'f', 65536);
		mark_attacked();
		for (;;)
			put(fd, frame, sizeof(frame));
	} else if (strcmp(mode, "oversize") == 0) {
		header(h, 16, 0xffffffffu);
		put(fd, h, sizeof(h));
		mark_attacked();
	} else {
		fprintf(stderr, "agent-attack: unknown mode %s\n", mode);
		return 2;
	}
	for (;;)
		pause();
}
