/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/gic.c: the in-kernel GIC (KVM's vGIC). KVM emulates it whole, distributor and
 * redistributors or CPU interface: a guest's access to any of its registers never leaves the
 * kernel, and what it must not write, the vGIC ignores as the architecture says. */
#include "vmm/arm64/arch.h"
#include "vmm/arm64/fdt.h"
#include "vmm/arm64/layout.h"
#include "vmm/log.h"
#include "vmm/vm.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int set_attr(int fd, uint32_t group, uint64_t attr, const void *value)
{
	struct kvm_device_attr a = { .group = group,
				     .attr = attr,
				     .addr = (uint64_t)(uintptr_t)value };
	return ioctl(fd, KVM_SET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

static int create(struct vm *vm, uint32_t type)
{
	struct kvm_create_device cd = { .type = type };
	return ioctl(vm->vm_fd, KVM_CREATE_DEVICE, &cd) < 0 ? -errno : (int)cd.fd;
}

int arm64_gic_create(struct machine_arch *a, struct vm *vm, unsigned ncpus)
{
	const uint64_t dist = ARM64_GIC_DIST_BASE, redist = ARM64_GIC_REDIST_BASE,
		       cpu = ARM64_GIC_CPU_BASE;
	char what[160];
	int fd = create(vm, KVM_DEV_TYPE_ARM_VGIC_V3), err;
	a->gic_version = 3;
	if (fd == -ENODEV) { /* no GICv3 emulation on this host: a GICv2 */
		fd = create(vm, KVM_DEV_TYPE_ARM_VGIC_V2);
		a->gic_version = 2;
	}
	if (fd < 0) {
		vmm_log_setup("KVM_CREATE_DEVICE (vGIC) failed", -fd,
			      "this host's KVM emulates no GIC");
		return fd;
	}
	a->gic_fd = fd;
	if (a->gic_version == 3 &&
	    (uint64_t)ncpus * ARM64_GIC_REDIST_SIZE > ARM64_GIC_REDIST_LIMIT - redist) {
		snprintf(what, sizeof(what), "%u vCPUs' GICv3 redistributors do not fit", ncpus);
		vmm_log_setup(what, EINVAL, "give fewer --cpus");
		return -EINVAL;
	}
	if (a->gic_version == 2 && ncpus > ARM64_GICV2_MAX_CPUS) {
		snprintf(what, sizeof(what), "this host's GICv2 takes at most %u vCPUs, not %u",
			 ARM64_GICV2_MAX_CPUS, ncpus);
		vmm_log_setup(what, EINVAL, "give fewer --cpus");
		return -EINVAL;
	}
	if (a->gic_version == 3)
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist);
	else
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V2_ADDR_TYPE_DIST, &dist);
	if (!err && a->gic_version == 3)
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST,
			       &redist);
	else if (!err)
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V2_ADDR_TYPE_CPU, &cpu);
	/* Initialised now, with every vCPU there: KVM_RUN fails on an uninitialised vGIC. */
	if (!err)
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL);
	if (err) {
		snprintf(what, sizeof(what), "cannot set up the in-kernel GICv%u", a->gic_version);
		vmm_log_setup(what, -err, "this host's KVM is not supported");
	}
	return err;
}
