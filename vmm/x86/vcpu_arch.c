/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/vcpu_arch.c: x86 vCPU state — direct entry into 64-bit long mode, and the
 * "where is it" report used when a guest stops abnormally. */
#include "lib/vmm_exit.h"
#include "vmm/log.h"
#include "vmm/vcpu.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/gdt.h"
#include "vmm/x86/layout.h"
#include "vmm/x86/paging.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#define X86_CR0_PE	   0x1ULL
#define X86_CR0_MP	   0x2ULL
#define X86_CR0_ET	   0x10ULL
#define X86_CR0_NE	   0x20ULL
#define X86_CR0_WP	   0x10000ULL
#define X86_CR0_PG	   0x80000000ULL
#define X86_CR4_PAE	   0x20ULL
#define X86_CR4_OSFXSR	   0x200ULL
#define X86_CR4_OSXMMEXCPT 0x400ULL
#define X86_EFER_LME	   0x100ULL
#define X86_EFER_LMA	   0x400ULL
#define X86_TSS_SIZE	   104

static int boot_fail(const char *what, int err)
{
	vmm_log_setup(what, err, "the guest RAM is too small, or this KVM rejects 64-bit entry");
	return err > 0 ? -err : -EFAULT;
}

int vcpu_arch_boot64(struct vcpu *vcpu, const struct vcpu_boot *b)
{
	const struct gmem *gm = &vcpu->vm->mem;
	uint64_t gdt[X86_GDT_ENTRIES];
	static const uint8_t tss[X86_TSS_SIZE]; /* zero: no RSP0/ISTs, no I/O bitmap */
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu;
	int err;

	x86_gdt_build(gdt, X86_TSS_GPA);
	if (gmem_write(gm, X86_GDT_GPA, gdt, sizeof(gdt)) ||
	    gmem_write(gm, X86_TSS_GPA, tss, sizeof(tss)))
		return boot_fail("cannot write the boot GDT/TSS into guest RAM", EFAULT);
	err = x86_paging_identity(gm, X86_PML4_GPA, X86_IDMAP_GIB);
	if (err)
		return boot_fail("cannot write the boot page tables into guest RAM", -err);

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return boot_fail("KVM_GET_SREGS failed", errno);
	x86_gdt_segment(gdt, X86_SEL_KCODE, &sregs.cs);
	x86_gdt_segment(gdt, X86_SEL_KDATA, &sregs.ds);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	x86_gdt_segment(gdt, X86_SEL_TSS, &sregs.tr);
	sregs.gdt.base = X86_GDT_GPA;
	sregs.gdt.limit = sizeof(gdt) - 1;
	/* No IDT: a test guest that faults must triple-fault (a documented exit status),
	 * not wander through a zeroed table. */
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_PG;
	sregs.cr3 = X86_PML4_GPA;
	sregs.cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT;
	sregs.efer = X86_EFER_LME | X86_EFER_LMA;
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0)
		return boot_fail("KVM_SET_SREGS (64-bit segments, CR0/CR3/CR4/EFER) failed", errno);

	/* x87/SSE in their architectural reset state, as after FNINIT/LDMXCSR. */
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if (ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0)
		return boot_fail("KVM_SET_FPU failed", errno);

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2; /* bit 1 is reserved-one; IF=0 */
	regs.rip = b->entry;
	regs.rsp = b->rsp;
	regs.rdi = b->rdi;
	regs.rsi = b->rsi;
	regs.rdx = b->rdx;
	regs.rcx = b->rcx;
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		return boot_fail("KVM_SET_REGS failed", errno);
	return 0;
}

int vcpu_arch_make_runnable(struct vcpu *vcpu)
{
	struct kvm_mp_state mp = { .mp_state = KVM_MP_STATE_RUNNABLE };
	if (ioctl(vcpu->fd, KVM_SET_MP_STATE, &mp) < 0) {
		int err = errno;
		vmm_log_setup("KVM_SET_MP_STATE (runnable) failed", err, NULL);
		return -err;
	}
	return 0;
}

