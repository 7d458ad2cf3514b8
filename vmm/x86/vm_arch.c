/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/vm_arch.c: x86 VM-wide set-up KVM needs before the first vCPU is created: its
 * private pages, and (Linux machines) the in-kernel PIC/IOAPIC/LAPICs and the PIT. */
#include "vmm/log.h"
#include "vmm/vm.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

int vm_arch_init(struct vm *vm)
{
	int err;

	/* Intel VMX needs three pages for a real-mode TSS and one for the EPT identity map
	 * (used while a vCPU runs unpaged). Place both explicitly, outside RAM, rather than
	 * let KVM pick a spot that might later collide with our MMIO devices. */
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, (unsigned long)X86_KVM_TSS_GPA) < 0) {
		err = errno;
		vmm_log_setup("KVM_SET_TSS_ADDR failed", err, "this host's KVM is not supported");
		return -err;
	}
	uint64_t idmap = X86_KVM_IDENTITY_MAP_GPA;
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0) {
		err = errno;
		vmm_log_setup("KVM_SET_IDENTITY_MAP_ADDR failed", err,
			      "this host's KVM is not supported");
		return -err;
	}
	if (!(vm->flags & VM_IRQCHIP))
		return 0;
	/* In-kernel interrupt controllers: device back ends then signal GSIs with KVM_IRQFD
	 * (virtio, GSI 5 and up) and the UART with KVM_IRQ_LINE, and HLT stays in the kernel. */
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		err = errno;
		vmm_log_setup("KVM_CREATE_IRQCHIP failed", err, "this host's KVM is not supported");
		return -err;
	}
	/* The PIT drives IRQ 0 for Linux's early timer calibration; the dummy speaker port
	 * (0x61) is answered in the kernel too, so no exit per calibration poll. */
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		err = errno;
		vmm_log_setup("KVM_CREATE_PIT2 failed", err, "this host's KVM is not supported");
		return -err;
	}
	return 0;
}

uint64_t vm_arch_ram_gpa(void)
{
	return 0;
}

uint32_t vm_arch_irq_line(unsigned gsi)
{
	return gsi;
}
