/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/seccomp_arch.c: the arm64 ioctls bulkhead-vmm's allow-lists add (vmm/seccomp.h).
 * No snapshot reads: arm64 has no snapshots yet (vmm/arm64/snapshot_vm.c). */
#include "vmm/seccomp.h"

#include <linux/kvm.h>

/* A vCPU's own fd: the run loop, and the one-register reads of an exit report (PC, PSTATE). */
static const unsigned long vcpu[] = { KVM_RUN, KVM_GET_ONE_REG };

const struct vmm_ioctl_list vmm_vcpu_ioctls = { vcpu, sizeof(vcpu) / sizeof(vcpu[0]) };
const struct vmm_ioctl_list vmm_vcpu_snapshot_ioctls = { NULL, 0 };
const struct vmm_ioctl_list vmm_vm_snapshot_ioctls = { NULL, 0 };
