/* SPDX-License-Identifier: Apache-2.0 */
/* bench/jail_step.c: what the jail step (jail/jail.c) costs a session, measured alone, since a
 * difference of a millisecond or two drowns in the noise of a whole session's start.
 *
 * A session starts two jailed processes: bulkhead-vsock in an empty root holding one writable
 * directory, and the VM process in a root of read-only mounts (QEMU's: /usr, the loader cache,
 * kernel and initramfs, the loader's links). Each round does the same with programs that exit
 * at once (bulkhead-vsock --help; /usr/bin/true), through jail_spawn with one leased uid, and
 * then starts the same two programs with plain fork+exec: the reference. Both must exit 0.
 *
 * Usage: jail-step BIN-DIR LIB-DIR [ROUNDS]   Prints medians and the difference. Root only. */
#include "jail/jail.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 1000

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int reap(pid_t pid)
{
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static pid_t plain(char *const argv[], int out)
{
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out, 1);
		dup2(out, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	static double jailed[MAX_ROUNDS], direct[MAX_ROUNDS];
	char vsock[PATH_MAX], kernel[PATH_MAX], initrd[PATH_MAX], dir[] = "/tmp/jail-step.XXXXXX";
	int rounds = argc > 3 ? atoi(argv[3]) : 200;
	int out = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (argc < 3 || rounds < 1 || rounds > MAX_ROUNDS || geteuid() != 0) {
		fprintf(stderr, "usage (as root): jail-step BIN-DIR LIB-DIR [ROUNDS 1..%d]\n",
			MAX_ROUNDS);
		return 2;
	}
	snprintf(vsock, sizeof(vsock), "%s/bulkhead-vsock", argv[1]);
	snprintf(kernel, sizeof(kernel), "%s/vmlinux", argv[2]);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio", argv[2]);
	if (!mkdtemp(dir)) {
		perror("jail-step: mkdtemp");
		return 1;
	}
	char *vsock_argv[] = { vsock, "--help", NULL }, *vm_argv[] = { "/usr/bin/true", NULL };
	static const char *const links[] = { "/lib", "usr/lib", "/lib64", "usr/lib64",
					     "/bin", "usr/bin", "/sbin",  "usr/sbin" };
	const struct jail_mount dir_mount = { .src = dir, .flags = JAIL_MOUNT_RW };
	const struct jail_mount vm_mounts[] = {
		{ .src = "/usr" },
		{ .src = "/etc/ld.so.cache", .flags = JAIL_MOUNT_OPTIONAL },
		{ .src = kernel, .dst = "/boot/kernel" },
		{ .src = initrd, .dst = "/boot/initrd" },
	};
	int rc = 0;

	for (int i = 0; i < rounds && !rc; i++) {
		struct jail_ids ids = JAIL_IDS_INIT;
		char err[256];
		if (jail_ids_acquire(&ids, NULL, err, sizeof(err)) < 0 ||
		    jail_ids_give_dir(&ids, dir) < 0) {
			fprintf(stderr, "jail-step: %s\n", err);
			return 1;
		}
		const struct jail_spec back_end = {
			.ids = &ids,
			.empty_root = true,
			.mounts = &dir_mount,
			.nmounts = 1,
			.extra_gid = (gid_t)-1,
			.out_fd = out,
			.diag_fd = out,
		};
		const struct jail_spec vm = {
			.ids = &ids,
			.empty_root = true,
			.mounts = vm_mounts,
			.nmounts = 4,
			.links = (const char *const *)links,
			.nlinks = 4,
			.extra_gid = (gid_t)-1,
			.file_writes = true,
			.out_fd = out,
			.diag_fd = out,
		};
		double t0 = now_ms();
		pid_t a = jail_spawn(vsock_argv, &back_end), b = jail_spawn(vm_argv, &vm);
		rc = reap(a) | reap(b);
		double t1 = now_ms();
		a = plain(vsock_argv, out);
		b = plain(vm_argv, out);
		rc |= reap(a) | reap(b);
		jailed[i] = t1 - t0;
		direct[i] = now_ms() - t1;
		jail_ids_release(&ids);
	}
	rmdir(dir);
	if (rc) {
		fprintf(stderr, "jail-step: a jailed or plain start did not exit 0\n");
		return 1;
	}
	qsort(jailed, (size_t)rounds, sizeof(double), cmp);
	qsort(direct, (size_t)rounds, sizeof(double), cmp);
	printf("%-44s median %7.3f ms\n", "two jailed starts (vsock-like, VM-like)",
	       jailed[rounds / 2]);
	printf("%-44s median %7.3f ms\n", "the same two with fork+exec (reference)",
	       direct[rounds / 2]);
	printf("the jail step adds %.3f ms per session (ratio %.2f)\n",
	       jailed[rounds / 2] - direct[rounds / 2], jailed[rounds / 2] / direct[rounds / 2]);
	return 0;
}
