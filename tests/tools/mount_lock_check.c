/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/mount_lock_check.c: from the host, as root, into the user and mount namespaces of
 * a process (a session's serving virtiofsd), then tries what a taken-over virtiofsd would: each
 * PATH (as that process sees it) unmounted, and made writable again. Prints one line per
 * path: "PATH umount RESULT remount RESULT", RESULT "ok" or the errno's name. For
 * tests/e2e/test_share_rules.sh: a share's rule mounts are locked there.
 * Usage: mount-lock-check PID PATH... */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char *res(int rc)
{
	return rc < 0 ? strerrorname_np(errno) : "ok";
}

int main(int argc, char **argv)
{
	char path[64];
	int user, mnt;

	if (argc < 3) {
		fprintf(stderr, "usage: mount-lock-check PID PATH...\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/ns/user", argv[1]);
	user = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%s/ns/mnt", argv[1]);
	mnt = open(path, O_RDONLY | O_CLOEXEC);
	if (user < 0 || mnt < 0 || setns(user, CLONE_NEWUSER) < 0 || setns(mnt, CLONE_NEWNS) < 0) {
		perror("mount-lock-check: setns");
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		struct mount_attr rw = { .attr_clr = MOUNT_ATTR_RDONLY };
		int r1 = mount_setattr(AT_FDCWD, argv[i], 0, &rw, sizeof(rw));
		const char *s1 = res(r1);
		int r2 = umount2(argv[i], MNT_DETACH);

		printf("%s remount %s umount %s\n", argv[i], s1, res(r2));
	}
	return 0;
}
