/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/machine_arch.c: the arm64 machine (vmm/machine_arch.h, vmm/arm64/layout.h) — the
 * 8250 UART on an MMIO page, virtio-mmio below 1 GiB, the in-kernel GIC, and the boot: the
 * Image at its text offset, the initrd, the device tree (vmm/arm64/fdt.c), vCPU 0 at the
 * Image's first instruction and the others powered off until Linux starts them by PSCI. */
#include "vmm/machine_arch.h"

#include "lib/vmm_exit.h"
#include "vmm/arm64/fdt.h"
#include "vmm/arm64/image.h"
#include "vmm/arm64/layout.h"
#include "vmm/loader.h"
#include "vmm/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(ARM64_CMDLINE_MAX == VMM_CMDLINE_MAX, "the command line's limit is arm64's");
_Static_assert((VMM_MEM_MIB_MAX << 20) <= ARM64_RAM_MAX, "RAM fits the IPA space");

/* The vCPUs, then the GIC: KVM sizes the GIC by the vCPUs, and takes no interrupt for a
 * virtio device (KVM_IRQFD) before the GIC is initialised; so this row comes before every
 * other device. vCPU 0's registers are set at boot (machine_arch_boot). */
static int dev_gic_init(struct machine *m)
{
	int rc;
	m->arch.gic_fd = -1;
	for (unsigned i = 0; i < m->o->cpus; i++) {
		struct vcpu *v = &m->vcpus[i];
		if ((rc = vcpu_create(v, &m->vm, i)))
			return rc;
		m->nvcpus++;
		/* Linux starts the others with PSCI CPU_ON, at an address of its choosing. */
		if ((rc = arm64_vcpu_init(v, i > 0)))
			return rc;
	}
	return arm64_gic_create(&m->arch, &m->vm, m->o->cpus);
}

static void dev_gic_fini(struct machine *m)
{
	if (m->arch.gic_fd >= 0)
		close(m->arch.gic_fd);
	m->arch.gic_fd = -1;
}

const struct vmm_device machine_arch_devices[] = {
	{ "GIC", VMM_MODE_ANY, dev_gic_init, dev_gic_fini, NULL, NULL, NULL },
};
const unsigned machine_arch_ndevices =
	sizeof(machine_arch_devices) / sizeof(machine_arch_devices[0]);

const struct machine_arch_virtio machine_arch_virtio = {
	.base = ARM64_VIRTIO_BASE,
	.max = ARM64_VIRTIO_MAX,
	.gsi_base = ARM64_VIRTIO_SPI,
	.on_cmdline = false, /* the device tree names them */
};

unsigned machine_arch_vm_flags(const struct vmm_opts *o)
{
	(void)o;
	return VM_IRQCHIP; /* the GIC, made at boot */
}

int machine_arch_uart_init(struct machine *m)
{
	return uart_init(&m->uart, &m->vm, &m->vm.mmio, ARM64_UART_BASE, ARM64_UART_SPI,
			 STDOUT_FILENO);
}

/* The Image and the initrd into RAM; where each went, and where the device tree goes, in *pl
 * (initrd 0: none), the initrd's length in *initrd_len. */
static int load_images(struct machine *m, struct arm64_place *pl, uint64_t *initrd_len)
{
	const struct vmm_opts *o = m->o;
	struct loader_image kimg = { 0 }, initrd = { 0 };
	struct arm64_image k;
	char err[256], what[512], name[32];
	int rc;

	if ((rc = loader_image_map(&o->kernel, "kernel", LOADER_IMAGE_MAX, &kimg)))
		return rc;
	bool with_initrd = o->initrd.path || o->initrd.fd >= 0;
	if (with_initrd && (rc = loader_image_map(&o->initrd, "initrd", LOADER_IMAGE_MAX, &initrd)))
		goto out;
	rc = kimg.len < ARM64_IMAGE_HDR_LEN
		     ? (snprintf(err, sizeof(err), "too short for an arm64 Image (%zu bytes)",
				 kimg.len),
			-ENOEXEC)
		     : arm64_image_parse(kimg.data, kimg.len, &k, err, sizeof(err));
	if (!rc)
		rc = arm64_place(ARM64_RAM_BASE, m->vm.mem.size, &k, initrd.len, pl, err,
				 sizeof(err));
	if (rc) {
		snprintf(what, sizeof(what), "kernel %s: %s",
			 loader_src_name(&o->kernel, name, sizeof(name)), err);
		vmm_log_setup(what, 0, "use an arm64 Image (not compressed) and enough --mem");
		goto out;
	}
	rc = gmem_write(&m->vm.mem, pl->kernel, kimg.data, kimg.len);
	if (!rc && initrd.len)
		rc = gmem_write(&m->vm.mem, pl->initrd, initrd.data, initrd.len);
	if (rc)
		vmm_log_setup("cannot copy the kernel or initrd into guest RAM", -rc, NULL);
	pl->initrd = initrd.len ? pl->initrd : 0;
	*initrd_len = initrd.len;
out:
	loader_image_unmap(&initrd);
	loader_image_unmap(&kimg);
	return rc;
}

/* The device tree, in the last 2 MiB of RAM: what the guest knows of the machine. */
static int write_fdt(struct machine *m, const struct arm64_place *pl, uint64_t initrd_len)
{
	const struct arm64_dt d = {
		.ram_base = ARM64_RAM_BASE,
		.ram_size = m->vm.mem.size,
		.ncpus = m->o->cpus,
		.gic_version = m->arch.gic_version,
		.initrd_start = pl->initrd,
		.initrd_size = initrd_len,
		.bootargs = m->cmdline[0] ? m->cmdline : (m->o->cmdline ? m->o->cmdline : ""),
		.nvirtio = m->virtio.n,
	};
	char err[256];
	void *buf = gmem_ptr(&m->vm.mem, pl->fdt, ARM64_FDT_MAX);
	int n = buf ? arm64_fdt_build(&d, buf, ARM64_FDT_MAX, err, sizeof(err)) : -EFAULT;
	if (n < 0) {
		if (!buf)
			snprintf(err, sizeof(err), "no RAM at 0x%llx for the device tree",
				 (unsigned long long)pl->fdt);
		vmm_log_setup(err, 0, "check --cpus, --mem and --cmdline");
		return n;
	}
	return 0;
}

int machine_arch_boot(struct machine *m)
{
	const struct vmm_opts *o = m->o;
	struct arm64_place pl;
	uint64_t initrd_len = 0;
	int rc;

	if (o->mode != VMM_MODE_LINUX) {
		vmm_log_setup("--test-guest: the test guests are x86-only in this build", ENOTSUP,
			      "boot an arm64 kernel with --kernel");
		return -ENOTSUP;
	}
	rc = load_images(m, &pl, &initrd_len);
	if (o->kernel.fd >= 0)
		close(o->kernel.fd);
	if (o->initrd.fd >= 0)
		close(o->initrd.fd);
	if (rc)
		return rc;
	if ((rc = write_fdt(m, &pl, initrd_len)))
		return rc;
	const struct vcpu_boot b = { .pc = pl.kernel, .x0 = pl.fdt };
	return arm64_vcpu_boot(&m->vcpus[0], &b);
}
