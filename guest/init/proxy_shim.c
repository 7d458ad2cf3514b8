/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/proxy_shim.c: the guest's only way out — an HTTP proxy address on
 * 127.0.0.1:3128 that carries each connection, byte for byte, to the session's
 * credential broker over vsock (host port BROKER_VSOCK_PORT). The broker decides
 * and holds every secret; this only relays. With no broker, connections fail. */
#include "guest/init/init.h"
#include "lib/agent_proto.h"

#include <errno.h>
#include <sys/socket.h> /* before vm_sockets.h: older kernel headers need sockaddr */
#include <linux/vm_sockets.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define SHIM_BUF 65536

static int loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	int rc = s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ? -1 : 0;
	ifr.ifr_flags |= IFF_UP;
	if (rc == 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		rc = -1;
	int e = errno;
	if (s >= 0)
		close(s);
	return rc < 0 ? -e : 0;
}

/* Copies both ways until both directions have ended; half-closes are passed on. */
static void relay(int a, int b)
{
	static char buf[SHIM_BUF];
	int fds[2] = { a, b };
	bool open_[2] = { true, true };
	while (open_[0] || open_[1]) {
		struct pollfd p[2] = { { .fd = open_[0] ? a : -1, .events = POLLIN },
				       { .fd = open_[1] ? b : -1, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return;
		for (int i = 0; i < 2; i++) {
			if (!open_[i] || !p[i].revents)
				continue;
			ssize_t n = read(fds[i], buf, sizeof(buf));
			if (n <= 0) {
				open_[i] = false;
				shutdown(fds[1 - i], SHUT_WR);
				continue;
			}
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(fds[1 - i], buf + off, (size_t)(n - off));
				if (w <= 0)
					return;
				off += w;
			}
		}
	}
}

static void serve(int client)
{
	int v = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_HOST,
				  .svm_port = BROKER_VSOCK_PORT };
	if (v >= 0 && connect(v, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		relay(client, v);
	_exit(0);
}

int proxy_shim_start(void)
{
	int rc = loopback_up();
	if (rc < 0)
		return rc;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(GUEST_PROXY_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 64) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(l);
		return 0;
	}
	/* The shim: one child per connection, reaped by the kernel. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* What the broker answers is written as it arrives: small writes must not wait on
		 * the client's delayed ACK (Nagle), as a gRPC call's frames would. */
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fork() == 0) {
			close(l);
			serve(c);
		}
		close(c);
	}
}
