/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/seccomp.c: the allow-lists (see seccomp.h), built with libseccomp for the native
 * architecture only; every other architecture's calls (x32 included) kill the process.
 * Derived from the code each role runs after lock-down, checked with strace -f on test
 * guests and on a Linux boot with virtio-fs and virtio-vsock (tests/e2e/test_vmm_jail.sh). */
#include "vmm/seccomp.h"

#include "lib/san.h"
#include "vmm/vcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Every thread: device and gate locks (futex), stderr lines, console bytes and eventfd
 * signals (write), timestamps (clock_gettime, normally the vDSO), glibc's signal masking
 * around pthread_kill and thread exit (rt_sigprocmask), and a wait resumed after
 * SIGSTOP/SIGCONT (restart_syscall). */
static const int every_thread[] = {
	SCMP_SYS(futex),	  SCMP_SYS(write),	     SCMP_SYS(clock_gettime),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(restart_syscall),
};

/* poll() is the ppoll system call on arm64, which has no poll: both are allowed wherever
 * poll is (the same wait, on the same descriptors).
 *
 * The main thread after start-up: wait for the stop eventfd or the timeout (poll), kick
 * vCPUs out of KVM_RUN (pthread_kill: getpid + tgkill, pinned below) and pause between
 * kicks (clock_nanosleep); then tear down: descriptors, kvm_run pages and guest RAM
 * (close, munmap), freed heap (brk), and exit_group. */
static const int main_thread[] = {
	SCMP_SYS(poll),	      SCMP_SYS(ppoll),	SCMP_SYS(clock_nanosleep), SCMP_SYS(getpid),
	SCMP_SYS(close),      SCMP_SYS(munmap), SCMP_SYS(brk),		   SCMP_SYS(exit_group),
};

/* vCPU and watcher threads end with exit, after glibc returned their stack to the kernel
 * (madvise MADV_DONTNEED only). */
static int add_thread_exit(scmp_filter_ctx ctx)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 1,
				      SCMP_A2(SCMP_CMP_EQ, MADV_DONTNEED));
	return rc;
}

static int add_list(scmp_filter_ctx ctx, const int *nrs, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0);
	return rc;
}

/* ioctl(fd, req) for exactly these fd and request numbers. */
static int add_ioctls(scmp_filter_ctx ctx, int fd, const unsigned long *reqs, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 2,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fd),
				      SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)reqs[i]));
	return rc;
}

/* A new filter: kill the process by default and for foreign architectures; the common
 * calls; nothing can be opened (EACCES) and no socket made (EAFNOSUPPORT), so a stray
 * attempt is a clean error and the self-test can see the filter. */
static scmp_filter_ctx new_filter(int *rc)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!*rc)
		*rc = add_list(ctx, every_thread, NELEM(every_thread));
	if (!*rc)
		*rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
	if (!*rc)
		*rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
	if (!*rc)
		*rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 0);
#ifdef BULKHEAD_SANITIZED
	if (!*rc)
		*rc = san_seccomp_allow(ctx); /* a sanitizer build's run time (lib/san.h) */
#endif
	return ctx;
}

/* Compiles ctx into out (the raw BPF, through a memfd: libseccomp 2.5 exports only to a
 * descriptor) and releases ctx. Returns rc, or the first error here. */
static int compile(scmp_filter_ctx ctx, int rc, struct vmm_bpf *out)
{
	int fd = rc ? -1 : memfd_create("bulkhead-vmm-bpf", MFD_CLOEXEC);
	struct stat st;

	if (!rc && fd < 0)
		rc = -errno;
	if (!rc)
		rc = seccomp_export_bpf(ctx, fd);
	if (!rc && fstat(fd, &st) < 0)
		rc = -errno;
	if (!rc && (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
		    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS))
		rc = -E2BIG;
	if (!rc && !(out->insns = malloc((size_t)st.st_size)))
		rc = -ENOMEM;
	if (!rc && pread(fd, out->insns, (size_t)st.st_size, 0) != st.st_size)
		rc = -EIO;
	if (!rc)
		out->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

/* A vCPU's or the watcher's filter: the common calls and a thread's exit. */
static scmp_filter_ctx new_thread_filter(int *rc)
{
	scmp_filter_ctx ctx = new_filter(rc);

	if (ctx && !*rc)
		*rc = add_thread_exit(ctx);
	return ctx;
}

/* The main thread writes the file (vmm/snapshot.c): pinned to its descriptor, as are the
 * RAM's extents (lseek SEEK_DATA/SEEK_HOLE on the memfd) and the SIGUSR1 signalfd's read. */
static int add_snapshot_main(scmp_filter_ctx ctx, const struct vmm_jail *j)
{
	static const int on_file[] = { SCMP_SYS(pwrite64), SCMP_SYS(ftruncate), SCMP_SYS(fsync),
				       SCMP_SYS(fstat) };
	int rc = add_ioctls(ctx, j->vm_fd, vmm_vm_snapshot_ioctls.req, vmm_vm_snapshot_ioctls.n);
	for (size_t i = 0; !rc && i < NELEM(on_file); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, on_file[i], 1,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->snapshot_fd));
	/* glibc's fstat is newfstatat(fd, "", st, AT_EMPTY_PATH). */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 2,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->snapshot_fd),
				      SCMP_A3(SCMP_CMP_EQ, AT_EMPTY_PATH));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(lseek), 1,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->mem_fd));
	/* Saved, the RAM is given back (gmem_release): a hole punched in the memfd, no more. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fallocate), 2,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->mem_fd),
				      SCMP_A1(SCMP_CMP_EQ, GMEM_RELEASE_MODE));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(read), 1,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->snapshot_sig_fd));
	/* The back ends stop their rings (GET_VRING_BASE), and start them again if the save
	 * fails: vhost-user messages on their sockets, surplus descriptors closed. */
	static const int vhost_user[] = { SCMP_SYS(sendmsg), SCMP_SYS(recvmsg),
					  SCMP_SYS(recvfrom) };
	for (unsigned s = 0; !rc && s < j->nsocks; s++)
		for (size_t i = 0; !rc && i < NELEM(vhost_user); i++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, vhost_user[i], 1,
					      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->socks[s]));
	return rc;
}

