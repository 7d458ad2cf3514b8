/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/arch.h: what struct machine holds for x86 (vmm/machine.h includes the arch's): the
 * i8042 a Linux guest resets through, the snapshot's CPU state, and the boot registers. */
#ifndef BULKHEAD_VMM_X86_ARCH_H
#define BULKHEAD_VMM_X86_ARCH_H

#include "vmm/x86/boot.h"
#include "vmm/x86/i8042.h"
#include "vmm/x86/snapshot_arch.h"

#include <linux/kvm.h>
#include <stdint.h>

struct vcpu;

struct machine_arch {
	struct i8042 i8042;
};

/* --snapshot-fd's CPU state (vmm/snapshot_vm.c). */
struct snapshot_arch {
	int xsave; /* KVM has KVM_GET_XSAVE */
	struct x86_msr_list msrs;
	struct x86_vcpu_state *vcpu_state; /* one per vCPU, filled by each on its thread */
};

/* How an x86 vCPU starts (vmm/x86/vcpu_arch.c, vmm/x86/cpuid.c). */
/* Gives the vCPU its CPUID table; before any other register set-up. */
int vcpu_arch_cpuid(struct vcpu *vcpu);
/* The same with the table a snapshot saved (NULL: this host's), refused (-ENOTSUP, one line)
 * when it has features this host lacks. */
int vcpu_arch_cpuid_restore(struct vcpu *vcpu, const struct kvm_cpuid2 *saved);
/* The registers a 64-bit entry sets; all others start at zero. */
struct vcpu_boot {
	uint64_t entry, rsp, rdi, rsi, rdx, rcx;
};
/* Writes the boot GDT, TSS and identity map into guest RAM and puts the vCPU in 64-bit
 * mode at b->entry with the registers of b. Set-up tier (prints on failure). */
int vcpu_arch_boot64(struct vcpu *vcpu, const struct vcpu_boot *b);
/* Makes an application processor runnable now (test guests) instead of waiting for the
 * INIT/SIPI that Linux sends. */
int vcpu_arch_make_runnable(struct vcpu *vcpu);

#endif
