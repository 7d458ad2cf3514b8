/* vmm/x86/cpuid.c: the CPUID a vCPU reports — what KVM supports, with this vCPU's APIC ID
 * and the hypervisor bit. Without it KVM treats the guest as a CPU with no features and
 * refuses, e.g., EFER writes that keep LME set (long mode needs CPUID.LM). */
#include "vmm/log.h"
#include "vmm/vcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#define CPUID_MAX_ENTRIES_LIMIT 1024 /* far above any real CPU's leaf count */
#define CPUID_1_ECX_HYPERVISOR	(1u << 31)

static struct kvm_cpuid2 *cpuid_supported(int kvm_fd, int *err)
{
	for (unsigned n = 64; n <= CPUID_MAX_ENTRIES_LIMIT; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		if (!c) {
			*err = ENOMEM;
			return NULL;
		}
		c->nent = n;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*err = 0;
			return c;
		}
		*err = errno;
		free(c);
		if (*err != E2BIG)
			return NULL;
	}
	return NULL;
}

int vcpu_arch_cpuid(struct vcpu *vcpu)
{
	int err = 0;
	struct kvm_cpuid2 *c = cpuid_supported(vcpu->vm->kvm_fd, &err);

	if (!c) {
		vmm_log_setup("KVM_GET_SUPPORTED_CPUID failed", err,
			      "this host's KVM is not supported");
		return -err;
	}
	for (unsigned i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		switch (e->function) {
		case 1:
			/* Initial APIC ID in EBX[31:24]. */
			e->ebx = (e->ebx & 0x00ffffffu) | (vcpu->id << 24);
			e->ecx |= CPUID_1_ECX_HYPERVISOR;
			break;
		case 0xb:
		case 0x1f:
			/* x2APIC ID of this logical CPU. */
			e->edx = vcpu->id;
			break;
		}
	}
	if (ioctl(vcpu->fd, KVM_SET_CPUID2, c) < 0) {
		err = errno;
		vmm_log_setup("KVM_SET_CPUID2 failed", err, "this host's KVM is not supported");
	}
	free(c);
	return -err;
}
