/* SPDX-License-Identifier: Apache-2.0 */
/* broker/harden.c: the broker's own lock-down (see harden.h). */
#include "broker/harden.h"

#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <seccomp.h>

/* Calls no broker thread makes, each a step an exploit would want: running a program, reaching
 * into another process, changing ids, mounts or namespaces, loading kernel code or filters,
 * keyrings, raw I/O ports, and a new io_uring or a change to one (its operations pass beside
 * seccomp): the connection loop's ring is made before the lock-down, limited to accept, poll
 * and cancel (loop_uring.c), and only io_uring_enter, which runs what it allows, is left. */
static const int denied[] = {
	SCMP_SYS(execve),
	SCMP_SYS(execveat),
	SCMP_SYS(fork),
	SCMP_SYS(vfork),
	SCMP_SYS(ptrace),
	SCMP_SYS(process_vm_readv),
	SCMP_SYS(process_vm_writev),
	SCMP_SYS(pidfd_getfd),
	SCMP_SYS(kcmp),
	SCMP_SYS(setuid),
	SCMP_SYS(setgid),
	SCMP_SYS(setreuid),
	SCMP_SYS(setregid),
	SCMP_SYS(setresuid),
	SCMP_SYS(setresgid),
	SCMP_SYS(setgroups),
	SCMP_SYS(setfsuid),
	SCMP_SYS(setfsgid),
	SCMP_SYS(capset),
	SCMP_SYS(mount),
	SCMP_SYS(umount2),
	SCMP_SYS(pivot_root),
	SCMP_SYS(chroot),
	SCMP_SYS(unshare),
	SCMP_SYS(setns),
	SCMP_SYS(open_tree),
	SCMP_SYS(move_mount),
	SCMP_SYS(fsopen),
	SCMP_SYS(fsmount),
	SCMP_SYS(fspick),
	SCMP_SYS(mount_setattr),
	SCMP_SYS(open_by_handle_at),
	SCMP_SYS(name_to_handle_at),
	SCMP_SYS(bpf),
	SCMP_SYS(perf_event_open),
	SCMP_SYS(userfaultfd),
	SCMP_SYS(init_module),
	SCMP_SYS(finit_module),
	SCMP_SYS(delete_module),
	SCMP_SYS(kexec_load),
	SCMP_SYS(kexec_file_load),
	SCMP_SYS(reboot),
	SCMP_SYS(swapon),
	SCMP_SYS(swapoff),
	SCMP_SYS(acct),
	SCMP_SYS(quotactl),
	SCMP_SYS(syslog),
	SCMP_SYS(personality),
	SCMP_SYS(keyctl),
	SCMP_SYS(add_key),
	SCMP_SYS(request_key),
	SCMP_SYS(io_uring_setup),
	SCMP_SYS(io_uring_register),
	SCMP_SYS(iopl),
	SCMP_SYS(ioperm),
	SCMP_SYS(fanotify_init),
};

int harden_lock_down(void)
{
	struct rlimit none = { 0, 0 };
	scmp_filter_ctx ctx;
	int rc = 0;

	/* No core file, no ptrace or /proc/PID/mem by the broker's own uid. */
	if (setrlimit(RLIMIT_CORE, &none) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* Every thread already running, too. */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (size_t i = 0; !rc && i < sizeof(denied) / sizeof(denied[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, denied[i], 0);
	/* Threads, but no new process: clone only with CLONE_THREAD; clone3 reports ENOSYS so
	 * glibc's pthread_create falls back to clone, whose flags a filter can see. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}