unsigned vcpu_arch_insn_bytes(struct vcpu *vcpu, uint8_t *bytes, unsigned max)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	unsigned n = 0;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return 0;
	/* Byte by byte, so a page or RAM boundary ends the dump instead of failing it. */
	for (; n < max; n++) {
		uint64_t la = sregs.cs.base + regs.rip + n, pa = la;
		const uint8_t *p;
		if ((sregs.cr0 & X86_CR0_PG) &&
		    x86_paging_translate(&vcpu->vm->mem, sregs.cr3, la, &pa))
			break;
		if (!(p = gmem_ptr(&vcpu->vm->mem, pa, 1)))
			break;
		bytes[n] = *p;
	}
	return n;
}

/*
 * Hosts that emulate guest ring 0 (kvm_pvm) fail to emulate int3 (Linux's boot-time int3
 * self-test, and text patching). Doing what the CPU would have done is safe: the byte at
 * RIP is 0xcc, so step past it and deliver #BP as a trap (saved RIP after the int3) to the
 * guest's own handler. Only in kernel mode: user mode never exits this way.
 */
int vcpu_arch_recover(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_vcpu_events ev;
	uint8_t byte = 0;

	if (insn_len >= 1)
		byte = insn[0];
	else if (vcpu_arch_insn_bytes(vcpu, &byte, 1) != 1)
		return -1;
	if (byte != 0xcc)
		return -1;
	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -1;
	if ((sregs.cs.selector & 3) != 0)
		return -1;
	regs.rip += 1;
	memset(&ev, 0, sizeof(ev));
	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return -1;
	if (ev.exception.injected || ev.exception.pending)
		return -1; /* already delivering something: not a plain int3 */
	ev.exception.injected = 1;
	ev.exception.nr = 3; /* #BP */
	ev.exception.has_error_code = 0;
	ev.flags = 0;
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		return -1;
	if (vcpu->int3_recovered++ == 0)
		vmm_log("vCPU %u: int3 at RIP 0x%llx not emulated by this host; injected #BP "
			"(reported once)",
			vcpu->id, (unsigned long long)(regs.rip - 1));
	return 0;
}

int vcpu_arch_system_event(struct vcpu *vcpu, char *what, size_t len)
{
	/* Not how our x86 guests end (they reset through the i8042): worth a report. */
	snprintf(what, len, "guest system event %u (shutdown/reset)",
		 vcpu->run->system_event.type);
	return VMM_EXIT_SHUTDOWN;
}

bool vcpu_arch_shutdown_was_reset(struct vcpu *vcpu)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return false;
	/* Our guests start in long mode and never see real mode: a shut-down vCPU found at the
	 * reset vector was reset by the host (svm shutdown_interception), not stopped there. */
	return !(sregs.cr0 & X86_CR0_PE) && sregs.cs.selector == 0xf000 && regs.rip == 0xfff0;
}

void vcpu_arch_where(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len, char *buf,
		     size_t len)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint8_t bytes[15];
	unsigned n = 0;
	size_t at;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0) {
		snprintf(buf, len, "RIP unknown (KVM_GET_REGS: %s)", strerror(errno));
		return;
	}
	if (insn_len) {
		n = insn_len < sizeof(bytes) ? insn_len : sizeof(bytes);
		memcpy(bytes, insn, n);
	} else {
		n = vcpu_arch_insn_bytes(vcpu, bytes, sizeof(bytes));
	}
	int w = snprintf(buf, len, "RIP 0x%llx (CS 0x%x, CPL %u, vCPU %u)",
			 (unsigned long long)regs.rip, sregs.cs.selector, sregs.cs.selector & 3u,
			 vcpu->id);
	at = w < 0 ? 0 : (size_t)w;
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, n ? ", bytes" : ", bytes unreadable");
	for (unsigned i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, " %02x", bytes[i]);
}
