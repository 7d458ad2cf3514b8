/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/snapshot_arch.h: what an x86 vCPU and VM are in a snapshot — the kernel's KVM
 * structures, saved and set back in the order KVM needs (vmm/snapshot_vm.c calls these). */
#ifndef BULKHEAD_VMM_X86_SNAPSHOT_ARCH_H
#define BULKHEAD_VMM_X86_SNAPSHOT_ARCH_H

#include <linux/kvm.h>
#include <stdint.h>

#define X86_SNAP_MSRS_MAX  256 /* KVM_GET_MSR_INDEX_LIST gives ~50-150 */
#define X86_SNAP_CPUID_MAX 256 /* leaves and sub-leaves a vCPU was given */

#define X86_SNAP_XSAVE 0x1 /* xsave (and xcrs) hold the FPU state; else fpu does */

/* One vCPU (section SNAP_SEC_VCPU), the CPUID it was given first. */
struct x86_vcpu_state {
	struct {
		struct kvm_cpuid2 head;
		struct kvm_cpuid_entry2 e[X86_SNAP_CPUID_MAX];
	} cpuid;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	struct kvm_xsave xsave;
	struct kvm_xcrs xcrs;
	struct kvm_debugregs dregs;
	struct kvm_lapic_state lapic;
	struct kvm_mp_state mp;
	struct kvm_vcpu_events events;
	uint32_t flags; /* X86_SNAP_* */
	uint32_t nmsrs;
	struct kvm_msr_entry msrs[X86_SNAP_MSRS_MAX];
};

/* The VM (section SNAP_SEC_VM): the PICs and IOAPIC, the PIT, kvmclock. */
struct x86_vm_state {
	struct kvm_irqchip pic_master, pic_slave, ioapic;
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clock;
	uint32_t irqchip; /* 1: the VM has the in-kernel irqchip and PIT */
	uint32_t pad;
};

/* The MSRs to save, read once at set-up (KVM_GET_MSR_INDEX_LIST needs /dev/kvm). */
struct x86_msr_list {
	uint32_t n;
	uint32_t index[X86_SNAP_MSRS_MAX];
};

/* Set-up: the MSR list. 0 or -errno (one line said). */
int x86_snap_msr_list(int kvm_fd, struct x86_msr_list *l);
/* Whether KVM_GET_XSAVE is there (KVM_CAP_XSAVE and KVM_CAP_XCRS). */
int x86_snap_has_xsave(int kvm_fd);

/* On the vCPU's own thread, after KVM_RUN completed any pending I/O: every register.
 * 0 or -errno, with the failing call named in what. */
int x86_vcpu_save(int vcpu_fd, const struct x86_msr_list *l, int xsave, struct x86_vcpu_state *s,
		  const char **what);
/* Before the vCPU first runs, after vcpu_arch_cpuid_restore. 0 or -errno, what names the
 * call. */
int x86_vcpu_restore(int vcpu_fd, const struct x86_vcpu_state *s, const char **what);
/* The saved MSRs made safe to set back: a TSC deadline that reads 0 (it fired while the vCPU
 * was stopped, its interrupt possibly not in the saved LAPIC) made due at once, and the
 * deadline moved after the TSC, which KVM arms it against. Both at save and at restore. */
void x86_msrs_for_restore(struct kvm_msr_entry *e, uint32_t n);

int x86_vm_save(int vm_fd, int irqchip, struct x86_vm_state *s, const char **what);
int x86_vm_restore(int vm_fd, const struct x86_vm_state *s, const char **what);

/* CPUID: the features (leaves 1, 7.0, 0xd.1, 0x80000001) set in `saved` that `host` lacks,
 * said in buf ("CPUID 0x7.0 EBX 0x20"). 0 when none, 1 when some. */
int x86_cpuid_missing(const struct kvm_cpuid2 *saved, const struct kvm_cpuid2 *host, char *buf,
		      unsigned long len);

#endif
