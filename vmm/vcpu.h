/* vmm/vcpu.h: one vCPU — its fd, its shared kvm_run page, and the run loop that turns KVM
 * exits into bus accesses or a final exit status (vmm/exit_status.h). */
#ifndef BULKHEAD_VMM_VCPU_H
#define BULKHEAD_VMM_VCPU_H

#include "vmm/vm.h"

#include <linux/kvm.h>
#include <stdint.h>

struct vcpu {
	struct vm *vm;
	unsigned id;
	int fd;
	struct kvm_run *run;   /* mmap of the vCPU fd, vm->vcpu_mmap_size bytes */
	uint64_t first_run_ns; /* CLOCK_MONOTONIC just before the first KVM_RUN */
};

/* Set-up tier: prints what failed and returns -errno; on failure nothing stays open. */
int vcpu_create(struct vcpu *vcpu, struct vm *vm, unsigned id);
void vcpu_destroy(struct vcpu *vcpu);

/* Runs until the guest stops or timeout_ms (0: none) passes; returns the exit status
 * (guest's code, VMM_EXIT_*), with one stderr line for anything but a guest's own exit. */
int vcpu_run(struct vcpu *vcpu, uint64_t timeout_ms);

/* Arch hooks (vmm/x86/). */
/* Gives the vCPU its CPUID table (vmm/x86/cpuid.c); before any other register set-up. */
int vcpu_arch_cpuid(struct vcpu *vcpu);
/* Writes the boot GDT, TSS and identity map into guest RAM and puts the vCPU in 64-bit
 * mode at `entry` with RSP = stack, RDI = rdi. Set-up tier (prints on failure). */
int vcpu_arch_boot64(struct vcpu *vcpu, uint64_t entry, uint64_t stack, uint64_t rdi);
/* Describes where the vCPU stands ("RIP 0x... (CS 0x8), bytes 0f 0b ...") for one-line
 * exit reports. `insn`/`insn_len` are bytes KVM already supplied (0 to read them). */
void vcpu_arch_where(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len, char *buf,
		     size_t len);

#endif