static int build_main(const struct vmm_jail *j, struct vmm_bpf *out)
{
	/* Taking virtio devices down deassigns their ioeventfds and irqfd. */
	static const unsigned long vm_ioctls[] = { KVM_IOEVENTFD, KVM_IRQFD };
	int rc;
	scmp_filter_ctx ctx = new_filter(&rc);

	if (!ctx)
		return rc;
	if (!rc)
		rc = add_list(ctx, main_thread, NELEM(main_thread));
	/* Kicks: the kick signal, to our own threads only. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2,
				      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()),
				      SCMP_A2(SCMP_CMP_EQ, VCPU_KICK_SIGNAL));
	if (!rc && j->nsocks)
		rc = add_ioctls(ctx, j->vm_fd, vm_ioctls, NELEM(vm_ioctls));
	if (!rc && j->snapshot_fd >= 0)
		rc = add_snapshot_main(ctx, j);
	return compile(ctx, rc, out);
}

static int build_vcpu(const struct vmm_jail *j, int vcpu_fd, struct vmm_bpf *out)
{
	/* Guest-driven vhost-user requests (DRIVER_OK, queue ready, reset) on the back ends'
	 * sockets: messages with descriptors out, replies in (recvmsg, then recv), and any
	 * surplus descriptor a reply carried is closed. */
	static const int vhost_user[] = { SCMP_SYS(sendmsg), SCMP_SYS(recvmsg),
					  SCMP_SYS(recvfrom) };
	static const unsigned long irq_line[] = { KVM_IRQ_LINE };
	int rc;
	scmp_filter_ctx ctx = new_thread_filter(&rc);

	if (!ctx)
		return rc;
	/* The kick signal's handler returns. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigreturn), 0);
	/* Waits that give way to the VM's stop (vmm/stopwait.c, lib/vhost_user.c): the console's
	 * reader or a back end's socket, beside the stop eventfd. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(poll), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ppoll), 0);
	if (!rc)
		rc = add_ioctls(ctx, vcpu_fd, vmm_vcpu_ioctls.req, vmm_vcpu_ioctls.n);
	if (!rc && j->snapshot_fd >= 0)
		rc = add_ioctls(ctx, vcpu_fd, vmm_vcpu_snapshot_ioctls.req, vmm_vcpu_snapshot_ioctls.n);
	/* The UART's interrupt line (the in-kernel irqchip's). */
	if (!rc && j->irqchip)
		rc = add_ioctls(ctx, j->vm_fd, irq_line, NELEM(irq_line));
	for (unsigned s = 0; !rc && s < j->nsocks; s++)
		for (size_t i = 0; !rc && i < NELEM(vhost_user); i++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, vhost_user[i], 1,
					      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)j->socks[s]));
	if (!rc && j->nsocks)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(close), 0);
	return compile(ctx, rc, out);
}

static int build_watcher(struct vmm_bpf *out)
{
	int rc;
	scmp_filter_ctx ctx = new_thread_filter(&rc);

	if (!ctx)
		return rc;
	/* Waits for a back end's hang-up or the wake eventfd. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(poll), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ppoll), 0);
	return compile(ctx, rc, out);
}

int vmm_seccomp_build(struct vmm_jail *j)
{
	int rc = build_main(j, &j->main);
	if (!rc && j->nsocks)
		rc = build_watcher(&j->watcher);
	for (unsigned i = 0; !rc && i < j->nvcpus; i++)
		rc = build_vcpu(j, j->vcpu_fds[i], &j->vcpu[i]);
	return rc;
}

int vmm_seccomp_install(const struct vmm_bpf *f)
{
	struct sock_fprog prog = { .len = f->len, .filter = f->insns };

	if (!f->insns)
		return -EINVAL;
	/* Required to install a filter without CAP_SYS_ADMIN; harmless with it. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

void vmm_seccomp_free(struct vmm_jail *j)
{
	free(j->main.insns);
	free(j->watcher.insns);
	for (unsigned i = 0; i < VM_MAX_VCPUS; i++)
		free(j->vcpu[i].insns);
	memset(&j->main, 0, sizeof(j->main));
	memset(&j->watcher, 0, sizeof(j->watcher));
	memset(j->vcpu, 0, sizeof(j->vcpu));
}

void vmm_seccomp_thread_probe(const char *who)
{
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	fprintf(stderr, "selftest: %s: open /etc/passwd: %s\n", who,
		fd < 0 ? strerror(errno) : "opened");
	if (fd >= 0)
		close(fd);
}
