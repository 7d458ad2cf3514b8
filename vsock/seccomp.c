/* vsock/seccomp.c: the allow-list (see seccomp.h), built with libseccomp for the native
 * architecture only (any other architecture's calls kill the process too). */
#include "vsock/seccomp.h"

#include "lib/san.h"

#include <errno.h>
#include <sys/socket.h>

#include <seccomp.h>

/* What the event loop does: epoll, the vhost-user socket (messages with descriptors), the
 * guest's memory regions (mmap), kick and call eventfds, Unix-socket connections to the
 * host's vsock.sock_<port> listeners, stderr, and the allocator. */
static const int allowed[] = {
	SCMP_SYS(epoll_wait),	SCMP_SYS(epoll_pwait),	  SCMP_SYS(epoll_ctl),
	SCMP_SYS(read),		SCMP_SYS(readv),	  SCMP_SYS(write),
	SCMP_SYS(writev),	SCMP_SYS(recvfrom),	  SCMP_SYS(recvmsg),
	SCMP_SYS(sendto),	SCMP_SYS(sendmsg),	  SCMP_SYS(accept4),
	SCMP_SYS(connect),	SCMP_SYS(shutdown),	  SCMP_SYS(getsockopt),
	SCMP_SYS(setsockopt),	SCMP_SYS(close),	  SCMP_SYS(fcntl),
	SCMP_SYS(mmap),		SCMP_SYS(munmap),	  SCMP_SYS(mremap),
	SCMP_SYS(mprotect),	SCMP_SYS(madvise),	  SCMP_SYS(brk),
	SCMP_SYS(futex),	SCMP_SYS(newfstatat),	  SCMP_SYS(fstat),
	SCMP_SYS(lseek),	SCMP_SYS(clock_gettime),  SCMP_SYS(gettimeofday),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),		SCMP_SYS(exit_group),	  SCMP_SYS(getpid),
};

int vsock_seccomp_install(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	size_t i;
	int rc = ctx ? 0 : -ENOMEM;

	for (i = 0; !rc && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* Unix sockets only: the host's listeners. Anything else fails, it does not kill. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
	/* At an orderly end it removes its sockets; the launcher does that too. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unlink), 0);
#ifdef BULKHEAD_SANITIZED
	if (!rc)
		rc = san_seccomp_allow(ctx); /* a sanitizer build's run time (lib/san.h) */
#endif
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}
