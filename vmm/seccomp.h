/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/seccomp.h: bulkhead-vmm's system-call allow-lists, one per thread role (main, vCPU,
 * back-end watcher). All are compiled to BPF by the main thread during set-up; each thread
 * then installs its own for itself only (no TSYNC), with one system call and no allocation,
 * before the first guest instruction (vmm/main.c, lock_down_and_run). Anything off a list
 * kills the process (SIGSYS); opening files fails with EACCES and creating sockets with
 * EAFNOSUPPORT instead, so a stray open is an error, not a crash. */
#ifndef BULKHEAD_VMM_SECCOMP_H
#define BULKHEAD_VMM_SECCOMP_H

#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <linux/filter.h>
#include <stdbool.h>

/* One compiled allow-list. */
struct vmm_bpf {
	struct sock_filter *insns;
	unsigned short len;
};

struct vmm_jail {
	/* What the lists pin arguments to: the descriptors each role may use. */
	int vm_fd;
	bool irqchip;		    /* vCPUs raise GSIs (the UART's) with KVM_IRQ_LINE */
	unsigned nsocks;	    /* vhost-user back ends (0: no virtio devices) */
	int socks[VIRTIO_DEVS_MAX]; /* their sockets: vCPU threads talk only on these */
	unsigned nvcpus;
	int vcpu_fds[VM_MAX_VCPUS]; /* each vCPU's list names its own fd */
	/* --snapshot-fd (-1: none): the file, SIGUSR1's signalfd and guest RAM's memfd. */
	int snapshot_fd, snapshot_sig_fd, mem_fd;
	/* Built by vmm_seccomp_build. */
	struct vmm_bpf main, watcher, vcpu[VM_MAX_VCPUS];
};

/* Compiles every role's list from the inputs above (set-up tier: returns 0 or -errno). */
int vmm_seccomp_build(struct vmm_jail *j);
/* Installs a compiled list on the calling thread (no_new_privs first). 0 or -errno. */
int vmm_seccomp_install(const struct vmm_bpf *f);
void vmm_seccomp_free(struct vmm_jail *j);

/* --jail-selftest on a vCPU or watcher thread, after its list: opening /etc/passwd must fail
 * with EACCES there too ("selftest: WHO: open /etc/passwd: Permission denied"); a thread
 * without its filter would open it (or, in an empty root, fail with ENOENT). */
void vmm_seccomp_thread_probe(const char *who);

/* The ioctls that differ by architecture (vmm/x86/seccomp_arch.c, vmm/arm64/seccomp_arch.c):
 * a vCPU's own (its run loop and exit reports), and with --snapshot-fd a vCPU's and the VM's
 * state reads. */
struct vmm_ioctl_list {
	const unsigned long *req;
	size_t n;
};
extern const struct vmm_ioctl_list vmm_vcpu_ioctls, vmm_vcpu_snapshot_ioctls,
	vmm_vm_snapshot_ioctls;

#endif
