/* vmm/x86/vm_arch.c: x86 VM-wide set-up KVM needs before the first vCPU is created. */
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
	return 0;
}
