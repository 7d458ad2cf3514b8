/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guest-tools/vsock_tool.c: a static byte pump for the vsock tests — AF_VSOCK modes run
 * in the guest, Unix-socket modes (the hybrid side) run on the host; same binary for both. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "lib/io.h"

static void usage(void)
{
	fputs("usage: vsock-tool connect PORT | listen PORT | sink PORT SECONDS   (guest, vsock)\n"
	      "       vsock-tool uconnect PATH PORT | ulisten PATH | usink PATH SECONDS (host)\n"
	      "       vsock-tool pair BYTES   (reference: the same pump over a host socketpair)\n"
	      "Pumps stdin to the stream (then half-closes) and the stream to stdout.\n",
	      stderr);
	exit(2);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned parse_port(const char *s)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v > 0xffffffffUL)
		usage();
	return (unsigned)v;
}

/* VSOCK_TOOL_STATS=1: one "STATS recv BYTES MS" line on stderr, timed from the first byte
 * received to EOF (bench/vsock-throughput.sh reads it). */
static void report(unsigned long long bytes, double t0)
{
	if (getenv("VSOCK_TOOL_STATS"))
		fprintf(stderr, "STATS recv %llu %.3f\n", bytes, bytes ? now_ms() - t0 : 0.0);
}

/* stdin -> s (then SHUT_WR), s -> stdout, until both directions are done. Writes to s never
 * block: with both ends of a connection pumping at once, two blocking writers each waiting for
 * the other to read would deadlock once both buffers are full. */
static int pump(int s)
{
	static char buf[1 << 16], out[1 << 16];
	int in_open = 1, s_open = 1;
	size_t out_len = 0, out_off = 0;
	unsigned long long got = 0;
	double t0 = 0;
	while (s_open || in_open || out_len) {
		/* fd -1 is skipped by poll: a finished direction is not watched. */
		struct pollfd p[2] = { { s_open || out_len ? s : -1,
					 (short)((s_open ? POLLIN : 0) | (out_len ? POLLOUT : 0)),
					 0 },
				       { in_open && !out_len ? 0 : -1, POLLIN, 0 } };
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1;
		if (s_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = read(s, buf, sizeof(buf));
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k < 0) {
				printf("ERR read %s\n", strerror(errno));
				return 1;
			}
			if (k == 0) {
				s_open = 0;
				report(got, t0);
			} else {
				if (got == 0)
					t0 = now_ms();
				got += (unsigned long long)k;
				if (io_write_full(1, buf, (size_t)k))
					return 1;
			}
		}
		if (out_len && (p[0].revents & (POLLOUT | POLLERR))) {
			ssize_t k = send(s, out + out_off, out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (k < 0 && errno != EINTR && errno != EAGAIN) {
				printf("ERR write %s\n", strerror(errno));
				return 1;
			}
			if (k > 0) {
				out_off += (size_t)k;
				out_len -= (size_t)k;
			}
			if (!out_len && !in_open)
				shutdown(s, SHUT_WR);
		}
		if (in_open && !out_len && p[1].revents) {
			ssize_t k = read(0, out, sizeof(out));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				in_open = 0;
				shutdown(s, SHUT_WR);
			} else {
				out_off = 0;
				out_len = (size_t)k;
			}
		}
	}
	return 0;
}

static int vsock_listen(unsigned port)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_ANY,
				  .svm_port = port };
	int l = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4)) {
		printf("ERR listen %s\n", strerror(errno));
		exit(3);
	}
	/* The host test waits for this line before it connects. */
	fprintf(stderr, "LISTENING %u\n", port);
	int s = accept(l, NULL, NULL);
	if (s < 0) {
		printf("ERR accept %s\n", strerror(errno));
		exit(3);
	}
	close(l);
	return s;
}

static int unix_socket(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		usage();
	strcpy(sa->sun_path, path);
	return socket(AF_UNIX, SOCK_STREAM, 0);
}

static int unix_listen(const char *path)
{
	struct sockaddr_un sa;
	int l = unix_socket(path, &sa);
	unlink(path);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4)) {
		fprintf(stderr, "vsock-tool: listen %s: %s\n", path, strerror(errno));
		exit(3);
	}
	int s = accept(l, NULL, NULL);
	if (s < 0)
		exit(3);
	close(l);
	unlink(path);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const char *mode = argv[1];
	if (!strcmp(mode, "connect") && argc == 3) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_HOST,
					  .svm_port = parse_port(argv[2]) };
		int s = socket(AF_VSOCK, SOCK_STREAM, 0);
		double t0 = now_ms();
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			/* The e2e suite checks the errno and that this took well under a second. */
			printf("CONNECT-FAILED %s %.0f ms\n", strerror(errno), now_ms() - t0);
			return 3;
		}
		return pump(s);
	}
	if (!strcmp(mode, "listen") && argc == 3)
		return pump(vsock_listen(parse_port(argv[2])));
	if (!strcmp(mode, "sink") && argc == 4) {
		int s = vsock_listen(parse_port(argv[2]));
		/* Never read: the host side must be throttled by credit, not buffered. */
		sleep((unsigned)atoi(argv[3]));
		close(s);
		return 0;
	}
	if (!strcmp(mode, "uconnect") && argc == 4) {
		struct sockaddr_un sa;
		int s = unix_socket(argv[2], &sa);
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "vsock-tool: connect %s: %s\n", argv[2], strerror(errno));
			return 3;
		}
		char line[64];
		int n = snprintf(line, sizeof(line), "CONNECT %s\n", argv[3]);
		if (io_write_full(s, line, (size_t)n))
			return 3;
		/* Byte by byte: what follows the OK line is stream data. */
		size_t len = 0;
		while (len < sizeof(line) - 1) {
			ssize_t k = read(s, line + len, 1);
			if (k <= 0) {
				fprintf(stderr, "vsock-tool: closed during handshake\n");
				return 4;
			}
			if (line[len++] == '\n')
				break;
		}
		line[len] = '\0';
		fprintf(stderr, "%s", line);
		if (strncmp(line, "OK ", 3) != 0)
			return 4;
		return pump(s);
	}
	if (!strcmp(mode, "pair") && argc == 3) {
		/* The reference: the same byte pump over a host socketpair. */
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
			return 3;
		unsigned long long n = strtoull(argv[2], NULL, 10);
		pid_t pid = fork();
		if (pid == 0) {
			static char zero[1 << 16];
			close(sp[0]);
			while (n) {
				size_t k = n < sizeof(zero) ? (size_t)n : sizeof(zero);
				if (io_write_full(sp[1], zero, k))
					_exit(1);
				n -= k;
			}
			_exit(0);
		}
		close(sp[1]);
		int in = open("/dev/null", O_RDONLY);
		if (pid < 0 || in < 0 || dup2(in, 0) < 0)
			return 3;
		int out = open("/dev/null", O_WRONLY);
		if (out < 0 || dup2(out, 1) < 0)
			return 3;
		return pump(sp[0]);
	}
	if (!strcmp(mode, "ulisten") && argc == 3)
		return pump(unix_listen(argv[2]));
	if (!strcmp(mode, "usink") && argc == 4) {
		int s = unix_listen(argv[2]);
		sleep((unsigned)atoi(argv[3]));
		close(s);
		return 0;
	}
	usage();
}
