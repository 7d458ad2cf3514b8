/* vsock/seccomp.c: the allow-list (see seccomp.h), built with libseccomp for the native
 * architecture only (any other architecture's calls kill the process too). */
#include "vsock/seccomp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/prctl.h>

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
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}

/* Everything from system calls: inside an empty root there is no /proc to read. */
void vsock_jail_selftest_before(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	unsigned long long bnd = 0, amb = 0;
	char fds[256] = "", root[256] = "";
	DIR *dir = opendir("/");
	struct dirent *e;

	syscall(SYS_capget, &h, d);
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			bnd |= 1ULL << c;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
			amb |= 1ULL << c;
	}
	fprintf(stderr, "selftest: Uid:\t%d\t%d\n", (int)getuid(), (int)geteuid());
	fprintf(stderr, "selftest: NSpid:\t%d\n", (int)getpid());
	fprintf(stderr, "selftest: CapPrm:\t%08x%08x\n", d[1].permitted, d[0].permitted);
	fprintf(stderr, "selftest: CapEff:\t%08x%08x\n", d[1].effective, d[0].effective);
	fprintf(stderr, "selftest: CapBnd:\t%016llx\n", bnd);
	fprintf(stderr, "selftest: CapAmb:\t%016llx\n", amb);
	fprintf(stderr, "selftest: NoNewPrivs:\t%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	for (int fd = 0; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0 && (!dir || fd != dirfd(dir)) &&
		    strlen(fds) + 4 < sizeof(fds))
			snprintf(fds + strlen(fds), sizeof(fds) - strlen(fds), " %d", fd);
	fprintf(stderr, "selftest: fds%s\n", fds);
	while (dir && (e = readdir(dir))) {
		size_t n = strlen(root);

		if (e->d_name[0] != '.' && n + strlen(e->d_name) + 2 < sizeof(root)) {
			root[n] = ' ';
			strcpy(root + n + 1, e->d_name);
		}
	}
	if (dir)
		closedir(dir);
	fprintf(stderr, "selftest: root:%s\n", root);
}

void vsock_jail_selftest_after(void)
{
	int fd = open("/etc/passwd", O_RDONLY);

	fprintf(stderr, "selftest: open /etc/passwd: %s\n", fd < 0 ? strerror(errno) : "opened");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	fprintf(stderr, "selftest: socket AF_INET: %s\n", fd < 0 ? strerror(errno) : "created");
	fprintf(stderr, "selftest: calling getppid, which is not on the list\n");
	syscall(SYS_getppid);
	fprintf(stderr, "selftest: still alive after a forbidden call\n");
}
