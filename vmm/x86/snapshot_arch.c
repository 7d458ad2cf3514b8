/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/snapshot_arch.c: an x86 vCPU's and VM's KVM state, saved and restored. The order
 * of the restore is KVM's: the LAPIC before the MSRs (the TSC deadline is relative to it),
 * the events last (they may inject into the state set before them). */
#include "vmm/x86/snapshot_arch.h"

#include "vmm/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

int x86_snap_msr_list(int kvm_fd, struct x86_msr_list *l)
{
	struct {
		struct kvm_msr_list head;
		uint32_t index[X86_SNAP_MSRS_MAX];
	} req;

	memset(l, 0, sizeof(*l));
	req.head.nmsrs = X86_SNAP_MSRS_MAX;
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, &req) < 0) {
		int err = errno;
		vmm_log_setup("KVM_GET_MSR_INDEX_LIST failed", err,
			      err == E2BIG ? "this host's KVM has more MSRs than snapshots hold"
					   : NULL);
		return -err;
	}
	l->n = req.head.nmsrs;
	memcpy(l->index, req.index, l->n * sizeof(l->index[0]));
	return 0;
}

int x86_snap_has_xsave(int kvm_fd)
{
	return ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE) > 0 &&
	       ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XCRS) > 0;
}

/* Reads every listed MSR KVM will give: KVM_GET_MSRS stops at the first it cannot read, so
 * that one is skipped and the read goes on after it. */
static int save_msrs(int fd, const struct x86_msr_list *l, struct x86_vcpu_state *s)
{
	struct {
		struct kvm_msrs head;
		struct kvm_msr_entry e[X86_SNAP_MSRS_MAX];
	} req;
	uint32_t at = 0;

	s->nmsrs = 0;
	while (at < l->n) {
		memset(&req, 0, sizeof(req));
		req.head.nmsrs = l->n - at;
		for (uint32_t i = 0; i < req.head.nmsrs; i++)
			req.e[i].index = l->index[at + i];
		int r = ioctl(fd, KVM_GET_MSRS, &req);
		if (r < 0)
			return -errno;
		for (int i = 0; i < r; i++)
			s->msrs[s->nmsrs++] = req.e[i];
		at += (uint32_t)r + 1; /* past the one it could not read */
	}
	return 0;
}

#define MSR_TSC	     0x10
#define MSR_TSC_DEADLINE 0x6e0

void x86_msrs_for_restore(struct kvm_msr_entry *e, uint32_t n)
{
	const struct kvm_msr_entry *tsc = NULL;
	for (uint32_t i = 0; i < n; i++)
		if (e[i].index == MSR_TSC)
			tsc = &e[i];
	/* A deadline that fired while the vCPU was being stopped reads 0, and its interrupt may
	 * not have reached the LAPIC we saved: the guest would wait for it forever. Due now
	 * instead (a spurious tick is harmless; a lost one stalls every timer on that CPU). */
	for (uint32_t i = 0; i < n && tsc; i++)
		if (e[i].index == MSR_TSC_DEADLINE && e[i].data == 0)
			e[i].data = tsc->data;
	/* KVM arms the deadline against the guest's TSC as it is when the deadline is set:
	 * the TSC first, the deadline last. */
	for (uint32_t i = 0; i + 1 < n; i++)
		if (e[i].index == MSR_TSC_DEADLINE) {
			struct kvm_msr_entry d = e[i];
			memmove(&e[i], &e[i + 1], (n - i - 1) * sizeof(*e));
			e[n - 1] = d;
			break;
		}
}

#define TRY(call, name)                                                                            \
	do {                                                                                       \
		if ((call) < 0) {                                                                  \
			*what = name;                                                              \
			return -errno;                                                             \
		}                                                                                  \
	} while (0)

int x86_vcpu_save(int fd, const struct x86_msr_list *l, int xsave, struct x86_vcpu_state *s,
		  const char **what)
{
	memset(s, 0, sizeof(*s));
	s->cpuid.head.nent = X86_SNAP_CPUID_MAX;
	TRY(ioctl(fd, KVM_GET_CPUID2, &s->cpuid), "KVM_GET_CPUID2");
	TRY(ioctl(fd, KVM_GET_MP_STATE, &s->mp), "KVM_GET_MP_STATE");
	TRY(ioctl(fd, KVM_GET_REGS, &s->regs), "KVM_GET_REGS");
	TRY(ioctl(fd, KVM_GET_SREGS, &s->sregs), "KVM_GET_SREGS");
	TRY(ioctl(fd, KVM_GET_FPU, &s->fpu), "KVM_GET_FPU");
	if (xsave) {
		TRY(ioctl(fd, KVM_GET_XSAVE, &s->xsave), "KVM_GET_XSAVE");
		TRY(ioctl(fd, KVM_GET_XCRS, &s->xcrs), "KVM_GET_XCRS");
		s->flags |= X86_SNAP_XSAVE;
	}
	TRY(ioctl(fd, KVM_GET_DEBUGREGS, &s->dregs), "KVM_GET_DEBUGREGS");
	TRY(ioctl(fd, KVM_GET_LAPIC, &s->lapic), "KVM_GET_LAPIC");
	TRY(save_msrs(fd, l, s), "KVM_GET_MSRS");
	x86_msrs_for_restore(s->msrs, s->nmsrs);
	TRY(ioctl(fd, KVM_GET_VCPU_EVENTS, &s->events), "KVM_GET_VCPU_EVENTS");
	return 0;
}

