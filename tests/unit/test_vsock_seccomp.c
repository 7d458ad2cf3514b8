/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vsock_seccomp.c: bulkhead-vsock's allow-list (vsock/seccomp.c) holds what its
 * loop does after lock-down, and refuses the rest: in a child process, the list is installed,
 * then the loop's work runs (a front-end message with a descriptor, the guest's RAM mapped
 * from a memfd, a connection buffer, kick and call eventfds, a host connection with its
 * CONNECT handshake and data both ways, stderr) and the child exits 0. Calls off the list kill
 * the child with SIGSYS: executable or fixed-address memory, mprotect, mremap, other socket
 * options. Refusals that fail cleanly (open, non-Unix sockets, unlink) return their errors. */
#include "lib/unix_listen.h"
#include "lib/vhost_user.h"
#include "vsock/seccomp.h"
#include "vsock/vmem.h"
#include "vsock/vsock.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define RAM (2u << 20)

static char dir[] = "/tmp/bulkhead-vsock-seccomp.XXXXXX";
static char lpath[128];

/* Runs FN in a child under the list; returns its wait status. */
static int in_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid;

	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* The loop's work, as vsock/main.c, device.c, conn.c and vmem.c do it. */
static void loop_work(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int call = eventfd(0, EFD_CLOEXEC), ram = memfd_create("ram", MFD_CLOEXEC);
	int fe[2], lfd = unix_listen(lpath, 4, true);

	if (ep < 0 || kick < 0 || call < 0 || ram < 0 || lfd < 0 || ftruncate(ram, RAM) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fe))
		_exit(2);
	if (vsock_seccomp_install())
		_exit(3);
	/* The front end connects: its read timeout; a message carrying a descriptor. */
	struct timeval tv = { .tv_sec = 5 };
	struct epoll_event ev = { .events = EPOLLIN };
	if (setsockopt(fe[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, fe[1], &ev) || epoll_ctl(ep, EPOLL_CTL_ADD, kick, &ev))
		_exit(4);
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_SET_VRING_CALL, 0, sizeof(m.p.u64));
	m.fds[0] = call;
	m.nfds = 1;
	if (vhost_user_send(fe[0], &m, NULL) ||
	    vhost_user_recv(fe[1], &m, VHOST_USER_TO_BACKEND, false, NULL) || m.nfds != 1)
		_exit(5);
	vhost_user_msg_close_fds(&m);
	/* The memory table: the guest's RAM mapped; replaced, so unmapped. */
	struct vmem mem = { 0 };
	if (vmem_map_fd(&mem, ram, 0, 0x10000000, RAM, 0))
		_exit(6);
	vmem_clear(&mem);
	/* A guest kick and our call. */
	uint64_t one = 1;
	struct epoll_event got;
	if (write(kick, &one, sizeof(one)) != sizeof(one) || epoll_wait(ep, &got, 1, 1000) != 1 ||
	    read(kick, &one, sizeof(one)) != sizeof(one) || write(call, &one, sizeof(one)) < 0)
		_exit(7);
	/* A guest connection to a host port: its buffer, the socket, data both ways. */
	uint8_t *buf = malloc(VSOCK_BUF_ALLOC);
	int c = unix_connect(lpath, true);
	int h = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	char line[32];
	struct iovec iov = { buf, 64 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (!buf || c < 0 || h < 0 || send(h, "CONNECT 1234\n", 13, MSG_NOSIGNAL) != 13 ||
	    recv(c, line, sizeof(line), MSG_PEEK | MSG_DONTWAIT) != 13 ||
	    recv(c, line, 13, MSG_DONTWAIT) != 13 ||
	    send(c, "OK 1073741824\n", 14, MSG_NOSIGNAL | MSG_DONTWAIT) != 14 ||
	    sendmsg(c, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != 64 || readv(h, &iov, 1) < 14 ||
	    shutdown(c, SHUT_WR))
		_exit(8);
	free(buf);
	close(c);
	close(h);
	/* Refused, but not fatal. */
	if (open("/etc/passwd", O_RDONLY) >= 0 || errno != EACCES)
		_exit(9);
	if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EAFNOSUPPORT)
		_exit(10);
	if (unlink(lpath) == 0 || errno != EPERM)
		_exit(11);
	fprintf(stderr, "# the loop's work ran under the list\n");
	exit(0); /* exit_group, as main's return */
}

static void test_loop_work(void **state)
{
	(void)state;
	int st = in_child(loop_work);

	if (WIFSIGNALED(st))
		fail_msg("killed by signal %d: a call the loop needs is off the list",
			 WTERMSIG(st));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void install(void)
{
	if (vsock_seccomp_install())
		_exit(3);
}

static void exec_memory(void)
{
	install();
	(void)mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
}

static void fixed_memory(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	install();
	(void)mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static void protect_exec(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	install();
	(void)mprotect(p, 4096, PROT_READ | PROT_EXEC);
}

static void remap(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	install();
	(void)mremap(p, 4096, 8192, MREMAP_MAYMOVE);
}

static void other_sockopt(void)
{
	int s[2], sz = 4096;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		_exit(2);
	install();
	(void)setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static void test_refused_calls_kill(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		void (*fn)(void);
		int san_allows; /* a sanitizer build's run time needs the call unrestricted */
	} cases[] = {
		{ "executable memory", exec_memory, 1 },
		{ "memory at a fixed address", fixed_memory, 1 },
		{ "mprotect", protect_exec, 1 },
		{ "mremap", remap, 0 },
		{ "a socket option other than the read timeout", other_sockopt, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
#ifdef BULKHEAD_SANITIZED
		if (cases[i].san_allows)
			continue;
#endif
		int st = in_child(cases[i].fn);

		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("%s: not killed by SIGSYS (status 0x%x)", cases[i].what, st);
	}
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(lpath, sizeof(lpath), "%s/vsock.sock_1234", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(lpath);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop_work),
		cmocka_unit_test(test_refused_calls_kill),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
