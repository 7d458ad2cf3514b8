/* SPDX-License-Identifier: Apache-2.0 */
/* lib/jail_selftest.c: what a jailed process reports about itself (see the header). Only
 * system calls and stderr: it runs inside an empty root with no /proc. */
#include "lib/jail_selftest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

void jail_selftest_report(void)
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

void jail_selftest_probe(void)
{
	int fd = open("/etc/passwd", O_RDONLY);

	fprintf(stderr, "selftest: open /etc/passwd: %s\n", fd < 0 ? strerror(errno) : "opened");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	fprintf(stderr, "selftest: socket AF_INET: %s\n", fd < 0 ? strerror(errno) : "created");
	fprintf(stderr, "selftest: calling getppid, which is not on the list\n");
	syscall(SYS_getppid);
	fprintf(stderr, "selftest: still alive after a forbidden call\n");
}
