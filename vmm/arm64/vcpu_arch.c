/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/vcpu_arch.c: an arm64 vCPU — its PSCI init, its boot registers through
 * KVM_SET_ONE_REG, and the run loop's arch hooks (vmm/vcpu.h). */
#include "lib/vmm_exit.h"
#include "vmm/arm64/arch.h"
#include "vmm/log.h"
#include "vmm/vcpu.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

/* PSTATE at entry: EL1 on SP_EL1, with debug, SError, IRQ and FIQ masked (booting.rst). */
#define ARM64_PSTATE_BOOT (PSR_MODE_EL1h | PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT)

/* The id of a 64-bit core register, by its offset in struct kvm_regs (in 32-bit words). */
static uint64_t core_reg(size_t offset)
{
	return KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | (offset / sizeof(uint32_t));
}
#define CORE_REG(field) core_reg(offsetof(struct kvm_regs, field))

static int set_reg(struct vcpu *vcpu, uint64_t id, uint64_t value)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)&value };
	return ioctl(vcpu->fd, KVM_SET_ONE_REG, &r) < 0 ? -errno : 0;
}

static int get_reg(struct vcpu *vcpu, uint64_t id, uint64_t *value)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)value };
	return ioctl(vcpu->fd, KVM_GET_ONE_REG, &r) < 0 ? -errno : 0;
}

int arm64_vcpu_init(struct vcpu *vcpu, bool off)
{
	struct kvm_vcpu_init init;
	memset(&init, 0, sizeof(init));
	if (ioctl(vcpu->vm->vm_fd, KVM_ARM_PREFERRED_TARGET, &init) < 0) {
		int err = errno;
		vmm_log_setup("KVM_ARM_PREFERRED_TARGET failed", err,
			      "this host's KVM is not supported");
		return -err;
	}
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (off)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF;
	if (ioctl(vcpu->fd, KVM_ARM_VCPU_INIT, &init) < 0) {
		int err = errno;
		vmm_log_setup("KVM_ARM_VCPU_INIT failed", err, "this host's KVM is not supported");
		return -err;
	}
	return 0;
}

int arm64_vcpu_boot(struct vcpu *vcpu, const struct vcpu_boot *b)
{
	int err = set_reg(vcpu, CORE_REG(regs.pstate), ARM64_PSTATE_BOOT);
	if (!err)
		err = set_reg(vcpu, CORE_REG(regs.pc), b->pc);
	if (!err)
		err = set_reg(vcpu, CORE_REG(regs.regs[0]), b->x0);
	for (unsigned i = 1; !err && i < 4; i++)
		err = set_reg(vcpu, CORE_REG(regs.regs[i]), 0);
	if (err)
		vmm_log_setup("cannot set the boot registers (KVM_SET_ONE_REG)", -err, NULL);
	return err;
}

unsigned vcpu_arch_insn_bytes(struct vcpu *vcpu, uint8_t *bytes, unsigned max)
{
	uint64_t pc;
	if (max < 4 || get_reg(vcpu, CORE_REG(regs.pc), &pc) < 0)
		return 0;
	/* Only where the MMU is off or maps 1:1 (early boot) is PC a guest-physical address;
	 * elsewhere this finds nothing, or RAM that is not the instruction, so it says less. */
	return gmem_read(&vcpu->vm->mem, pc, bytes, 4) == 0 ? 4 : 0;
}

int vcpu_arch_recover(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len)
{
	(void)vcpu;
	(void)insn;
	(void)insn_len;
	return -1; /* nothing on arm64 is stepped over */
}

void vcpu_arch_where(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len, char *buf,
		     size_t len)
{
	uint64_t pc, pstate;
	(void)insn;
	(void)insn_len;
	if (get_reg(vcpu, CORE_REG(regs.pc), &pc) < 0 ||
	    get_reg(vcpu, CORE_REG(regs.pstate), &pstate) < 0) {
		snprintf(buf, len, "PC unknown (KVM_GET_ONE_REG: %s)", strerror(errno));
		return;
	}
	snprintf(buf, len, "PC 0x%llx (PSTATE 0x%llx, EL%u, vCPU %u)", (unsigned long long)pc,
		 (unsigned long long)pstate, (unsigned)(pstate >> 2) & 3u, vcpu->id);
}

bool vcpu_arch_shutdown_was_reset(struct vcpu *vcpu)
{
	(void)vcpu;
	return false;
}

int vcpu_arch_system_event(struct vcpu *vcpu, char *what, size_t len)
{
	switch (vcpu->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN: /* PSCI SYSTEM_OFF: poweroff */
	case KVM_SYSTEM_EVENT_RESET:	/* PSCI SYSTEM_RESET: reboot, as x86 sessions end */
		return VMM_EXIT_OK;
	default:
		snprintf(what, len, "guest system event %u (a crash?)",
			 vcpu->run->system_event.type);
		return VMM_EXIT_SHUTDOWN;
	}
}
