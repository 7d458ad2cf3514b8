/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/vm_arch.c: arm64 VM-wide hooks (vmm/vm.h). The GIC is made once the vCPUs exist
 * (vmm/arm64/gic.c): KVM sizes its redistributors by them. */
#include "vmm/arm64/layout.h"
#include "vmm/log.h"
#include "vmm/vm.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

int vm_arch_init(struct vm *vm)
{
	/* PSCI 0.2 is how Linux starts secondary vCPUs and powers the machine off. */
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PSCI_0_2) <= 0) {
		vmm_log_setup("KVM has no PSCI 0.2 (KVM_CAP_ARM_PSCI_0_2)", ENOTSUP,
			      "this host's KVM is too old for bulkhead-vmm");
		return -ENOTSUP;
	}
	return 0;
}

uint64_t vm_arch_ram_gpa(void)
{
	return ARM64_RAM_BASE;
}

uint32_t vm_arch_irq_line(unsigned gsi)
{
	/* KVM_IRQ_LINE on arm64: type in bits 24..27, the INTID in 0..15 (an SPI's is 32 + n). */
	return (KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT) | (ARM64_SPI_BASE + gsi);
}
