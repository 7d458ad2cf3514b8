/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/arch.h: what struct machine holds for arm64 (vmm/machine.h includes the arch's):
 * the in-kernel GIC, and the boot registers of vCPU 0. */
#ifndef BULKHEAD_VMM_ARM64_ARCH_H
#define BULKHEAD_VMM_ARM64_ARCH_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct vm;

struct machine_arch {
	int gic_fd;	      /* KVM_CREATE_DEVICE's, or -1 */
	unsigned gic_version; /* 3, or 2 on a host without GICv3 emulation */
};

/* Snapshots are not built for arm64 yet (vmm/arm64/snapshot_vm.c refuses them). */
struct snapshot_arch {
	int unused;
};

/* How vCPU 0 enters the kernel (Documentation/arch/arm64/booting.rst): PC at the Image's
 * first byte, x0 the device tree's address, x1..x3 zero, EL1h with every exception masked. */
struct vcpu_boot {
	uint64_t pc, x0;
};

/* KVM_ARM_VCPU_INIT on the host's preferred target with PSCI 0.2; `off`: powered off until
 * the guest's PSCI CPU_ON (Linux's secondaries). Set-up tier (vmm/arm64/vcpu_arch.c). */
int arm64_vcpu_init(struct vcpu *vcpu, bool off);
/* Sets the boot registers of b. Set-up tier. */
int arm64_vcpu_boot(struct vcpu *vcpu, const struct vcpu_boot *b);

/* The in-kernel GIC, after every vCPU exists and before any runs: a GICv3 (distributor and a
 * redistributor per vCPU), else a GICv2 (8 vCPUs at most), at vmm/arm64/layout.h's addresses.
 * Fills a->gic_fd and a->gic_version. Set-up tier (vmm/arm64/gic.c). */
int arm64_gic_create(struct machine_arch *a, struct vm *vm, unsigned ncpus);

#endif
