/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/seccomp.c: the allow-list (see seccomp.h), built with libseccomp for the native
 * architecture only; every other architecture's calls (x32 included) kill the process.
 * bulkhead-vsock has one thread, so one role: its epoll loop (vsock/main.c) after set-up.
 * Derived from the code that loop runs and checked with strace -f on the e2e suites
 * (tests/e2e/test_vsock.sh, test_vsock_restart.sh); each call says who needs it, and calls
 * whose arguments say what they do are pinned to what the loop passes. tests/unit/
 * test_vsock_seccomp.c runs the loop's work under the list and the calls it refuses. */
#include "vsock/seccomp.h"

#include "lib/san.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <seccomp.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Any argument. */
static const int loop_calls[] = {
	SCMP_SYS(epoll_wait),	 /* the loop's one wait (vsock/main.c) */
#if defined(__aarch64__)
	SCMP_SYS(epoll_pwait), /* epoll_wait() is this call on arm64, which has no epoll_wait */
#endif
	SCMP_SYS(epoll_ctl),	 /* host connections, the front end and kick eventfds come and go */
	SCMP_SYS(read),		 /* a kick eventfd's count (main.c) */
	SCMP_SYS(write),	 /* a call eventfd (virtq.c); stderr lines */
	SCMP_SYS(readv),	 /* a host connection's bytes, straight into the guest's buffers
				  * (device.c) */
	SCMP_SYS(recvfrom),	 /* recv: the front end's message bodies (lib/vhost_user.c); a host
				  * connection's CONNECT line, peeked, then taken (conn.c) */
	SCMP_SYS(recvmsg),	 /* the front end's message headers, with descriptors */
	SCMP_SYS(sendmsg),	 /* replies to the front end; guest bytes to a host connection */
	SCMP_SYS(sendto),	 /* send: the "OK <port>" of the CONNECT handshake (device.c) */
	SCMP_SYS(accept4),	 /* the one front end; host programs on vsock.sock */
	SCMP_SYS(connect),	 /* a guest connection to vsock.sock_<port> (conn.c; socket() below
				  * makes only Unix sockets) */
	SCMP_SYS(shutdown),	 /* the guest shut its sending side (conn.c) */
	SCMP_SYS(close),	 /* connections, rings' eventfds, the front end's surplus fds */
	SCMP_SYS(munmap),	 /* a replaced memory table (vmem.c); a freed connection buffer */
	SCMP_SYS(brk),		 /* the allocator's small blocks */
	SCMP_SYS(clock_gettime), /* lib/vhost_user.c's deadlines, where the vDSO cannot serve */
	SCMP_SYS(exit_group),	 /* the end: main returns */
};

/* mmap: never executable, never at a fixed address, nothing but these two shapes. */
static int add_mmap(scmp_filter_ctx ctx)
{
	/* The guest's RAM, one region of the front end's table (vsock/vmem.c). */
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 3,
				  SCMP_A2(SCMP_CMP_EQ, PROT_READ | PROT_WRITE),
				  SCMP_A3(SCMP_CMP_EQ, MAP_SHARED | MAP_NORESERVE),
				  SCMP_A5(SCMP_CMP_EQ, 0));
	/* The allocator's large blocks: a connection's 256 KiB buffer (conn.c). */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 2,
				      SCMP_A2(SCMP_CMP_EQ, PROT_READ | PROT_WRITE),
				      SCMP_A3(SCMP_CMP_EQ, MAP_PRIVATE | MAP_ANONYMOUS));
	return rc;
}

/* Calls that fail rather than kill: a stray attempt is a clean error (and the jail's self-test
 * can see the list at work). */
static int add_refusals(scmp_filter_ctx ctx)
{
	/* Only Unix sockets (the host's vsock.sock_<port> listeners); any other family fails. */
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				  SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	/* Nothing is opened after set-up. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
	/* At an orderly end it removes its sockets; the launcher does that too. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unlink), 0);
#if defined(__aarch64__)
	if (!rc) /* unlink() is unlinkat on arm64 */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unlinkat), 0);
#endif
	return rc;
}

int vsock_seccomp_install(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc = ctx ? 0 : -ENOMEM;

	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	for (size_t i = 0; !rc && i < NELEM(loop_calls); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, loop_calls[i], 0);
	if (!rc)
		rc = add_mmap(ctx);
	/* The front end's read timeout, set when it connects (main.c). */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 2,
				      SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
				      SCMP_A2(SCMP_CMP_EQ, SO_RCVTIMEO));
	if (!rc)
		rc = add_refusals(ctx);
#ifdef BULKHEAD_SANITIZED
	if (!rc)
		rc = san_seccomp_allow(ctx); /* a sanitizer build's run time (lib/san.h) */
#endif
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}
