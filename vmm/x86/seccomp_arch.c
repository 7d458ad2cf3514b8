/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/seccomp_arch.c: the x86 ioctls bulkhead-vmm's allow-lists add (vmm/seccomp.h). */
#include "vmm/seccomp.h"

#include <linux/kvm.h>

#define LIST(a)                                                                                    \
	{                                                                                          \
		(a), sizeof(a) / sizeof((a)[0])                                                    \
	}

/* A vCPU's own fd: the run loop, and the register reads and writes of the exit report and
 * of the int3 recovery on hosts that emulate ring 0 (vmm/x86/vcpu_arch.c). */
static const unsigned long vcpu[] = {
	KVM_RUN,       KVM_GET_REGS,	    KVM_SET_REGS,
	KVM_GET_SREGS, KVM_GET_VCPU_EVENTS, KVM_SET_VCPU_EVENTS,
};

/* With --snapshot-fd, a vCPU saves its own state when paused (vmm/x86/snapshot_arch.c) ... */
static const unsigned long vcpu_snapshot[] = {
	KVM_GET_CPUID2, KVM_GET_MP_STATE,  KVM_GET_FPU,	  KVM_GET_XSAVE,
	KVM_GET_XCRS,	KVM_GET_DEBUGREGS, KVM_GET_LAPIC, KVM_GET_MSRS,
};

/* ... and the main thread the VM's, from the VM's fd. */
static const unsigned long vm_snapshot[] = { KVM_GET_IRQCHIP, KVM_GET_PIT2, KVM_GET_CLOCK };

const struct vmm_ioctl_list vmm_vcpu_ioctls = LIST(vcpu);
const struct vmm_ioctl_list vmm_vcpu_snapshot_ioctls = LIST(vcpu_snapshot);
const struct vmm_ioctl_list vmm_vm_snapshot_ioctls = LIST(vm_snapshot);