int x86_vcpu_restore(int fd, const struct x86_vcpu_state *s, const char **what)
{
	struct {
		struct kvm_msrs head;
		struct kvm_msr_entry e[X86_SNAP_MSRS_MAX];
	} req;

	if (s->nmsrs > X86_SNAP_MSRS_MAX) {
		*what = "the snapshot's MSR count";
		return -EINVAL;
	}
	TRY(ioctl(fd, KVM_SET_MP_STATE, &s->mp), "KVM_SET_MP_STATE");
	TRY(ioctl(fd, KVM_SET_REGS, &s->regs), "KVM_SET_REGS");
	TRY(ioctl(fd, KVM_SET_SREGS, &s->sregs), "KVM_SET_SREGS");
	if (s->flags & X86_SNAP_XSAVE) {
		TRY(ioctl(fd, KVM_SET_XSAVE, &s->xsave), "KVM_SET_XSAVE");
		TRY(ioctl(fd, KVM_SET_XCRS, &s->xcrs), "KVM_SET_XCRS");
	} else {
		TRY(ioctl(fd, KVM_SET_FPU, &s->fpu), "KVM_SET_FPU");
	}
	TRY(ioctl(fd, KVM_SET_DEBUGREGS, &s->dregs), "KVM_SET_DEBUGREGS");
	TRY(ioctl(fd, KVM_SET_LAPIC, &s->lapic), "KVM_SET_LAPIC");
	memset(&req, 0, sizeof(req));
	req.head.nmsrs = s->nmsrs;
	memcpy(req.e, s->msrs, s->nmsrs * sizeof(req.e[0]));
	x86_msrs_for_restore(req.e, s->nmsrs); /* (files saved before it was done at save) */
	int r = ioctl(fd, KVM_SET_MSRS, &req);
	if (r < 0 || (uint32_t)r != s->nmsrs) {
		*what = "KVM_SET_MSRS (an MSR this host's KVM does not take)";
		return r < 0 ? -errno : -EINVAL;
	}
	TRY(ioctl(fd, KVM_SET_VCPU_EVENTS, &s->events), "KVM_SET_VCPU_EVENTS");
	return 0;
}

int x86_vm_save(int vm_fd, int irqchip, struct x86_vm_state *s, const char **what)
{
	memset(s, 0, sizeof(*s));
	s->irqchip = irqchip ? 1 : 0;
	if (irqchip) {
		s->pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
		s->pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
		s->ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
		TRY(ioctl(vm_fd, KVM_GET_IRQCHIP, &s->pic_master), "KVM_GET_IRQCHIP (PIC)");
		TRY(ioctl(vm_fd, KVM_GET_IRQCHIP, &s->pic_slave), "KVM_GET_IRQCHIP (PIC)");
		TRY(ioctl(vm_fd, KVM_GET_IRQCHIP, &s->ioapic), "KVM_GET_IRQCHIP (IOAPIC)");
		TRY(ioctl(vm_fd, KVM_GET_PIT2, &s->pit), "KVM_GET_PIT2");
	}
	TRY(ioctl(vm_fd, KVM_GET_CLOCK, &s->clock), "KVM_GET_CLOCK");
	return 0;
}

int x86_vm_restore(int vm_fd, const struct x86_vm_state *s, const char **what)
{
	if (s->irqchip) {
		TRY(ioctl(vm_fd, KVM_SET_PIT2, &s->pit), "KVM_SET_PIT2");
		TRY(ioctl(vm_fd, KVM_SET_IRQCHIP, &s->pic_master), "KVM_SET_IRQCHIP (PIC)");
		TRY(ioctl(vm_fd, KVM_SET_IRQCHIP, &s->pic_slave), "KVM_SET_IRQCHIP (PIC)");
		TRY(ioctl(vm_fd, KVM_SET_IRQCHIP, &s->ioapic), "KVM_SET_IRQCHIP (IOAPIC)");
	}
	/* Only the clock value: the flags KVM_GET_CLOCK reported describe that host. */
	struct kvm_clock_data c = { .clock = s->clock.clock };
	TRY(ioctl(vm_fd, KVM_SET_CLOCK, &c), "KVM_SET_CLOCK");
	return 0;
}

static const struct kvm_cpuid_entry2 *find(const struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	return NULL;
}

int x86_cpuid_missing(const struct kvm_cpuid2 *saved, const struct kvm_cpuid2 *host, char *buf,
		      unsigned long len)
{
	static const struct {
		uint32_t fn, idx;
	} leaves[] = { { 1, 0 }, { 7, 0 }, { 0xd, 1 }, { 0x80000001, 0 } };
	static const char *const regs[] = { "EAX", "EBX", "ECX", "EDX" };

	for (unsigned i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		const struct kvm_cpuid_entry2 *s = find(saved, leaves[i].fn, leaves[i].idx);
		const struct kvm_cpuid_entry2 *h = find(host, leaves[i].fn, leaves[i].idx);
		if (!s)
			continue;
		uint32_t sv[4] = { s->eax, s->ebx, s->ecx, s->edx };
		uint32_t hv[4] = { 0, 0, 0, 0 };
		if (h) {
			hv[0] = h->eax;
			hv[1] = h->ebx;
			hv[2] = h->ecx;
			hv[3] = h->edx;
		}
		/* Leaf 1 EBX is the APIC ID and counts, not features; leaf 0xd.1 is EAX only. */
		for (unsigned r = 0; r < 4; r++) {
			if ((leaves[i].fn == 1 && r != 2 && r != 3) ||
			    (leaves[i].fn == 0xd && r != 0) ||
			    (leaves[i].fn == 0x80000001 && r < 2) || (leaves[i].fn == 7 && r == 0))
				continue;
			uint32_t lack = sv[r] & ~hv[r];
			if (lack) {
				snprintf(buf, len, "CPUID 0x%x.%u %s 0x%08x", leaves[i].fn,
					 leaves[i].idx, regs[r], lack);
				return 1;
			}
		}
	}
	return 0;
}
